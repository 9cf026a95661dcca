package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestBackendAccount(t *testing.T) {
	for _, tc := range []struct {
		name       string
		json       string
		user       string
		wantName   string
		wantPass   string
		wantExists bool
	}{
		{"default root", `{}`, "root", "root", "", true},
		{"own account", `{"users": [{"name": "app", "password": "pw"}]}`, "app", "app", "pw", true},
		{"unknown user", `{"users": [{"name": "app", "password": "pw"}]}`, "root", "", "", false},
		{"shared account", `{"users": [{"name": "app", "password": "pw"}], "backend_user": "svc", "backend_password": "s"}`,
			"app", "svc", "s", true},
		{"user's own mapping wins", `{"users": [{"name": "app", "password": "pw", "backend_user": "ro", "backend_password": "r"}],
			"backend_user": "svc", "backend_password": "s"}`, "app", "ro", "r", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.json)
			name, pass, ok := c.Backend(tc.user)
			if name != tc.wantName || pass != tc.wantPass || ok != tc.wantExists {
				t.Errorf("Backend(%q) = %q, %q, %v; want %q, %q, %v", tc.user, name, pass, ok, tc.wantName, tc.wantPass, tc.wantExists)
			}
		})
	}
}

func TestInvalidUsers(t *testing.T) {
	for _, js := range []string{
		`{"users": [{"name": "app"}, {"name": "app", "password": "x"}]}`,
		`{"users": [{"password": "x"}]}`,
	} {
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
