package systest

import (
	"crypto/tls"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/certusdb/certus/internal/pki"
	"github.com/certusdb/certus/internal/testcluster"
)

// TestProxyNoUsers: the proxy has no default account, so without users
// (no configuration file, or one that lists none) it refuses to start and
// says why.
func TestProxyNoUsers(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "proxy.json")
	if err := os.WriteFile(empty, []byte(`{"rules": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"proxy", "--listen", testcluster.FreePort(t), "--cluster", "127.0.0.1:9"},
		{"proxy", "--listen", testcluster.FreePort(t), "--cluster", "127.0.0.1:9", "--config", empty},
	} {
		out, err := testcluster.Command(t, args...)
		if err == nil || !strings.Contains(out, "no users") || !strings.Contains(out, "no default account") {
			t.Fatalf("certus %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// proxyTLSDB is a pool of user's sessions through the proxy p over TLS
// with cfg (nil: without TLS).
func proxyTLSDB(t *testing.T, p *proxyProc, user, pw string, cfg *tls.Config) *sql.DB {
	t.Helper()
	params := ""
	if cfg != nil {
		name := fmt.Sprintf("proxy-%p", cfg)
		if err := mysql.RegisterTLSConfig(name, cfg); err != nil {
			t.Fatal(err)
		}
		params = "tls=" + name
	}
	return p.DBAs(user+":"+pw, "", params)
}

// proxyLogin logs user in through p (TLS with cfg, none when nil) and
// returns CURRENT_USER() on the node, or the login's error code.
func proxyLogin(t *testing.T, p *proxyProc, user, pw string, cfg *tls.Config) (string, uint16) {
	t.Helper()
	var who string
	err := proxyTLSDB(t, p, user, pw, cfg).QueryRow("SELECT CURRENT_USER()").Scan(&who)
	code, _ := mysqlErr(err)
	if err != nil && code == 0 {
		t.Fatalf("%s through the proxy: %v", user, err)
	}
	return who, code
}

// adminCall sends method path to the proxy's admin interface with token
// ("": none) and returns the status code.
func (p *proxyProc) adminCall(t *testing.T, method, path, token string) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+p.Admin+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestProxyTLS: clients log in to the proxy over TLS (its self-signed
// certificate, verified) and without; a caching_sha2_password account
// logs in with RSA without TLS the first time and by the fast path after;
// require_secure_transport refuses clients without TLS (3159) after a
// reload; the proxy's node connections use TLS (--backend-tls, verified
// with the node's CA), as the node's Ssl_cipher on them shows; a new
// certificate is served after POST /reload and after SIGHUP; the admin
// interface wants its token; passwords come from the environment.
func TestProxyTLS(t *testing.T) {
	const token = "proxy-admin-0b1d2c"
	c := testcluster.StartCluster(t, 1)
	n := c.Nodes[0]
	root := n.DB("")
	for _, q := range []string{
		"CREATE USER app IDENTIFIED BY 'app-pw'",
		"CREATE USER sha IDENTIFIED WITH caching_sha2_password BY 'sha-pw'",
		"GRANT SELECT ON *.* TO app, sha",
	} {
		mustExec(t, root, q)
	}
	t.Setenv("CERTUS_TEST_APP_PW", "app-pw") // the proxy inherits both
	t.Setenv("CERTUS_ADMIN_TOKEN", token)
	cfg := `{"users": [{"name": "app", "password_env": "CERTUS_TEST_APP_PW"},
		{"name": "sha", "password": "sha-pw", "plugin": "caching_sha2_password"}]`
	p := launchProxy(t, c, cfg+"}", "--backend-tls", "--backend-ssl-ca", filepath.Join(n.DataDir, "tls", "ca.pem"))
	if !p.waitReady(1) {
		t.Fatalf("the proxy did not start:\n%s", tail(p.log(), 30))
	}
	tlsDir := filepath.Join(filepath.Dir(p.Config), "tls")
	trust := func(t *testing.T, caFile, name string) *tls.Config {
		t.Helper()
		pool, err := pki.Pool(caFile)
		if err != nil {
			t.Fatal(err)
		}
		return &tls.Config{RootCAs: pool, ServerName: name}
	}
	verified := trust(t, filepath.Join(tlsDir, "ca.pem"), "127.0.0.1")

	t.Run("Logins", func(t *testing.T) {
		for _, tc := range []struct {
			user, pw string
			cfg      *tls.Config
			code     uint16
		}{
			{"app", "app-pw", verified, 0},
			{"app", "app-pw", nil, 0},
			{"app", "wrong", verified, 1045},
			{"sha", "sha-pw", nil, 0},      // full authentication, the password RSA-encrypted
			{"sha", "sha-pw", nil, 0},      // the fast path: sha is in the cache now
			{"sha", "wrong", nil, 1045},    // the fast path with a wrong scramble
			{"sha", "sha-pw", verified, 0}, // over TLS
			{"sha", "wrong", verified, 1045},
			{"ghost", "x", verified, 1045},
		} {
			who, code := proxyLogin(t, p, tc.user, tc.pw, tc.cfg)
			if code != tc.code || code == 0 && !strings.HasPrefix(who, tc.user+"@") {
				t.Errorf("%s/%s (TLS %v): %q, error %d; want error %d", tc.user, tc.pw, tc.cfg != nil, who, code, tc.code)
			}
		}
	})

	t.Run("BackendTLS", func(t *testing.T) {
		// SHOW STATUS runs on the node, on the proxy's connection to it
		v := qMap(t, conn(t, proxyTLSDB(t, p, "app", "app-pw", verified)), "SHOW STATUS LIKE 'Ssl_%'")
		if v["ssl_cipher"] == "" || !strings.HasPrefix(v["ssl_version"], "TLSv1.") {
			t.Fatalf("the node's status on the proxy's connection: Ssl_cipher %q, Ssl_version %q", v["ssl_cipher"], v["ssl_version"])
		}
	})

	t.Run("Clients", func(t *testing.T) {
		if _, err := exec.LookPath("mysql"); err != nil {
			t.Skip("no mysql client")
		}
		host, port, _ := strings.Cut(p.Addr, ":")
		for _, args := range [][]string{
			{"-uapp", "-papp-pw", "--ssl-verify-server-cert", "--ssl-ca", filepath.Join(tlsDir, "ca.pem")},
			{"-usha", "-psha-pw", "--ssl"},
		} {
			out, err := exec.Command("mysql", append([]string{"-h", host, "-P", port, "--protocol=tcp", "-N", "-e", "\\s"}, args...)...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Cipher in use") {
				t.Errorf("mysql %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})

	t.Run("Admin", func(t *testing.T) {
		for _, tc := range []struct {
			method, path, token string
			want                int
		}{
			{"GET", "/status", "", 200},
			{"GET", "/backends", "", 200},
			{"POST", "/reload", "", 401},
			{"POST", "/reload", "wrong", 403},
			{"GET", "/rules", "", 401},
			{"GET", "/stats/digest", "", 401},
			{"GET", "/debug/pprof/", "", 401},
			{"GET", "/rules", token, 200},
		} {
			if code := p.adminCall(t, tc.method, tc.path, tc.token); code != tc.want {
				t.Errorf("%s %s (token %q): %d, want %d", tc.method, tc.path, tc.token, code, tc.want)
			}
		}
	})

	t.Run("RequireSecureTransport", func(t *testing.T) {
		if err := os.WriteFile(p.Config, []byte(cfg+`, "require_secure_transport": true}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if code := p.adminCall(t, "POST", "/reload", token); code != 200 {
			t.Fatalf("reload: %d", code)
		}
		if _, code := proxyLogin(t, p, "app", "app-pw", nil); code != 3159 {
			t.Fatalf("a login without TLS: error %d, want 3159", code)
		}
		if _, code := proxyLogin(t, p, "app", "app-pw", verified); code != 0 {
			t.Fatalf("a login over TLS: error %d", code)
		}
	})

	t.Run("Reload", func(t *testing.T) {
		dir := t.TempDir()
		other, err := pki.NewCA(dir, "another CA")
		if err != nil {
			t.Fatal(err)
		}
		cert, key := filepath.Join(tlsDir, "server-cert.pem"), filepath.Join(tlsDir, "server-key.pem")
		if err := other.Issue(cert, key, "certus-proxy", nil); err != nil {
			t.Fatal(err)
		}
		if _, code := proxyLogin(t, p, "app", "app-pw", verified); code != 0 {
			t.Fatal("the certificate changed before the reload")
		}
		if code := p.adminCall(t, "POST", "/reload", token); code != 200 {
			t.Fatalf("reload: %d", code)
		}
		newCA := filepath.Join(dir, "ca.pem")
		if _, code := proxyLogin(t, p, "app", "app-pw", trust(t, newCA, "127.0.0.1")); code != 0 {
			t.Fatal("the new certificate is not served after POST /reload")
		}
		if err := proxyTLSDB(t, p, "app", "app-pw", verified).Ping(); err == nil {
			t.Fatal("a client trusting only the old CA logged in after the reload")
		}
		// SIGHUP reads the files again too
		if err := other.Issue(cert, key, "certus-proxy", []string{"127.0.0.1", "proxy.example"}); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		named := proxyTLSDB(t, p, "app", "app-pw", trust(t, newCA, "proxy.example"))
		for deadline := time.Now().Add(30 * time.Second); named.Ping() != nil; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the certificate of SIGHUP's reload is not served")
			}
		}
	})
}
