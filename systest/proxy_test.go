package systest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
	"github.com/certusdb/certus/proxy/mysqlproto"
)

// proxyProc is a `certus proxy` process.
type proxyProc struct {
	t       *testing.T
	Addr    string
	Admin   string
	Config  string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
}

// startProxy starts a proxy in front of c (it is given only the first
// node's HTTP address and learns the others); cfgJSON, if not empty, is
// written to its configuration file, with an account root without a
// password (the nodes' root) when it lists no users; args are more flags.
func startProxy(t *testing.T, c *testcluster.Cluster, cfgJSON string, args ...string) *proxyProc {
	t.Helper()
	p := launchProxy(t, c, withRootUser(t, cfgJSON), args...)
	if !p.waitReady(len(c.Nodes)) {
		t.Fatalf("proxy did not find the cluster")
	}
	return p
}

// withRootUser adds the account root without a password to the
// configuration cfgJSON ("": none) when it lists no users.
func withRootUser(t *testing.T, cfgJSON string) string {
	t.Helper()
	cfg := map[string]any{}
	if cfgJSON != "" {
		if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := cfg["users"]; !ok {
		cfg["users"] = []any{map[string]any{"name": "root"}}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// launchProxy starts a proxy process with the configuration cfgJSON and
// does not wait for it.
func launchProxy(t *testing.T, c *testcluster.Cluster, cfgJSON string, args ...string) *proxyProc {
	t.Helper()
	dir := t.TempDir()
	p := &proxyProc{t: t, Addr: testcluster.FreePort(t), Admin: testcluster.FreePort(t),
		Config: filepath.Join(dir, "proxy.json"), LogPath: filepath.Join(dir, "proxy.log")}
	if err := os.WriteFile(p.Config, []byte(cfgJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(testcluster.Binary(t), append([]string{"proxy", "--listen", p.Addr, "--admin-listen", p.Admin,
		"--cluster", c.Nodes[0].HTTPAddr, "--config", p.Config}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("proxy log:\n%s", tail(p.log(), 40))
		}
	})
	return p
}

// waitReady waits up to 30 s for the proxy to know a writer and readers
// readers; false if it did not, or exited.
func (p *proxyProc) waitReady(readers int) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var st struct {
			Writers []string `json:"writers"`
			Readers []string `json:"readers"`
		}
		if p.get("/status", &st) == nil && len(st.Writers) > 0 && len(st.Readers) >= readers {
			return true
		}
		select {
		case <-p.done:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

// log is the proxy's output so far.
func (p *proxyProc) log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// get decodes the admin endpoint path into v.
func (p *proxyProc) get(path string, v any) error {
	resp, err := http.Get("http://" + p.Admin + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// running reports whether the proxy process is alive.
func (p *proxyProc) running() bool {
	return p.cmd.ProcessState == nil && syscall.Kill(p.cmd.Process.Pid, 0) == nil
}

// DB opens a pool through the proxy as root (extra DSN parameters in
// params).
func (p *proxyProc) DB(db, params string) *sql.DB {
	p.t.Helper()
	return p.DBAs("root", db, params)
}

// DBAs opens a pool through the proxy as account ("user" or
// "user:password").
func (p *proxyProc) DBAs(account, db, params string) *sql.DB {
	p.t.Helper()
	dsn := fmt.Sprintf("%s@tcp(%s)/%s?timeout=5s&readTimeout=60s&writeTimeout=60s", account, p.Addr, db)
	if params != "" {
		dsn += "&" + params
	}
	d, err := sql.Open("mysql", dsn)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { d.Close() })
	return d
}

// writer returns the name of the proxy's current writer.
func (p *proxyProc) writer(t *testing.T) string {
	t.Helper()
	var st struct {
		Writers []string `json:"writers"`
	}
	if err := p.get("/status", &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Writers) == 0 {
		return ""
	}
	return st.Writers[0]
}

// TestProxy runs the proxy's functional tests against one 3-node cluster.
func TestProxy(t *testing.T) {
	c := testcluster.StartCluster(t, 3)
	mustExec(t, c.Nodes[0].DB(""), "CREATE DATABASE px")
	t.Run("ReadYourWrites", func(t *testing.T) { testProxyReadYourWrites(t, c) })
	t.Run("Protocol", func(t *testing.T) { testProxyProtocol(t, c) })
	t.Run("RulesAndRateLimit", func(t *testing.T) { testProxyRules(t, c) })
	t.Run("BadInput", func(t *testing.T) { testProxyBadInput(t, c) })
	t.Run("Users", func(t *testing.T) { testProxyUsers(t, c) })
	t.Run("Warnings", func(t *testing.T) { testProxyWarnings(t, c) })
	t.Run("LastInsertID", func(t *testing.T) { testProxyLastInsertID(t, c) })
	t.Run("FoundRows", func(t *testing.T) { testProxyFoundRows(t, c) })
	t.Run("AdminStatus", func(t *testing.T) { testProxyAdminStatus(t, c) })
	t.Run("LoadDataLocal", func(t *testing.T) { testProxyLoadDataLocal(t, c) })
	t.Run("NotRetried", func(t *testing.T) { testProxyNotRetried(t, c) })
	t.Run("LoginFlood", func(t *testing.T) { testProxyLoginFlood(t, c) })
	t.Run("MaxConnections", func(t *testing.T) { testProxyMaxConnections(t, c) })
	t.Run("MaxAllowedPacket", func(t *testing.T) { testProxyMaxAllowedPacket(t, c) })
	t.Run("WaitTimeout", func(t *testing.T) { testProxyWaitTimeout(t, c) })
	t.Run("Metrics", func(t *testing.T) { testProxyMetrics(t, c) })
}

// testProxyLoadDataLocal: LOAD DATA LOCAL INFILE through the proxy loads
// the client's file (the node's request for it is relayed to the client
// and the file back); the proxy used to answer the request with an empty
// file, and the client got OK for no rows. A client that has not enabled
// local files gets 3948, as from MySQL, not that OK.
func testProxyLoadDataLocal(t *testing.T, c *testcluster.Cluster) {
	if _, err := exec.LookPath("mysql"); err != nil {
		t.Skip("mysql CLI not installed")
	}
	for _, n := range c.Nodes {
		mustExec(t, n.DB(""), "SET GLOBAL local_infile = 1")
	}
	p := startProxy(t, c, "")
	db := p.DB("px", "")
	mustExec(t, db, "CREATE TABLE loaded (id INT PRIMARY KEY, v VARCHAR(20))")
	var file bytes.Buffer
	const rows = 20000 // more than one 16 KiB packet of file
	for i := 1; i <= rows; i++ {
		fmt.Fprintf(&file, "%d\tvalue %d\n", i, i)
	}
	path := filepath.Join(t.TempDir(), "loaded.tsv")
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(p.Addr)
	load := func(enabled string) ([]byte, error) {
		return exec.Command("mysql", "-h", host, "-P", port, "--protocol=tcp", "-u", "root", "--local-infile="+enabled, "px",
			"-e", "LOAD DATA LOCAL INFILE '"+path+"' INTO TABLE loaded").CombinedOutput()
	}
	if out, err := load("1"); err != nil {
		t.Fatalf("LOAD DATA LOCAL through the proxy: %v\n%s", err, out)
	}
	awaitApplied(t, c)
	for i, n := range c.Nodes {
		if got := qInt(t, n.DB(""), "SELECT COUNT(*) FROM px.loaded"); got != rows {
			t.Fatalf("node %d holds %d loaded rows, want %d", i+1, got, rows)
		}
	}
	if got := qStr(t, db, "SELECT v FROM loaded WHERE id = 12345"); got != "value 12345" {
		t.Fatalf("row 12345 = %q", got)
	}
	mustExec(t, db, "DELETE FROM loaded")
	out, err := load("0")
	if err == nil || !bytes.Contains(out, []byte("ERROR 3948 (42000)")) {
		t.Fatalf("LOAD DATA LOCAL without local files: %v\n%s", err, out)
	}
	if got := qInt(t, db, "SELECT COUNT(*) FROM loaded"); got != 0 {
		t.Fatalf("a refused load left %d rows", got)
	}
	// the session goes on after either
	if got := qInt(t, db, "SELECT 1"); got != 1 {
		t.Fatalf("SELECT 1 = %d", got)
	}
}

// testProxyAdminStatus: `mysqladmin status` through the proxy answers the
// proxy's own uptime, sessions and statements run on the nodes.
func testProxyAdminStatus(t *testing.T, c *testcluster.Cluster) {
	if _, err := exec.LookPath("mysqladmin"); err != nil {
		t.Skip("mysqladmin not installed")
	}
	p := startProxy(t, c, `{}`)
	db := p.DB("", "")
	checkAdminStatus(t, p.Addr, db)
	host, port, _ := net.SplitHostPort(p.Addr)
	if out, err := exec.Command("mysqladmin", "-h", host, "-P", port, "--protocol=tcp", "-u", "root", "refresh", "flush-threads", "ping").CombinedOutput(); err != nil {
		t.Fatalf("mysqladmin refresh: %v\n%s", err, out)
	}
	// a dump and its restore through the proxy: mysqldump's settings are
	// in executable comments (/*!40100 SET @@SQL_MODE='' */, /*!40014 SET
	// FOREIGN_KEY_CHECKS=0 */), which the proxy must replay like any SET
	dump, err := exec.LookPath("mysqldump")
	if err != nil {
		t.Skip("mysqldump not installed")
	}
	for _, q := range []string{"CREATE DATABASE dumpsrc", "CREATE DATABASE dumpdst",
		"CREATE TABLE dumpsrc.p (id INT PRIMARY KEY)", "CREATE TABLE dumpsrc.c (id INT PRIMARY KEY, p INT, FOREIGN KEY (p) REFERENCES dumpsrc.p (id))",
		"INSERT INTO dumpsrc.p VALUES (1), (2)", "INSERT INTO dumpsrc.c VALUES (1, 1), (2, 2)"} {
		mustExec(t, db, q)
	}
	out, err := exec.Command(dump, "-h", host, "-P", port, "--protocol=tcp", "-u", "root", "--single-transaction", "--flush-logs", "dumpsrc").Output()
	if err != nil {
		t.Fatalf("mysqldump through the proxy: %v\n%s", err, errOut(err))
	}
	restore := exec.Command("mysql", "-h", host, "-P", port, "--protocol=tcp", "-u", "root", "dumpdst")
	restore.Stdin = bytes.NewReader(out) // table c (with its foreign key) comes before p
	if msg, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("restore through the proxy: %v\n%s", err, msg)
	}
	if n := qInt(t, db, "SELECT COUNT(*) FROM dumpdst.c JOIN dumpdst.p ON c.p = p.id"); n != 2 {
		t.Fatalf("restored %d joined rows, want 2", n)
	}
}

// testProxyFoundRows: FOUND_ROWS() after SELECT SQL_CALC_FOUND_ROWS ...
// LIMIT (the pagination of many PHP applications) and ROW_COUNT() after an
// UPDATE that changed nothing read what the session's statement left. The
// proxy's WSREP_LAST_WRITTEN_GTID() query after such statements, which
// commit nothing, reset them to 1 and -1.
func testProxyFoundRows(t *testing.T, c *testcluster.Cluster) {
	p := startProxy(t, c, "")
	db := p.DB("px", "")
	mustExec(t, db, "CREATE TABLE found (id INT PRIMARY KEY, v INT)")
	mustExec(t, db, "INSERT INTO found VALUES (1, 1), (2, 2), (3, 3), (4, 4)")
	a := conn(t, db)
	xexec(t, a, "UPDATE found SET v = v WHERE id = 99")
	if n := qInt(t, a, "SELECT ROW_COUNT()"); n != 0 {
		t.Errorf("ROW_COUNT() after an UPDATE of no row = %d, want 0", n)
	}
	// two sessions' writes interleaved: each reads its own row count,
	// although the pool may give the other session the connection its
	// write ran on
	b := conn(t, db)
	for i := 0; i < 5; i++ {
		xexec(t, a, "UPDATE found SET v = v + 1 WHERE id <= 2")
		xexec(t, b, "UPDATE found SET v = v + 1 WHERE id = 4")
		if n := qInt(t, a, "SELECT ROW_COUNT()"); n != 2 {
			t.Fatalf("ROW_COUNT() after an UPDATE of 2 rows, another session's UPDATE of 1 between = %d, want 2", n)
		}
		if n := qInt(t, b, "select row_count() AS n;"); n != 1 {
			t.Fatalf("ROW_COUNT() after an UPDATE of 1 row = %d, want 1", n)
		}
		if n := qInt(t, a, "SELECT ROW_COUNT()"); n != -1 {
			t.Fatalf("ROW_COUNT() after SELECT ROW_COUNT() = %d, want -1", n)
		}
	}
	if err := tryExec(b, "INSERT INTO found VALUES (1, 1)"); err == nil {
		t.Fatal("duplicate INSERT succeeded")
	}
	if n := qInt(t, b, "SELECT ROW_COUNT()"); n != -1 {
		t.Errorf("ROW_COUNT() after an error = %d, want -1", n)
	}
	mustExec(t, db, "UPDATE found SET v = id")
	for i := 0; i < 3; i++ {
		if n := qInt(t, a, "SELECT SQL_CALC_FOUND_ROWS id FROM found WHERE id > 1 ORDER BY id LIMIT 1"); n != 2 {
			t.Fatalf("first row = %d, want 2", n)
		}
		if n := qInt(t, a, "SELECT FOUND_ROWS()"); n != 3 {
			t.Fatalf("FOUND_ROWS() after SQL_CALC_FOUND_ROWS ... LIMIT 1 = %d, want 3", n)
		}
	}
	if n := qInt(t, db, "SELECT COUNT(*) FROM found WHERE v = 0"); n != 0 {
		t.Fatalf("%d rows changed", n)
	}
}

// testProxyLastInsertID: LAST_INSERT_ID() is the session's own, although
// the pooled connection a statement runs on may last have inserted for
// another session (INSERT INTO child VALUES (LAST_INSERT_ID()) took the
// other session's parent).
func testProxyLastInsertID(t *testing.T, c *testcluster.Cluster) {
	p := startProxy(t, c, "")
	db := p.DB("px", "")
	mustExec(t, db, "CREATE TABLE lid_parent (id INT AUTO_INCREMENT PRIMARY KEY, who CHAR(1))")
	mustExec(t, db, "CREATE TABLE lid_child (id INT AUTO_INCREMENT PRIMARY KEY, pid INT, who CHAR(1))")
	a, b := conn(t, db), conn(t, db)
	if n := qInt(t, a, "SELECT LAST_INSERT_ID()"); n != 0 {
		t.Fatalf("LAST_INSERT_ID() of a new session = %d, want 0", n)
	}
	for i := 0; i < 5; i++ {
		xexec(t, a, "INSERT INTO lid_parent (who) VALUES ('a')")
		xexec(t, b, "INSERT INTO lid_parent (who) VALUES ('b')")
		xexec(t, a, "INSERT INTO lid_child (pid, who) VALUES (LAST_INSERT_ID(), 'a')")
		xexec(t, b, "INSERT INTO lid_child (pid, who) VALUES (LAST_INSERT_ID(), 'b')")
		want := qInt(t, db, "SELECT MAX(id) FROM lid_child WHERE who = 'a'")
		if n := qInt(t, a, "SELECT LAST_INSERT_ID()"); n != want {
			t.Fatalf("round %d: a's LAST_INSERT_ID() = %d, want its last child's id %d", i, n, want)
		}
	}
	if n := qInt(t, db, "SELECT COUNT(*) FROM lid_child c JOIN lid_parent p ON p.id = c.pid WHERE p.who <> c.who"); n != 0 {
		t.Fatalf("%d children point at the other session's parent", n)
	}
}

// testProxyWarnings: SHOW WARNINGS, SHOW ERRORS and @@warning_count read
// the conditions of the session's previous statement, which ran on a
// pooled connection to any node; a session whose last statement left
// none sees none, not another session's.
func testProxyWarnings(t *testing.T, c *testcluster.Cluster) {
	p := startProxy(t, c, "")
	db := p.DB("px", "")
	mustExec(t, db, "CREATE TABLE warn (id INT PRIMARY KEY, v INT)")
	mustExec(t, db, "INSERT INTO warn VALUES (1, 1)")
	a, b := conn(t, db), conn(t, db)
	for i := 0; i < 6; i++ { // reads go round the nodes: each time another connection
		xexec(t, a, "INSERT IGNORE INTO warn VALUES (1, 2), (1, 3)")
		if n := qInt(t, a, "SELECT @@warning_count"); n != 2 {
			t.Fatalf("@@warning_count after two ignored duplicates = %d, want 2", n)
		}
		if n := qInt(t, a, "SHOW COUNT(*) WARNINGS"); n != 2 {
			t.Fatalf("SHOW COUNT(*) WARNINGS = %d, want 2", n)
		}
		var level, msg string
		var code int
		if err := a.QueryRowContext(t.Context(), "SHOW WARNINGS LIMIT 1").Scan(&level, &code, &msg); err != nil || code != 1062 {
			t.Fatalf("SHOW WARNINGS after INSERT IGNORE: %s %d %s, %v", level, code, msg, err)
		}
		xexec(t, b, "SELECT 1/0")
		xexec(t, b, "SELECT v FROM warn WHERE id = 1")
		if n := qInt(t, b, "SHOW COUNT(*) WARNINGS"); n != 0 {
			t.Fatalf("SHOW COUNT(*) WARNINGS after a clean SELECT = %d, want 0", n)
		}
		if err := tryExec(a, "INSERT INTO warn VALUES (1, 9)"); err == nil {
			t.Fatal("a duplicate INSERT succeeded")
		}
		if n := qInt(t, a, "SELECT @@error_count"); n != 1 {
			t.Fatalf("@@error_count after a failed INSERT = %d, want 1", n)
		}
	}
}

// testProxyUsers: each proxy user runs as itself on the nodes, so the
// nodes' grants apply to it; a user mapped to another account runs as
// that one; a user the nodes refuse gets the node's 1045 at once.
func testProxyUsers(t *testing.T, c *testcluster.Cluster) {
	root := c.Nodes[0].DB("")
	mustExec(t, root, "CREATE TABLE px.grants (id INT PRIMARY KEY)")
	mustExec(t, root, "INSERT INTO px.grants VALUES (1)")
	mustExec(t, root, "CREATE USER reader IDENTIFIED BY 'rpw'")
	mustExec(t, root, "GRANT SELECT ON px.* TO reader")
	p := startProxy(t, c, `{"users": [
		{"name": "root"},
		{"name": "reader", "password": "rpw"},
		{"name": "ops", "password": "opw", "backend_user": "root"},
		{"name": "ghost", "password": "gpw"}
	]}`)

	reader := p.DBAs("reader:rpw", "px", "")
	for i := 0; i < 6; i++ { // reads spread over the readers, all as reader
		var id int
		var who string
		if err := reader.QueryRow("SELECT id, CURRENT_USER() FROM grants").Scan(&id, &who); err != nil {
			t.Fatal(err)
		}
		if id != 1 || !strings.HasPrefix(who, "reader@") {
			t.Fatalf("read as reader: id %d, CURRENT_USER() %q", id, who)
		}
	}
	wantErr(t, tryExec(reader, "INSERT INTO grants VALUES (2)"), 1142, "42000")
	wantErr(t, tryExec(reader, "CREATE DATABASE nope"), 1044, "42000")

	ops := p.DBAs("ops:opw", "px", "")
	mustExec(t, ops, "INSERT INTO grants VALUES (3)")
	var who string
	if err := ops.QueryRow("SELECT CURRENT_USER()").Scan(&who); err != nil || !strings.HasPrefix(who, "root@") {
		t.Fatalf("ops mapped to root: CURRENT_USER() %q, %v", who, err)
	}

	ghost := p.DBAs("ghost:gpw", "", "")
	start := time.Now()
	wantErr(t, tryExec(ghost, "SELECT 1"), 1045, "28000")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a user the nodes refuse waited %v for its error", d)
	}
	// a database given at login is checked on a node, as the user
	if db, err := sql.Open("mysql", fmt.Sprintf("ghost:gpw@tcp(%s)/px?timeout=5s", p.Addr)); err != nil {
		t.Fatal(err)
	} else {
		wantErr(t, db.Ping(), 1045, "28000")
		db.Close()
	}
}

// testProxyReadYourWrites: a session writes through the proxy and reads
// at once; reads go to all readers, and none may miss the write.
func testProxyReadYourWrites(t *testing.T, c *testcluster.Cluster) {
	p := startProxy(t, c, "")
	db := p.DB("px", "")
	mustExec(t, db, "CREATE TABLE ryw (id INT PRIMARY KEY, v BIGINT)")
	mustExec(t, db, "INSERT INTO ryw VALUES (1, 0)")
	ctx := context.Background()
	sess := conn(t, db)
	tries := 2000
	if testing.Short() {
		tries = 300
	}
	stale := 0
	byNode := map[string]int{}
	for i := 1; i <= tries; i++ {
		// alternate the text protocol and prepared statements
		var err error
		if i%2 == 0 {
			_, err = sess.ExecContext(ctx, fmt.Sprintf("UPDATE ryw SET v = %d WHERE id = 1", i))
		} else {
			_, err = sess.ExecContext(ctx, "UPDATE ryw SET v = ? WHERE id = 1", i)
		}
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		var v int
		var node string
		if i%3 == 0 {
			err = sess.QueryRowContext(ctx, fmt.Sprintf("SELECT v, @@wsrep_node_name FROM ryw WHERE id = %d", 1)).Scan(&v, &node)
		} else {
			err = sess.QueryRowContext(ctx, "SELECT v, @@wsrep_node_name FROM ryw WHERE id = ?", 1).Scan(&v, &node)
		}
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		byNode[node]++
		if v != i {
			stale++
		}
	}
	t.Logf("%d write-then-read tries through the proxy: %d stale reads; reads per node %v", tries, stale, byNode)
	if stale != 0 {
		t.Fatalf("%d of %d reads missed the session's own committed write", stale, tries)
	}
	spread := 0
	for _, n := range byNode {
		if n >= tries/20 {
			spread++
		}
	}
	if spread < 2 {
		t.Fatalf("reads not spread over at least 2 nodes: %v", byNode)
	}
	// Certus nodes send each commit's GTID in the OK packet, so the proxy
	// never needs the extra WSREP_LAST_WRITTEN_GTID() round trip.
	var st struct {
		GTIDQueries int64 `json:"gtid_queries"`
	}
	if err := p.get("/status", &st); err != nil {
		t.Fatal(err)
	}
	if st.GTIDQueries != 0 {
		t.Fatalf("proxy asked WSREP_LAST_WRITTEN_GTID() %d times; the OK packet should carry the GTID", st.GTIDQueries)
	}
}

// testProxyProtocol checks what clients rely on: prepared statements
// across backends, multi-results, USE, session variables replayed,
// transactions kept on one backend, and the mysql CLI (a client without
// CLIENT_DEPRECATE_EOF).
func testProxyProtocol(t *testing.T, c *testcluster.Cluster) {
	p := startProxy(t, c, "")
	ctx := context.Background()
	db := p.DB("px", "multiStatements=true")
	mustExec(t, db, "CREATE TABLE proto (id INT PRIMARY KEY, s VARCHAR(100), f DOUBLE, b BLOB, n INT)")

	// prepared statements with parameters of several types, including NULL
	ins, err := db.Prepare("INSERT INTO proto VALUES (?, ?, ?, ?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 20; i++ {
		var n any
		if i%2 == 0 {
			n = i
		}
		if _, err := ins.Exec(i, fmt.Sprintf("row %d", i), float64(i)/4, []byte{byte(i), 0, 255}, n); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	ins.Close()
	sel, err := db.Prepare("SELECT s, f, b, n, @@wsrep_node_name FROM proto WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for i := 1; i <= 20; i++ {
		var s string
		var f float64
		var b []byte
		var n sql.NullInt64
		var node string
		if err := sel.QueryRow(i).Scan(&s, &f, &b, &n, &node); err != nil {
			t.Fatalf("select %d: %v", i, err)
		}
		if s != fmt.Sprintf("row %d", i) || f != float64(i)/4 || string(b) != string([]byte{byte(i), 0, 255}) || n.Valid != (i%2 == 0) {
			t.Fatalf("row %d read back as %q %v %v %v", i, s, f, b, n)
		}
		nodes[node] = true
	}
	sel.Close()
	if len(nodes) < 2 {
		t.Errorf("one prepared statement executed on %d node(s), want it re-prepared on several", len(nodes))
	}

	// multi-statements and multiple result sets
	rows, err := db.QueryContext(ctx, "SELECT 1; SELECT 2, 3; SELECT COUNT(*) FROM proto")
	if err != nil {
		t.Fatal(err)
	}
	var sets [][]int64
	for {
		var set []int64
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]int64, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			set = append(set, vals...)
		}
		sets = append(sets, set)
		if !rows.NextResultSet() {
			break
		}
	}
	rows.Close()
	if fmt.Sprint(sets) != "[[1] [2 3] [20]]" {
		t.Fatalf("multi-result sets = %v", sets)
	}

	// session variables and USE follow the session onto every backend
	sess := conn(t, p.DB("", ""))
	xexec(t, sess, "USE px")
	xexec(t, sess, "SET SESSION sql_mode = 'ANSI_QUOTES'")
	xexec(t, sess, "SET @@session.wsrep_sync_wait = 1")
	nodes = map[string]bool{}
	for i := 0; i < 30; i++ {
		var mode, db, node string
		var sw int
		if err := sess.QueryRowContext(ctx, "SELECT @@sql_mode, DATABASE(), @@wsrep_sync_wait, @@wsrep_node_name").Scan(&mode, &db, &sw, &node); err != nil {
			t.Fatal(err)
		}
		if mode != "ANSI_QUOTES" || db != "px" || sw != 1 {
			t.Fatalf("session state not replayed on %s: sql_mode=%q db=%q wsrep_sync_wait=%d", node, mode, db, sw)
		}
		nodes[node] = true
	}
	if len(nodes) < 2 {
		t.Errorf("session reads ran on %d node(s)", len(nodes))
	}
	// a fresh session does not inherit another session's variables
	other := conn(t, p.DB("px", ""))
	for i := 0; i < 6; i++ {
		if mode := qStr(t, other, "SELECT @@sql_mode"); strings.Contains(mode, "ANSI_QUOTES") {
			t.Fatalf("another session's sql_mode leaked: %q", mode)
		}
	}

	// a transaction stays on one backend and sees its own writes
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	xexec(t, tx, "INSERT INTO proto (id, s) VALUES (100, 'tx')")
	txNodes := map[string]bool{}
	for i := 0; i < 10; i++ {
		var n int
		var node string
		if err := tx.QueryRow("SELECT COUNT(*), MAX(@@wsrep_node_name) FROM proto WHERE id = 100").Scan(&n, &node); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("transaction does not see its own insert (read %d on %s)", n, node)
		}
		txNodes[node] = true
	}
	if len(txNodes) != 1 {
		t.Fatalf("transaction ran on several nodes: %v", txNodes)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := qInt(t, db, "SELECT COUNT(*) FROM proto WHERE id = 100"); n != 0 {
		t.Fatalf("rolled back row visible: %d", n)
	}

	// the mysql command-line client (no CLIENT_DEPRECATE_EOF)
	if _, err := exec.LookPath("mysql"); err != nil {
		t.Log("mysql CLI not installed; skipping its part")
		return
	}
	host, port, _ := net.SplitHostPort(p.Addr)
	out, err := exec.Command("mysql", "-h", host, "-P", port, "-u", "root", "--protocol=tcp", "--batch", "px",
		"-e", "SELECT COUNT(*) FROM proto; SELECT s FROM proto WHERE id = 3; SELECT id FROM proto WHERE id > 100").CombinedOutput()
	if err != nil {
		t.Fatalf("mysql CLI: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); strings.Join(got, " ") != "COUNT(*) 20 s row 3" {
		t.Fatalf("mysql CLI output %q", out)
	}
}

// testProxyRules: a rate-limited rule holds its rate within 10%, a digest
// rule routes to the writer, the admin interface shows rules and digests
// and reloads rules without a restart.
func testProxyRules(t *testing.T, c *testcluster.Cluster) {
	const rate = 40.0
	cfg := func(rate float64) string {
		return fmt.Sprintf(`{"rules": [
			{"name": "limited", "match": "^SELECT /\\* limited \\*/", "rate_limit": %g},
			{"name": "to-writer", "digest": "select ? + ?, @@wsrep_node_name", "hostgroup": "writer"}
		]}`, rate)
	}
	p := startProxy(t, c, cfg(rate))
	db := p.DB("", "")
	db.SetMaxOpenConns(16)
	// digest rule: every such read runs on the writer
	writer := p.writer(t)
	for i := 0; i < 12; i++ {
		var sum int
		var node string
		if err := db.QueryRow(fmt.Sprintf("SELECT %d + %d, @@wsrep_node_name", i, i)).Scan(&sum, &node); err != nil {
			t.Fatal(err)
		}
		if node != writer {
			t.Fatalf("digest rule to the writer: ran on %s, writer is %s", node, writer)
		}
	}
	// rate limit: 8 clients as fast as they can for 3 s
	const clients = 8
	dur := 3 * time.Second
	var done atomic.Int64
	var failed atomic.Int64
	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(dur))
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, err := db.ExecContext(ctx, "SELECT /* limited */ 1")
				switch {
				case err == nil:
					if time.Now().Before(start.Add(dur)) {
						done.Add(1)
					}
				case ctx.Err() == nil:
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	got := float64(done.Load()) / dur.Seconds()
	t.Logf("rate-limited rule (%g/s) with %d clients: %.1f statements/s over %v", rate, clients, got, dur)
	if failed.Load() > 0 {
		t.Fatalf("%d rate-limited statements failed", failed.Load())
	}
	if math.Abs(got-rate) > rate*0.10 {
		t.Fatalf("rate %.1f/s is not within 10%% of the limit %g/s", got, rate)
	}
	// admin: rules with hits, digest statistics
	var rs []struct {
		Name      string  `json:"name"`
		RateLimit float64 `json:"rate_limit"`
		Hits      int64   `json:"hits"`
	}
	if err := p.get("/rules", &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Name != "limited" || rs[0].Hits < done.Load() || rs[1].Hits != 12 {
		t.Fatalf("/rules = %+v", rs)
	}
	var digests []struct {
		Digest string `json:"digest"`
		Count  int64  `json:"count"`
		Rows   int64  `json:"rows_sent"`
		AvgUS  int64  `json:"avg_time_us"`
		MaxUS  int64  `json:"max_time_us"`
	}
	if err := p.get("/stats/digest", &digests); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range digests {
		if d.Digest == "SELECT ? + ?, @@wsrep_node_name" {
			found = true
			if d.Count != 12 || d.Rows != 12 || d.MaxUS < d.AvgUS || d.AvgUS <= 0 {
				t.Fatalf("digest stats %+v", d)
			}
		}
	}
	if !found {
		t.Fatalf("digest missing from /stats/digest: %+v", digests)
	}
	// reload without restart
	if err := os.WriteFile(p.Config, []byte(withRootUser(t, cfg(500))), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+p.Admin+"/reload", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("reload: %s", resp.Status)
	}
	if err := p.get("/rules", &rs); err != nil {
		t.Fatal(err)
	}
	if rs[0].RateLimit != 500 {
		t.Fatalf("rules after reload: %+v", rs)
	}
	// a broken file is refused and the old rules stay
	if err := os.WriteFile(p.Config, []byte(`{"rules": [{"name": "bad", "match": "("}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Post("http://"+p.Admin+"/reload", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("reload of a broken file: %s", resp.Status)
	}
	if err := p.get("/rules", &rs); err != nil || len(rs) != 2 {
		t.Fatalf("rules after a failed reload: %+v %v", rs, err)
	}
}

// rawSession is a hand-driven client connection for malformed input.
type rawSession struct {
	c *mysqlproto.Conn
}

// dialRaw logs in as root (no password) with the given capabilities.
func dialRaw(t *testing.T, addr string) *rawSession {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := mysqlproto.NewConn(nc)
	c.SetDeadlineIn(10 * time.Second)
	if _, err := c.ReadPacket(); err != nil {
		t.Fatal(err)
	}
	caps := mysqlproto.CapProtocol41 | mysqlproto.CapSecureConnection | mysqlproto.CapPluginAuth | mysqlproto.CapDeprecateEOF | mysqlproto.CapTransactions
	if err := c.WritePacket(mysqlproto.AppendHandshakeResponse(nil, mysqlproto.HandshakeResponse{Capabilities: caps, User: "root", AuthPlugin: mysqlproto.NativePassword, Charset: 45})); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	p, err := c.ReadPacket()
	if err != nil || len(p) == 0 || p[0] != mysqlproto.HeaderOK {
		t.Fatalf("raw login: %v %x", err, p)
	}
	return &rawSession{c: c}
}

// command sends one command packet and returns the first response packet.
func (r *rawSession) command(t *testing.T, payload []byte) []byte {
	t.Helper()
	r.c.ResetSeq()
	if err := r.c.WritePacket(payload); err != nil {
		t.Fatal(err)
	}
	if err := r.c.Flush(); err != nil {
		t.Fatal(err)
	}
	p, err := r.c.ReadPacket()
	if err != nil {
		t.Fatalf("command %x: no response: %v", payload[:min(len(payload), 8)], err)
	}
	return p
}

// testProxyBadInput: malformed packets and unknown commands get an
// error, not a crash, and other sessions carry on.
func testProxyBadInput(t *testing.T, c *testcluster.Cluster) {
	p := startProxy(t, c, "")
	db := p.DB("", "")
	ctx, cancel := context.WithCancel(context.Background())
	var bystander sync.WaitGroup
	var okQueries atomic.Int64
	var bystanderErr atomic.Value
	bystander.Add(1)
	go func() {
		defer bystander.Done()
		for ctx.Err() == nil {
			if _, err := db.ExecContext(context.Background(), "SELECT 1"); err != nil {
				bystanderErr.Store(err)
				return
			}
			okQueries.Add(1)
		}
	}()

	// garbage instead of a handshake response: ERR and close
	nc, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	raw := mysqlproto.NewConn(nc)
	raw.SetDeadlineIn(5 * time.Second)
	if _, err := raw.ReadPacket(); err != nil {
		t.Fatal(err)
	}
	_ = raw.WritePacket([]byte("\x01\x02garbage"))
	_ = raw.Flush()
	if pkt, err := raw.ReadPacket(); err != nil || len(pkt) == 0 || pkt[0] != mysqlproto.HeaderErr {
		t.Fatalf("bad handshake response: got %x, %v; want an ERR packet", pkt, err)
	}
	nc.Close()

	// after a good login: bad commands get ERR and the session goes on
	s := dialRaw(t, p.Addr)
	cases := []struct {
		name    string
		payload []byte
		code    uint16
	}{
		{"unknown command", []byte{0x99, 1, 2, 3}, 1047},
		{"empty packet", []byte{}, 1835},
		{"short COM_STMT_EXECUTE", []byte{mysqlproto.ComStmtExecute, 1, 0}, 1835},
		{"COM_STMT_EXECUTE of an unknown statement", []byte{mysqlproto.ComStmtExecute, 9, 9, 0, 0, 0, 1, 0, 0, 0}, 1243},
		{"short COM_STMT_RESET", []byte{mysqlproto.ComStmtReset, 1}, 1835},
		{"bad SQL", append([]byte{mysqlproto.ComQuery}, "SELEKT \x00\xff"...), 1105},
	}
	for _, tc := range cases {
		pkt := s.command(t, tc.payload)
		e, err := mysqlproto.ParseErr(pkt)
		if err != nil {
			t.Fatalf("%s: want ERR, got %x", tc.name, pkt)
		}
		if tc.code != 1105 && e.Code != tc.code {
			t.Fatalf("%s: error %d, want %d (%s)", tc.name, e.Code, tc.code, e.Message)
		}
	}
	// prepare a statement, then execute it with a truncated parameter block
	pkt := s.command(t, append([]byte{mysqlproto.ComStmtPrepare}, "SELECT ?"...))
	pok, err := mysqlproto.ParsePrepareOK(pkt)
	if err != nil || pok.NumParams != 1 {
		t.Fatalf("prepare: %x %v", pkt, err)
	}
	for i := 0; i < int(pok.NumParams)+int(pok.NumColumns); i++ {
		if _, err := s.c.ReadPacket(); err != nil {
			t.Fatal(err)
		}
	}
	exe := []byte{mysqlproto.ComStmtExecute, byte(pok.StmtID), byte(pok.StmtID >> 8), 0, 0, 0, 1, 0, 0, 0, 0, 1, 8}
	if pkt := s.command(t, exe); pkt[0] != mysqlproto.HeaderErr {
		t.Fatalf("truncated execute: %x", pkt)
	}
	// the session still works
	pkt = s.command(t, append([]byte{mysqlproto.ComQuery}, "SELECT 42"...))
	if pkt[0] != 1 {
		t.Fatalf("query after bad input: %x", pkt)
	}
	for {
		p, err := s.c.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		if p[0] == mysqlproto.HeaderEOF {
			break
		}
	}
	// random junk on other connections, then a packet header announcing
	// more than max_allowed_packet
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		js := dialRaw(t, p.Addr)
		for j := 0; j < 50; j++ {
			b := make([]byte, rng.Intn(40))
			rng.Read(b)
			if len(b) > 0 && (b[0] == mysqlproto.ComQuit || b[0] == mysqlproto.ComQuery) {
				b[0] = mysqlproto.ComStmtExecute
			}
			js.c.ResetSeq()
			_ = js.c.WritePacket(b)
		}
		_ = js.c.Flush()
		js.c.Close()
	}
	nc, err = net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = nc.Write([]byte{0xff, 0xff, 0xff, 0x01, 1, 2, 3})
	nc.Close()

	time.Sleep(300 * time.Millisecond)
	cancel()
	bystander.Wait()
	if err, _ := bystanderErr.Load().(error); err != nil {
		t.Fatalf("another session failed during the bad input: %v", err)
	}
	if !p.running() {
		t.Fatal("proxy process died")
	}
	if okQueries.Load() == 0 {
		t.Fatal("the other session ran no query")
	}
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatalf("proxy unusable after bad input: %v", err)
	}
}

// TestProxyWriterFailover kills the writer under load: each client loses
// at most its in-flight transaction and all continue on the new writer
// within a few seconds; then the killed node comes back and a fourth
// node joins, and the proxy follows both membership changes.
func TestProxyWriterFailover(t *testing.T) {
	c := testcluster.StartCluster(t, 3)
	p := startProxy(t, c, "")
	db := p.DB("", "")
	mustExec(t, db, "CREATE DATABASE fo")
	mustExec(t, db, "CREATE TABLE fo.t (id BIGINT PRIMARY KEY, w INT)")
	db = p.DB("fo", "")
	const workers = 6
	db.SetMaxOpenConns(workers)
	var next atomic.Int64
	var killedAt atomic.Int64
	type report struct {
		errs          []error
		acked         []int64
		recoveredIn   time.Duration
		okAfterKill   bool
		errsAfterKill int
	}
	reports := make([]report, workers)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := &reports[w]
			for ctx.Err() == nil {
				id := next.Add(1)
				var err error
				if id%2 == 0 {
					_, err = db.ExecContext(ctx, "INSERT INTO t VALUES (?, ?)", id, w)
				} else {
					err = func() error {
						tx, err := db.BeginTx(ctx, nil)
						if err != nil {
							return err
						}
						defer tx.Rollback()
						if _, err := tx.Exec("INSERT INTO t VALUES (?, ?)", id, w); err != nil {
							return err
						}
						return tx.Commit()
					}()
				}
				k := killedAt.Load()
				switch {
				case err == nil:
					r.acked = append(r.acked, id)
					if k != 0 && !r.okAfterKill {
						r.okAfterKill = true
						r.recoveredIn = time.Since(time.Unix(0, k))
					}
				case ctx.Err() != nil:
				default:
					r.errs = append(r.errs, err)
					if k != 0 {
						r.errsAfterKill++
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		}(w)
	}
	time.Sleep(2 * time.Second)
	old := p.writer(t)
	var victim *testcluster.Node
	for _, n := range c.Nodes {
		if n.Name == old {
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("writer %q is not a cluster node", old)
	}
	killedAt.Store(time.Now().UnixNano())
	victim.Kill()
	time.Sleep(8 * time.Second)
	cancel()
	wg.Wait()
	newWriter := p.writer(t)
	if newWriter == "" || newWriter == old {
		t.Fatalf("writer after killing %s: %q", old, newWriter)
	}
	var acked []int64
	for w, r := range reports {
		t.Logf("worker %d: %d commits, errors %d (after the kill %d), continued %v after the kill", w, len(r.acked), len(r.errs), r.errsAfterKill, r.recoveredIn.Round(time.Millisecond))
		for _, e := range r.errs {
			t.Logf("worker %d error: %s", w, errDesc(e))
		}
		if len(r.errs) > 1 {
			t.Errorf("worker %d got %d errors; at most its in-flight transaction may fail", w, len(r.errs))
		}
		if !r.okAfterKill {
			t.Errorf("worker %d never committed after the writer was killed", w)
		} else if r.recoveredIn > 5*time.Second {
			t.Errorf("worker %d continued only %v after the kill", w, r.recoveredIn)
		}
		acked = append(acked, r.acked...)
	}
	// every acknowledged commit is there
	have := map[int64]bool{}
	for _, id := range qInts(t, db, "SELECT id FROM t") {
		have[id] = true
	}
	for _, id := range acked {
		if !have[id] {
			t.Fatalf("acknowledged row %d missing", id)
		}
	}
	t.Logf("writer %s killed, new writer %s, %d acknowledged rows present", old, newWriter, len(acked))

	// the killed node returns; a fourth node joins: both become readers
	victim.Start()
	n4 := testcluster.NewNode(t, "n4", "--join", c.Nodes[0].PeerAddr)
	n4.Start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var bs []struct {
			Name   string `json:"name"`
			Reader bool   `json:"reader"`
			Writer bool   `json:"writer"`
		}
		if err := p.get("/backends", &bs); err != nil {
			t.Fatal(err)
		}
		readers := map[string]bool{}
		for _, b := range bs {
			if b.Reader {
				readers[b.Name] = true
			}
		}
		if readers[victim.Name] && readers["n4"] && len(readers) == 4 {
			if w := p.writer(t); w != newWriter {
				t.Fatalf("writer changed from %s to %s although it did not fail", newWriter, w)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("proxy did not follow membership: %+v", bs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	nodes := map[string]bool{}
	for i := 0; i < 40; i++ {
		nodes[qStr(t, db, "SELECT @@wsrep_node_name")] = true
	}
	if !nodes["n4"] {
		t.Errorf("no read reached the new node n4: %v", nodes)
	}
}

// TestHAProxyExample runs examples/haproxy/haproxy.cfg with HAProxy in
// front of a cluster: the primary port goes to one node, the replica port
// round-robins over all, and a partitioned node (/health 503) leaves both.
func TestHAProxyExample(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy is not installed (apt-get install -y haproxy)")
	}
	c := testcluster.StartCluster(t, 3, "--enable-fault-injection")
	example, err := os.ReadFile(filepath.Join("..", "examples", "haproxy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	primary, replicas := testcluster.FreePort(t), testcluster.FreePort(t)
	cfg := strings.NewReplacer(
		"127.0.0.1:6446", primary, "127.0.0.1:6447", replicas,
		"127.0.0.1:3307", c.Nodes[0].SQLAddr, "127.0.0.1:3308", c.Nodes[1].SQLAddr, "127.0.0.1:3309", c.Nodes[2].SQLAddr,
		"port 3407", "port "+portOf(c.Nodes[0].HTTPAddr), "port 3408", "port "+portOf(c.Nodes[1].HTTPAddr),
		"port 3409", "port "+portOf(c.Nodes[2].HTTPAddr),
	).Replace(string(example))
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	logf, _ := os.Create(filepath.Join(dir, "haproxy.log"))
	hp := exec.Command(bin, "-db", "-f", cfgPath)
	hp.Stdout, hp.Stderr = logf, logf
	if err := hp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = hp.Process.Kill()
		_ = hp.Wait()
		logf.Close()
	})
	// one fresh connection per query, so HAProxy balances each
	nodeVia := func(addr string) (string, error) {
		d, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/?timeout=2s&readTimeout=5s", addr))
		if err != nil {
			return "", err
		}
		defer d.Close()
		var name string
		err = d.QueryRow("SELECT @@wsrep_node_name").Scan(&name)
		return name, err
	}
	sample := func(addr string, n int) (map[string]int, error) {
		m := map[string]int{}
		for i := 0; i < n; i++ {
			name, err := nodeVia(addr)
			if err != nil {
				return m, err
			}
			m[name]++
		}
		return m, nil
	}
	var w, r map[string]int
	deadline := time.Now().Add(20 * time.Second)
	for {
		w, err = sample(primary, 6)
		if err == nil {
			r, err = sample(replicas, 9)
		}
		if err == nil && len(w) == 1 && w["n1"] == 6 && len(r) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("through HAProxy: primary port %v, replica port %v, err %v", w, r, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("healthy cluster: primary port %v, replica port %v", w, r)

	fault := func(n *testcluster.Node, q string) {
		resp, err := http.Post("http://"+n.HTTPAddr+"/debug/fault?"+q, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	fault(c.Nodes[0], "block=n2,n3")
	fault(c.Nodes[1], "block=n1")
	fault(c.Nodes[2], "block=n1")
	defer func() {
		for _, n := range c.Nodes {
			fault(n, "heal=1")
		}
	}()
	deadline = time.Now().Add(30 * time.Second)
	for c.Nodes[0].Health() != 503 {
		if time.Now().After(deadline) {
			t.Fatal("partitioned n1 still reports healthy")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		w, err = sample(primary, 6)
		if err == nil {
			r, err = sample(replicas, 9)
		}
		if err == nil && len(w) == 1 && w["n2"] == 6 && r["n1"] == 0 && len(r) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after partitioning n1: primary port %v, replica port %v, err %v", w, r, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("n1 partitioned: primary port %v, replica port %v", w, r)
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}
