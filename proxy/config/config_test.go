package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestBackendAccount(t *testing.T) {
	for _, tc := range []struct {
		name     string
		json     string
		wantName string
		wantPass string
	}{
		{"own account", `{"users": [{"name": "app", "password": "pw"}]}`, "app", "pw"},
		{"shared account", `{"users": [{"name": "app", "password": "pw"}], "backend_user": "svc", "backend_password": "s"}`,
			"svc", "s"},
		{"user's own mapping wins", `{"users": [{"name": "app", "password": "pw", "backend_user": "ro", "backend_password": "r"}],
			"backend_user": "svc", "backend_password": "s"}`, "ro", "r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.json)
			name, pass := c.Backend(c.Users[0])
			if name != tc.wantName || pass != tc.wantPass {
				t.Errorf("Backend(%q) = %q, %q; want %q, %q", c.Users[0].Name, name, pass, tc.wantName, tc.wantPass)
			}
		})
	}
}

// TestPasswordEnv: passwords named by password_env and
// backend_password_env come from the environment.
func TestPasswordEnv(t *testing.T) {
	t.Setenv("CERTUS_TEST_APP_PW", "app-pw")
	t.Setenv("CERTUS_TEST_SVC_PW", "svc-pw")
	c := load(t, `{"users": [{"name": "app", "password_env": "CERTUS_TEST_APP_PW"}], "backend_user": "svc", "backend_password_env": "CERTUS_TEST_SVC_PW"}`)
	if name, pass := c.Backend(c.Users[0]); c.Users[0].Password != "app-pw" || name != "svc" || pass != "svc-pw" {
		t.Errorf("password %q, backend %q %q", c.Users[0].Password, name, pass)
	}
}

func TestInvalidUsers(t *testing.T) {
	for _, js := range []string{
		`{}`, // no default account
		`{"users": []}`,
		`{"users": [{"name": "app"}, {"name": "app", "password": "x"}]}`,
		`{"users": [{"password": "x"}]}`,
		`{"users": [{"name": "app", "password_env": "CERTUS_TEST_UNSET_VARIABLE"}]}`,
		`{"users": [{"name": "app", "password": "x", "password_env": "HOME"}]}`,
	} {
		if _, err := Load(write(t, js)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Load(%s) = %v, want ErrInvalid", js, err)
		}
	}
}

// TestClientLimits: the client limits default to MySQL's and can be set;
// values MySQL would refuse are refused.
func TestClientLimits(t *testing.T) {
	c := load(t, `{"users": [{"name": "app", "password": "pw"}]}`)
	if c.MaxConnections != 151 || c.MaxAllowedPacket != 64<<20 || time.Duration(c.ConnectTimeout) != 10*time.Second ||
		time.Duration(c.WaitTimeout) != 8*time.Hour {
		t.Errorf("defaults: max_connections %d, max_allowed_packet %d, connect_timeout %v, wait_timeout %v",
			c.MaxConnections, c.MaxAllowedPacket, time.Duration(c.ConnectTimeout), time.Duration(c.WaitTimeout))
	}
	c = load(t, `{"users": [{"name": "app", "password": "pw"}], "max_connections": 5, "max_allowed_packet": 4096, "connect_timeout": "2s", "wait_timeout": "1m"}`)
	if c.MaxConnections != 5 || c.MaxAllowedPacket != 4096 || time.Duration(c.ConnectTimeout) != 2*time.Second ||
		time.Duration(c.WaitTimeout) != time.Minute {
		t.Errorf("set: %+v", c)
	}
	for _, js := range []string{`{"max_connections": -1}`, `{"max_allowed_packet": 100}`, `{"max_allowed_packet": 2147483648}`,
		`{"wait_timeout": "-1s"}`} {
		js = `{"users": [{"name": "app", "password": "pw"}], ` + js[1:]
		if _, err := Load(write(t, js)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Load(%s) = %v, want ErrInvalid", js, err)
		}
	}
}

// write saves js as a configuration file and returns its path.
func write(t *testing.T, js string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proxy.json")
	if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// load loads the configuration js.
func load(t *testing.T, js string) *Config {
	t.Helper()
	c, err := Load(write(t, js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
