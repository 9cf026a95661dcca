package systest

import (
	"crypto/tls"
	"database/sql"
	"fmt"
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

// tlsDB is a pool of user's sessions on n over TLS with cfg (nil: without
// TLS).
func tlsDB(t *testing.T, n *testcluster.Node, user, pw string, cfg *tls.Config) *sql.DB {
	t.Helper()
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/?timeout=5s&readTimeout=30s", user, pw, n.SQLAddr)
	if cfg != nil {
		name := fmt.Sprintf("certus-%p", cfg)
		if err := mysql.RegisterTLSConfig(name, cfg); err != nil {
			t.Fatal(err)
		}
		dsn += "&tls=" + name
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// verifying trusts the node's auto-generated CA and checks the server's
// name.
func verifying(t *testing.T, n *testcluster.Node) *tls.Config {
	t.Helper()
	pool, err := pki.Pool(filepath.Join(n.DataDir, "tls", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

// TestClientTLS: clients log in over TLS with the node's own certificate,
// caching_sha2_password works over TLS and without it (RSA), REQUIRE SSL
// and require_secure_transport refuse clients without TLS, REQUIRE X509,
// ISSUER, SUBJECT and CIPHER (from CREATE or ALTER USER) check the
// client's certificate, and a new
// certificate is taken by ALTER INSTANCE RELOAD TLS and by SIGHUP.
func TestClientTLS(t *testing.T) {
	n, root := startNode(t, "tls1", "")
	for _, q := range []string{
		"CREATE DATABASE app",
		"CREATE USER sha IDENTIFIED WITH caching_sha2_password BY 'sha-pw'",
		"CREATE USER nat IDENTIFIED BY 'nat-pw'",
		"CREATE USER req IDENTIFIED BY 'req-pw' REQUIRE SSL",
		"GRANT SELECT ON app.* TO sha, nat, req",
	} {
		mustExec(t, root, q)
	}
	if v := qStr(t, root, "SELECT @@have_ssl"); v != "YES" {
		t.Fatalf("have_ssl = %s", v)
	}
	// who answers the session's user over cfg, or the login's error code
	login := func(user, pw string, cfg *tls.Config) (string, uint16) {
		t.Helper()
		var who string
		err := tlsDB(t, n, user, pw, cfg).QueryRow("SELECT CURRENT_USER()").Scan(&who)
		code, _ := mysqlErr(err)
		if err != nil && code == 0 {
			t.Fatalf("%s: %v", user, err)
		}
		return who, code
	}

	t.Run("Logins", func(t *testing.T) {
		for _, tc := range []struct {
			user, pw string
			cfg      *tls.Config
			code     uint16
		}{
			{"sha", "sha-pw", verifying(t, n), 0},
			{"sha", "sha-pw", nil, 0}, // the password goes RSA-encrypted
			{"sha", "wrong", verifying(t, n), 1045},
			{"sha", "wrong", nil, 1045},
			{"nat", "nat-pw", verifying(t, n), 0},
			{"nat", "nat-pw", nil, 0},
			{"req", "req-pw", verifying(t, n), 0},
			{"req", "req-pw", nil, 1045}, // REQUIRE SSL
		} {
			who, code := login(tc.user, tc.pw, tc.cfg)
			if code != tc.code || code == 0 && !strings.HasPrefix(who, tc.user+"@") {
				t.Errorf("%s (TLS %v): %q, error %d; want error %d", tc.user, tc.cfg != nil, who, code, tc.code)
			}
		}
		c := conn(t, tlsDB(t, n, "sha", "sha-pw", verifying(t, n)))
		if v := qMap(t, c, "SHOW STATUS LIKE 'Ssl_%'"); v["ssl_cipher"] == "" || !strings.HasPrefix(v["ssl_version"], "TLSv1.") {
			t.Fatalf("status over TLS: Ssl_cipher %q, Ssl_version %q", v["ssl_cipher"], v["ssl_version"])
		}
	})

	t.Run("RequireSecureTransport", func(t *testing.T) {
		c := conn(t, root)
		xexec(t, c, "SET GLOBAL require_secure_transport = ON")
		defer xexec(t, c, "SET GLOBAL require_secure_transport = OFF")
		if _, code := login("nat", "nat-pw", nil); code != 3159 {
			t.Fatalf("a login without TLS: error %d, want 3159", code)
		}
		if _, code := login("nat", "nat-pw", verifying(t, n)); code != 0 {
			t.Fatalf("a login over TLS: error %d", code)
		}
	})

	t.Run("Clients", func(t *testing.T) {
		ca := filepath.Join(n.DataDir, "tls", "ca.pem")
		if _, err := exec.LookPath("mysql"); err == nil {
			host, port, _ := strings.Cut(n.SQLAddr, ":")
			out, err := exec.Command("mysql", "-h", host, "-P", port, "-usha", "-psha-pw", "--ssl-verify-server-cert", "--ssl-ca", ca,
				"-N", "-e", "SHOW STATUS LIKE 'Ssl_version'").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "TLSv1.") {
				t.Errorf("mysql CLI, caching_sha2_password over verified TLS: %v\n%s", err, out)
			}
		}
		if _, err := os.Stat("/usr/lib/python3/dist-packages/pymysql"); err == nil {
			script := fmt.Sprintf(`import pymysql, ssl
for ctx in (None, ssl.create_default_context(cafile=%q)):
    c = pymysql.connect(host="127.0.0.1", port=%s, user="sha", password="sha-pw", ssl=ctx)
    cur = c.cursor(); cur.execute("SELECT CURRENT_USER()"); print(cur.fetchone()[0])
`, ca, strings.Split(n.SQLAddr, ":")[1])
			out, err := exec.Command("/usr/bin/python3", "-c", script).CombinedOutput()
			if err != nil || strings.Count(string(out), "sha@%") != 2 {
				t.Errorf("PyMySQL, caching_sha2_password with and without TLS: %v\n%s", err, out)
			}
		}
	})

	t.Run("Certificates", func(t *testing.T) {
		// client certificates from the node's CA (CN app and CN other),
		// and one from a CA the node does not trust
		dir := t.TempDir()
		ca, err := pki.LoadCA(filepath.Join(n.DataDir, "tls"))
		if err != nil {
			t.Fatal(err)
		}
		stranger, err := pki.NewCA(filepath.Join(dir, "stranger"), "stranger CA")
		if err != nil {
			t.Fatal(err)
		}
		certs := map[string]tls.Certificate{}
		for name, issuer := range map[string]*pki.CA{"app": ca, "other": ca, "stranger": stranger} {
			cf, kf := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
			if err := issuer.Issue(cf, kf, name, nil); err != nil {
				t.Fatal(err)
			}
			if certs[name], err = tls.LoadX509KeyPair(cf, kf); err != nil {
				t.Fatal(err)
			}
		}
		with := func(cert string, cipher uint16) *tls.Config {
			cfg := verifying(t, n)
			if cert != "" {
				cfg.Certificates = []tls.Certificate{certs[cert]}
			}
			if cipher != 0 {
				cfg.MaxVersion, cfg.CipherSuites = tls.VersionTLS12, []uint16{cipher}
			}
			return cfg
		}
		issuer := "/CN=Certus auto-generated CA for tls1"
		for _, q := range []string{
			"CREATE USER x5 IDENTIFIED BY 'pw' REQUIRE X509",
			"CREATE USER subj IDENTIFIED BY 'pw' REQUIRE SUBJECT '/CN=app'",
			"CREATE USER pair IDENTIFIED BY 'pw' REQUIRE ISSUER '" + issuer + "' SUBJECT '/CN=app'", // AND is optional
			"CREATE USER ciph IDENTIFIED BY 'pw' REQUIRE CIPHER 'ECDHE-ECDSA-AES128-GCM-SHA256'",
		} {
			mustExec(t, root, q)
		}
		aes128, aes256 := tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
		for _, tc := range []struct {
			user string
			cfg  *tls.Config
			code uint16
		}{
			{"x5", with("app", 0), 0},
			{"x5", with("other", 0), 0},
			{"x5", with("", 0), 1045}, // TLS, no certificate
			{"x5", nil, 1045},
			{"subj", with("app", 0), 0},
			{"subj", with("other", 0), 1045},
			{"subj", with("", 0), 1045},
			{"pair", with("app", 0), 0},
			{"pair", with("other", 0), 1045},
			{"ciph", with("", aes128), 0}, // CIPHER alone asks for no certificate
			{"ciph", with("", aes256), 1045},
			{"ciph", with("", 0), 1045}, // TLS 1.3's cipher
			{"ciph", nil, 1045},
		} {
			who, code := login(tc.user, "pw", tc.cfg)
			if code != tc.code || code == 0 && !strings.HasPrefix(who, tc.user+"@") {
				t.Errorf("%s (TLS %v): %q, error %d; want error %d", tc.user, tc.cfg != nil, who, code, tc.code)
			}
		}
		// a certificate the node's CA did not sign ends the handshake
		if err := tlsDB(t, n, "x5", "pw", with("stranger", 0)).Ping(); err == nil {
			t.Error("x5 logged in with a certificate of another CA")
		}
		c := conn(t, tlsDB(t, n, "ciph", "pw", with("", aes128)))
		if v := qMap(t, c, "SHOW STATUS LIKE 'Ssl_cipher'")["ssl_cipher"]; v != "ECDHE-ECDSA-AES128-GCM-SHA256" {
			t.Errorf("Ssl_cipher %q, want OpenSSL's name ECDHE-ECDSA-AES128-GCM-SHA256", v)
		}
		if got, want := qStr(t, root, "SHOW CREATE USER pair"), "REQUIRE ISSUER '"+issuer+"' SUBJECT '/CN=app' PASSWORD"; !strings.Contains(got, want) {
			t.Errorf("SHOW CREATE USER pair: %s\nwant it to hold %s", got, want)
		}
		// ALTER USER ... REQUIRE changes an account's requirement and keeps
		// its password (caching_sha2 here) and grants
		mustExec(t, root, "ALTER USER sha REQUIRE X509")
		for _, tc := range []struct {
			cfg  *tls.Config
			code uint16
		}{{with("app", 0), 0}, {with("", 0), 1045}, {nil, 1045}} {
			if _, code := login("sha", "sha-pw", tc.cfg); code != tc.code {
				t.Errorf("sha after ALTER USER ... REQUIRE X509 (TLS %v): error %d, want %d", tc.cfg != nil, code, tc.code)
			}
		}
		if got := qStr(t, root, "SELECT CONCAT(ssl_type, '/', plugin) FROM mysql.user WHERE user = 'sha'"); got != "X509/caching_sha2_password" {
			t.Errorf("mysql.user for sha: %s", got)
		}
		mustExec(t, root, "ALTER USER sha REQUIRE NONE")
		if _, code := login("sha", "sha-pw", nil); code != 0 {
			t.Errorf("sha after ALTER USER ... REQUIRE NONE, without TLS: error %d", code)
		}
		refused(t, root, "ALTER USER nobody REQUIRE SSL", 1396)
		refused(t, root, "ALTER USER sha IDENTIFIED BY 'other' REQUIRE SSL", 1235) // would drop the password change
		mustExec(t, root, "ALTER USER IF EXISTS nobody REQUIRE SSL")
		refused(t, conn(t, tlsDB(t, n, "nat", "nat-pw", nil)), "ALTER USER sha REQUIRE SSL", 1227)
		if _, err := exec.LookPath("mysql"); err == nil {
			host, port, _ := strings.Cut(n.SQLAddr, ":")
			out, err := exec.Command("mysql", "-h", host, "-P", port, "-ux5", "-ppw", "--ssl-ca", filepath.Join(n.DataDir, "tls", "ca.pem"),
				"--ssl-cert", filepath.Join(dir, "app.pem"), "--ssl-key", filepath.Join(dir, "app-key.pem"), "-N", "-e", "SELECT CURRENT_USER()").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "x5@%") {
				t.Errorf("mysql CLI with a client certificate: %v\n%s", err, out)
			}
		}
	})

	t.Run("Reload", func(t *testing.T) {
		// a certificate from a new CA: clients trusting only the old one
		// fail once the node reloaded
		dir := t.TempDir()
		other, err := pki.NewCA(dir, "another CA")
		if err != nil {
			t.Fatal(err)
		}
		cert, key := filepath.Join(n.DataDir, "tls", "server-cert.pem"), filepath.Join(n.DataDir, "tls", "server-key.pem")
		old := verifying(t, n)
		if err := other.Issue(cert, key, "tls1", nil); err != nil {
			t.Fatal(err)
		}
		if _, code := login("nat", "nat-pw", old); code != 0 {
			t.Fatal("the certificate changed before the reload")
		}
		refused(t, conn(t, tlsDB(t, n, "nat", "nat-pw", nil)), "ALTER INSTANCE RELOAD TLS", 1227)
		xexec(t, conn(t, root), "ALTER INSTANCE RELOAD TLS")
		pool, _ := pki.Pool(filepath.Join(dir, "ca.pem"))
		if _, code := login("nat", "nat-pw", &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}); code != 0 {
			t.Fatal("the new certificate is not served after ALTER INSTANCE RELOAD TLS")
		}
		if err := tlsDB(t, n, "nat", "nat-pw", old).Ping(); err == nil {
			t.Fatal("a client trusting only the old CA logged in after the reload")
		}
		// SIGHUP reads the files again too
		if err := other.Issue(cert, key, "tls1", []string{"127.0.0.1", "db.example"}); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(n.PID(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		named := tlsDB(t, n, "nat", "nat-pw", &tls.Config{RootCAs: pool, ServerName: "db.example"})
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if named.Ping() == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the certificate of SIGHUP's reload is not served")
			}
		}
	})
}
