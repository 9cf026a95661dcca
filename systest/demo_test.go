package systest

import (
	"bufio"
	"crypto/tls"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/certusdb/certus/internal/pki"
	"github.com/certusdb/certus/internal/testcluster"
)

// TestDemo runs README's first command, `certus demo`, as a newcomer
// would: three nodes and the proxy come up, a table written through the
// proxy is read back through it and on node 3 with a causal read, and
// Ctrl-C stops every process and removes the temporary data. With --tls
// the nodes' peers are on TLS and a client logs in over TLS, verifying
// the node's certificate with the CA the demo printed.
func TestDemo(t *testing.T) {
	t.Run("Plain", func(t *testing.T) { testDemo(t, false) })
	t.Run("TLS", func(t *testing.T) { testDemo(t, true) })
}

func testDemo(t *testing.T, withTLS bool) {
	var cmd *exec.Cmd
	var lines []string
	var dataDir string
	for attempt := 0; ; attempt++ {
		// the demo takes base, +1, +2 (SQL), +100.. (HTTP), +200.. (peers)
		// and the proxy's port and the one below: a busy one fails it
		base, proxyPort := 20000+rand.IntN(5000), 26000+rand.IntN(5000)
		cmd = exec.Command(testcluster.Binary(t), "demo", "--base-port", fmt.Sprint(base), "--proxy-port", fmt.Sprint(proxyPort), fmt.Sprintf("--tls=%v", withTLS))
		cmd.Dir = t.TempDir()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		logf, err := os.CreateTemp(t.TempDir(), "demo-*.log")
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan bool, 1)
		go func() {
			s := bufio.NewScanner(out)
			for s.Scan() {
				lines = append(lines, s.Text())
				if strings.HasPrefix(s.Text(), "Press Ctrl-C") {
					ready <- true
					for s.Scan() {
					}
					return
				}
			}
			ready <- false
		}()
		var ok, timedOut bool
		select {
		case ok = <-ready:
		case <-time.After(90 * time.Second):
			timedOut = true
		}
		if ok {
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					_ = cmd.Wait()
				}
			})
			break
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if timedOut {
			<-ready // the reader has stopped appending to lines
		}
		b, _ := os.ReadFile(logf.Name())
		if !strings.Contains(string(b), "is busy") || attempt == 4 {
			t.Fatalf("the demo did not come up; output:\n%s\n%s", strings.Join(lines, "\n"), tail(string(b), 40))
		}
		lines = nil
	}
	addrs := map[string]string{}     // name -> host:port of its mysql line
	https := map[string]string{}     // name -> its /status URL
	passwords := map[string]string{} // name -> its -p option's password
	caFile := ""
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) >= 7 && f[1] == "mysql" && f[2] == "-h" && f[4] == "-P" {
			addrs[f[0]] = f[3] + ":" + f[5]
			https[f[0]] = strings.Trim(f[len(f)-1], "()")
			if len(f) >= 10 && f[8] == "--ssl-ca" {
				caFile = f[9]
			}
			if len(f) >= 9 && strings.HasPrefix(f[8], "-p") {
				passwords[f[0]] = ":" + f[8][2:]
			}
		}
		if i := strings.Index(l, "data in "); i >= 0 {
			dataDir = strings.TrimSpace(l[i+len("data in "):])
		}
	}
	for _, name := range []string{"node1", "node2", "node3", "proxy"} {
		if addrs[name] == "" {
			t.Fatalf("the demo printed no mysql command for %s:\n%s", name, strings.Join(lines, "\n"))
		}
	}
	if passwords["proxy"] == "" {
		t.Fatalf("the demo printed no password for the proxy's root:\n%s", strings.Join(lines, "\n"))
	}
	open := func(name, params string) *sql.DB {
		db, err := sql.Open("mysql", "root"+passwords[name]+"@tcp("+addrs[name]+")/?timeout=5s&readTimeout=30s"+params)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	px := open("proxy", "")
	// the proxy's root needs the password it printed
	if err := func() error {
		db, err := sql.Open("mysql", "root@tcp("+addrs["proxy"]+")/?timeout=5s")
		if err != nil {
			return err
		}
		defer db.Close()
		return db.Ping()
	}(); err == nil || !strings.Contains(err.Error(), "1045") {
		t.Fatalf("the demo proxy's root without a password: %v, want 1045", err)
	}
	mustExec(t, px, "CREATE DATABASE shop")
	mustExec(t, px, "CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY, item VARCHAR(20))")
	for i := 0; i < 20; i++ {
		mustExec(t, px, "INSERT INTO shop.orders (item) VALUES (?)", fmt.Sprint("item", i))
		if n := qInt(t, px, "SELECT COUNT(*) FROM shop.orders"); n != int64(i+1) {
			t.Fatalf("through the proxy, %d orders after the %d-th insert", n, i+1)
		}
	}
	if n := qInt(t, open("node3", "&wsrep_sync_wait=1"), "SELECT COUNT(*) FROM shop.orders"); n != 20 {
		t.Fatalf("node 3 with wsrep_sync_wait=1 counts %d orders, want 20", n)
	}
	if withTLS {
		checkDemoTLS(t, addrs["node2"], https["node2"], caFile)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the demo ended with %v after Ctrl-C", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the demo did not stop within 30 s of Ctrl-C")
	}
	if out, err := exec.Command("pgrep", "-f", "--", "--name node1 --data-dir "+dataDir).Output(); err == nil {
		t.Fatalf("a node of the demo still runs after it stopped: %s", out)
	}
	if _, err := os.Stat(dataDir); dataDir == "" || !os.IsNotExist(err) {
		t.Fatalf("the demo's temporary data dir %q is still there (%v)", dataDir, err)
	}
}

// checkDemoTLS logs in to the demo's node at addr over TLS, verifying its
// certificate against caFile, and checks that its /status (statusURL)
// reports peer TLS.
func checkDemoTLS(t *testing.T, addr, statusURL, caFile string) {
	t.Helper()
	if caFile == "" {
		t.Fatal("the demo with --tls printed no --ssl-ca")
	}
	pool, err := pki.Pool(caFile)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(addr)
	const name = "certus-demo"
	if err := mysql.RegisterTLSConfig(name, &tls.Config{RootCAs: pool, ServerName: host}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", "root@tcp("+addr+")/?timeout=5s&tls="+name)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var k, cipher string
	if err := db.QueryRow("SHOW STATUS LIKE 'Ssl_cipher'").Scan(&k, &cipher); err != nil || cipher == "" {
		t.Fatalf("a verified TLS login to %s: cipher %q, %v", addr, cipher, err)
	}
	resp, err := http.Get(statusURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		PeerSecurity string `json:"peer_security"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.PeerSecurity != "tls" {
		t.Fatalf("%s: peer_security %q, %v", statusURL, st.PeerSecurity, err)
	}
}
