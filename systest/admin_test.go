package systest

import (
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// statusLine matches the answer to COM_STATISTICS.
var statusLine = regexp.MustCompile(`^Uptime: (\d+)  Threads: (\d+)  Questions: (\d+)  Slow queries: \d+  Opens: \d+  Flush tables: \d+  Open tables: \d+  Queries per second avg: \d+\.\d{3}$`)

// adminStatus runs `mysqladmin status ping status` against addr (one
// connection: the commands after the first show that it goes on) and
// returns the fields of the first status line: uptime, threads, questions.
func adminStatus(t *testing.T, addr string) (uptime, threads, questions int) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command("mysqladmin", "-h", host, "-P", port, "--protocol=tcp", "-u", "root", "status", "ping", "status").CombinedOutput()
	if err != nil {
		t.Fatalf("mysqladmin: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || lines[1] != "mysqld is alive" {
		t.Fatalf("mysqladmin status ping status printed %q", out)
	}
	var f [3]int
	for _, l := range []string{lines[0], lines[2]} {
		m := statusLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("status line %q", l)
		}
		for i := range f {
			f[i], _ = strconv.Atoi(m[i+1])
		}
	}
	return f[0], f[1], f[2]
}

// checkAdminStatus checks `mysqladmin status` against addr: at least its
// own session, and five more questions after five statements on db.
func checkAdminStatus(t *testing.T, addr string, db *sql.DB) {
	t.Helper()
	_, threads, before := adminStatus(t, addr)
	if threads < 1 {
		t.Fatalf("Threads: %d with mysqladmin connected", threads)
	}
	for i := 0; i < 5; i++ {
		mustExec(t, db, "DO 1")
	}
	if _, _, after := adminStatus(t, addr); after < before+5 {
		t.Fatalf("Questions: %d, then %d after five statements", before, after)
	}
}

// TestAdminStatus runs `mysqladmin status` (COM_STATISTICS, which the
// protocol library refused with "command handling not implemented yet")
// against a node: it answers MySQL's status line, counts the questions
// asked since, and the connection goes on after it.
func TestAdminStatus(t *testing.T) {
	if _, err := exec.LookPath("mysqladmin"); err != nil {
		t.Skip("mysqladmin not installed")
	}
	n, db := startNode(t, "admin", "")
	checkAdminStatus(t, n.SQLAddr, db)
	// COM_REFRESH (refresh, flush-threads) and the FLUSH statements of the
	// other flush commands; they need RELOAD
	host, port, _ := net.SplitHostPort(n.SQLAddr)
	admin := func(user string, args ...string) ([]byte, error) {
		return exec.Command("mysqladmin", append([]string{"-h", host, "-P", port, "--protocol=tcp", "-u", user, "-ppw"}, args...)...).CombinedOutput()
	}
	mustExec(t, db, "CREATE USER ops IDENTIFIED BY 'pw'")
	mustExec(t, db, "CREATE USER plain IDENTIFIED BY 'pw'")
	mustExec(t, db, "GRANT RELOAD ON *.* TO ops")
	if out, err := admin("ops", "refresh", "flush-threads", "flush-logs", "flush-hosts", "flush-status", "flush-privileges", "ping"); err != nil {
		t.Fatalf("mysqladmin refresh and flushes: %v\n%s", err, out)
	}
	out, err := admin("plain", "refresh")
	if err == nil || !strings.Contains(string(out), "RELOAD") {
		t.Fatalf("mysqladmin refresh without RELOAD: %v\n%s", err, out)
	}
}

// TestAdminToken checks the guard of a node's HTTP admin endpoints with a
// token configured (--admin-token-file): /health, /status and /metrics stay
// open; POST /members/remove and /debug/ without the token get 401, with a
// wrong one 403, and the member stays; `certus remove` with the token from
// CERTUS_ADMIN_TOKEN removes it. The cluster's secret comes from
// CERTUS_CLUSTER_SECRET: a node given another one in --cluster-secret-file
// cannot join, and neither secret shows in /status or on a command line.
func TestAdminToken(t *testing.T) {
	const token, clusterSecret = "adm-7f3c9a1e-token", "cs-41d0b7-secret"
	dir := t.TempDir()
	file := filepath.Join(dir, "admin-token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CERTUS_CLUSTER_SECRET", clusterSecret) // the nodes inherit it
	c := testcluster.StartCluster(t, 3, "--admin-token-file", file)
	n1 := c.Nodes[0]
	if !logHas(n1, "access=\"bearer token\"") {
		t.Fatalf("the startup log does not say the admin endpoints need the token:\n%s", n1.LogTail(30))
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", n1.PID()))
	if err != nil || strings.Contains(string(cmdline), token) || strings.Contains(string(cmdline), clusterSecret) {
		t.Fatalf("a secret on the node's command line %q (%v)", cmdline, err)
	}
	wrong := filepath.Join(dir, "wrong-secret")
	if err := os.WriteFile(wrong, []byte("not-"+clusterSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	intruder := testcluster.NewNode(t, "n4", "--cluster-secret-file", wrong, "--join", n1.PeerAddr)
	if err := intruder.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); intruder.Running(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a node with another cluster secret still runs:\n%s", intruder.LogTail(20))
		}
	}
	if !logHas(intruder, "secret mismatch") {
		t.Fatalf("a node with another cluster secret stopped without saying why:\n%s", intruder.LogTail(20))
	}
	call := func(method, path, auth string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+n1.HTTPAddr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/health", "/status", "/metrics"} {
		code, body := call("GET", path, "")
		if code != 200 {
			t.Fatalf("GET %s without a token: %d %s", path, code, body)
		}
		if strings.Contains(body, token) || strings.Contains(body, clusterSecret) {
			t.Fatalf("GET %s shows a secret", path)
		}
	}
	for _, tc := range []struct {
		method, path, auth string
		want               int
	}{
		{"POST", "/members/remove?name=n3", "", 401},
		{"POST", "/members/remove?name=n3", "Bearer wrong-" + token, 403},
		{"POST", "/members/remove?name=n3", token, 403}, // not as a bearer token
		{"POST", "/leave", "", 401},
		{"POST", "/lead", "Bearer nope", 403},
		{"GET", "/debug/pprof/", "", 401},
		{"GET", "/debug/storage", "", 401},
	} {
		code, body := call(tc.method, tc.path, tc.auth)
		if code != tc.want || !strings.Contains(body, "admin") {
			t.Fatalf("%s %s (Authorization %q): %d %q, want %d and a clear message", tc.method, tc.path, tc.auth, code, body, tc.want)
		}
	}
	if code, body := call("GET", "/debug/storage", "Bearer "+token); code != 200 {
		t.Fatalf("GET /debug/storage with the token: %d %s", code, body)
	}
	db := n1.DB("")
	if size := clusterSize(t, db); size != "3" {
		t.Fatalf("wsrep_cluster_size %s after forged removes, want 3", size)
	}
	if out, err := testcluster.Command(t, "remove", "--http-addr", n1.HTTPAddr, "--name", "n3"); err == nil || !strings.Contains(out, "401") {
		t.Fatalf("certus remove without the token: %v: %s", err, out)
	}
	cmd := exec.Command(testcluster.Binary(t), "remove", "--http-addr", n1.HTTPAddr, "--name", "n3")
	cmd.Env = append(os.Environ(), "CERTUS_ADMIN_TOKEN="+token)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("certus remove with CERTUS_ADMIN_TOKEN: %v: %s", err, out)
	}
	if size := clusterSize(t, db); size != "2" {
		t.Fatalf("wsrep_cluster_size %s after certus remove with the token, want 2", size)
	}
}
