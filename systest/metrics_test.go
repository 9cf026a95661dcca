package systest

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// TestMetrics scrapes a node's /metrics as Prometheus would and checks
// them against the ecosystem's conventions and against what ships in
// deploy/: mysqld_exporter's names for the status variables (the Galera
// dashboards' mysql_global_status_wsrep_*), counters that end in _total,
// promtool's lint (when promtool is installed: Debian's prometheus
// package), and every metric the alert rules and the Grafana dashboard
// name present in the scrape.
func TestMetrics(t *testing.T) {
	c := testcluster.StartCluster(t, 2)
	n := c.Nodes[0]
	db := n.DB("")
	mustExec(t, db, "CREATE DATABASE m")
	mustExec(t, db, "CREATE TABLE m.t (id INT PRIMARY KEY)")
	// wsrep_local_commits counts transactions with writes, as Galera's
	// does (ten SELECTs added ten before); wsrep_received the write-sets
	// of other nodes (it counted raft messages)
	commits, received := qStatus(t, n, "wsrep_local_commits"), qStatus(t, n, "wsrep_received")
	for i := 0; i < 10; i++ {
		var one int
		if err := db.QueryRow("SELECT 1 FROM m.t LIMIT 1").Scan(&one); err != nil && err != sql.ErrNoRows {
			t.Fatal(err)
		}
	}
	mustExec(t, db, "INSERT INTO m.t VALUES (1)")
	mustExec(t, c.Nodes[1].DB(""), "INSERT INTO m.t VALUES (2)")
	// wsrep_open_transactions counts the open transactions that wrote
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO m.t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	if open := qStatus(t, n, "wsrep_open_transactions"); open != 1 {
		t.Errorf("wsrep_open_transactions = %d with one transaction that wrote", open)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if open := qStatus(t, n, "wsrep_open_transactions"); open != 0 {
		t.Errorf("wsrep_open_transactions = %d after its rollback", open)
	}
	// a causal read: node 1 has applied node 2's insert
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if _, err = conn.ExecContext(context.Background(), "SET SESSION wsrep_sync_wait = 1"); err == nil {
		err = conn.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM m.t").Scan(&rows)
	}
	conn.Close()
	if err != nil || rows != 2 {
		t.Fatalf("causal read on node 1: %d rows, %v", rows, err)
	}
	if got := qStatus(t, n, "wsrep_local_commits") - commits; got != 1 {
		t.Errorf("wsrep_local_commits grew by %d for ten SELECTs and one INSERT, want 1", got)
	}
	// (the other node's background write-sets, its low watermark
	// reports, count too)
	if got := qStatus(t, n, "wsrep_received") - received; got < 1 || got > 3 {
		t.Errorf("wsrep_received grew by %d for one INSERT on the other node, want 1 to 3", got)
	}
	received = qStatus(t, n, "wsrep_received")
	time.Sleep(1500 * time.Millisecond) // raft heartbeats go on: they counted
	if got := qStatus(t, n, "wsrep_received") - received; got > 2 {
		t.Errorf("wsrep_received grew by %d on an idle cluster in 1.5 s", got)
	}

	checkGaleraStatusNames(t, n)
	types, samples := scrape(t, n.HTTPAddr)

	// the values a Galera dashboard or alert reads
	for series, want := range map[string]float64{
		"mysql_global_status_wsrep_cluster_size":   2,
		"mysql_global_status_wsrep_cluster_status": 1, // Primary
		"mysql_global_status_wsrep_local_state":    4, // Synced
		"mysql_global_status_wsrep_ready":          1,
		`certus_node_state{state="Synced"}`:        1,
		`certus_node_state{state="Joining"}`:       0,
		"certus_cluster_primary":                   1,
		"certus_healthy":                           1,
		"certus_cluster_members":                   2,
	} {
		if got, ok := samples[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	for _, name := range []string{"wsrep_repl_keys", "wsrep_repl_keys_bytes", "wsrep_repl_data_bytes", "wsrep_local_cached_downto", "wsrep_causal_reads", "wsrep_applier_thread_count"} {
		if v := samples["mysql_global_status_"+name]; v < 1 {
			t.Errorf("%s = %v after writes and a causal read", name, v)
		}
	}
	if v := samples["certus_local_commits_total"]; v < 1 {
		t.Errorf("certus_local_commits_total = %v after a committed INSERT", v)
	}
	if _, ok := types["mysql_galera_status_info"]; !ok {
		t.Error("no mysql_galera_status_info")
	}
	documented(t, types)

	if promtool, _ := exec.LookPath("promtool"); promtool != "" {
		if out, err := exec.Command(promtool, "check", "rules", "../deploy/prometheus/certus-alerts.yml").CombinedOutput(); err != nil {
			t.Errorf("promtool check rules: %v\n%s", err, out)
		}
	}

	// every metric the rules and the dashboard name is one the node serves
	exprs := map[string]string{}
	rules, err := os.ReadFile("../deploy/prometheus/certus-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*expr:\s*(.+)$`).FindAllStringSubmatch(string(rules), -1) {
		exprs[m[1]] = "certus-alerts.yml"
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	raw, err := os.ReadFile("../deploy/grafana/certus-dashboard.json")
	if err == nil {
		err = json.Unmarshal(raw, &dash)
	}
	if err != nil {
		t.Fatalf("the dashboard: %v", err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs[tg.Expr] = "certus-dashboard.json: " + p.Title
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("only %d expressions in the rules and the dashboard", len(exprs))
	}
	for expr, where := range exprs {
		names := promqlMetrics(expr)
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", where, expr)
		}
		for _, name := range names {
			if _, ok := types[name]; !ok {
				t.Errorf("%s: %q names %s, which the node does not serve", where, expr, name)
			}
		}
	}
}

// testProxyMetrics: the proxy's admin port serves /health (200 with the
// writer's name) and Prometheus metrics: a series per backend, and
// counters that count.
func testProxyMetrics(t *testing.T, c *testcluster.Cluster) {
	p := startProxy(t, c, "")
	db := p.DB("px", "")
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS pm (id INT PRIMARY KEY)")
	mustExec(t, db, "REPLACE INTO pm VALUES (1)")
	resp, err := http.Get("http://" + p.Admin + "/health")
	if err != nil {
		t.Fatal(err)
	}
	health, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(health), "writer n") {
		t.Errorf("/health = %d %q, want 200 and the writer", resp.StatusCode, health)
	}
	types, samples := scrape(t, p.Admin)
	writers, queries := 0.0, 0.0
	for _, n := range c.Nodes {
		if v := samples[`certus_proxy_backend_up{backend="`+n.Name+`"}`]; v != 1 {
			t.Errorf("certus_proxy_backend_up for %s = %v", n.Name, v)
		}
		writers += samples[`certus_proxy_backend_writer{backend="`+n.Name+`"}`]
		queries += samples[`certus_proxy_backend_queries_total{backend="`+n.Name+`"}`]
	}
	if writers != 1 || queries < 2 {
		t.Errorf("%v writers, %v queries sent to the nodes, want 1 and at least 2", writers, queries)
	}
	if samples["certus_proxy_sessions"] < 1 {
		t.Errorf("certus_proxy_sessions = %v with a session open", samples["certus_proxy_sessions"])
	}
	documented(t, types)
}

// galeraOnly are the status variables of Galera 4 a Certus node does not
// show, and why.
var galeraOnly = map[string]string{
	"wsrep_protocol_version":        "Galera's protocol layers' versions; Certus's peer protocol is its own",
	"wsrep_protocol_application":    "Galera's protocol layers' versions",
	"wsrep_protocol_replicator":     "Galera's protocol layers' versions",
	"wsrep_protocol_gcs":            "Galera's protocol layers' versions",
	"wsrep_local_send_queue_max":    "the send queue is not sampled (its length and average are)",
	"wsrep_local_send_queue_min":    "the send queue is not sampled",
	"wsrep_apply_oooe":              "out-of-order apply is not measured",
	"wsrep_apply_oool":              "out-of-order apply is not measured",
	"wsrep_apply_waits":             "out-of-order apply is not measured",
	"wsrep_commit_oooe":             "commits follow the log's order",
	"wsrep_commit_oool":             "commits follow the log's order",
	"wsrep_cert_interval":           "not measured",
	"wsrep_open_connections":        "Galera's internal connection objects",
	"wsrep_evs_delayed":             "Galera's group communication (EVS); Certus's views are raft's",
	"wsrep_evs_evict_list":          "Galera's group communication (EVS)",
	"wsrep_evs_repl_latency":        "Galera's group communication (EVS)",
	"wsrep_checkpoint_position":     "MariaDB's storage engine checkpoint",
	"wsrep_se_checkpoint":           "MariaDB's storage engine checkpoint",
	"wsrep_rollbacker_thread_count": "no rollbacker thread",
	"wsrep_thread_count":            "Galera's thread accounting",
}

// checkGaleraStatusNames compares the node's wsrep_* status variables
// with the ones Galera 4 shows (testdata/galera4-wsrep-status.txt,
// captured from MariaDB with galera-4 on this machine): each one is
// there, or in galeraOnly with the reason.
func checkGaleraStatusNames(t *testing.T, n *testcluster.Node) {
	t.Helper()
	b, err := os.ReadFile("testdata/galera4-wsrep-status.txt")
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	rows, err := adhoc(n, "").Query("SHOW GLOBAL STATUS LIKE 'wsrep%'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		ours[k] = true
	}
	rows.Close()
	shown, left := 0, 0
	for _, line := range strings.Split(string(b), "\n") {
		name, _, _ := strings.Cut(line, "\t")
		if !strings.HasPrefix(name, "wsrep_") {
			continue
		}
		_, why := galeraOnly[name]
		switch {
		case ours[name] && why:
			t.Errorf("%s is shown now: take it out of galeraOnly", name)
		case ours[name]:
			shown++
		case why:
			left++
		default:
			t.Errorf("%s: Galera 4 shows it, a Certus node does not, and galeraOnly says nothing of it", name)
		}
	}
	t.Logf("of Galera 4's wsrep_* status variables, %d are shown, %d are not (galeraOnly)", shown, left)
}

// scrape reads GET /metrics at addr and checks it (checkExposition).
func scrape(t *testing.T, addr string) (types map[string]string, samples map[string]float64) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %v", resp.StatusCode, err)
	}
	return checkExposition(t, string(body))
}

// documented checks that docs/METRICS.md lists every certus_* metric of
// types.
func documented(t *testing.T, types map[string]string) {
	t.Helper()
	doc, err := os.ReadFile("../docs/METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range types {
		if strings.HasPrefix(name, "certus_") && !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/METRICS.md does not list %s", name)
		}
	}
}

// checkExposition parses a /metrics answer (parseExposition) and checks
// it against Prometheus's conventions: no doubled prefix, counters end in
// _total and nothing else does, and promtool's lint (when promtool is
// installed: Debian's prometheus package) finds nothing but in the
// status variables, which keep their MySQL names as mysqld_exporter's do
// (wsrep_flow_control_paused_ns).
func checkExposition(t *testing.T, body string) (types map[string]string, samples map[string]float64) {
	t.Helper()
	types, samples = parseExposition(t, body)
	for name, typ := range types {
		switch {
		case strings.HasPrefix(name, "certus_certus") || strings.HasPrefix(name, "certus_wsrep"):
			t.Errorf("%s: a doubled prefix", name)
		case typ == "counter" && !strings.HasSuffix(name, "_total"):
			t.Errorf("counter %s does not end in _total", name)
		case typ != "counter" && strings.HasPrefix(name, "certus_") && strings.HasSuffix(name, "_total"):
			t.Errorf("%s %s ends in _total", typ, name)
		}
	}
	promtool, _ := exec.LookPath("promtool")
	if promtool == "" {
		t.Log("promtool not installed (Debian's prometheus package): its checks are left out")
		return types, samples
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, _ := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" && !strings.HasPrefix(line, "mysql_global_status_") {
			t.Errorf("promtool check metrics: %s", line)
		}
	}
	return types, samples
}

// parseExposition reads Prometheus's text format: each metric's type, and
// each series' value (by its text, labels included).
func parseExposition(t *testing.T, body string) (types map[string]string, samples map[string]float64) {
	types, samples = map[string]string{}, map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	return types, samples
}

// promqlMetrics returns the metric names a PromQL expression reads: its
// identifiers that are not functions, keywords, labels or durations.
func promqlMetrics(expr string) []string {
	expr = regexp.MustCompile(`\{[^}]*\}|"[^"]*"|\[[^\]]*\]`).ReplaceAllString(expr, " ")
	expr = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`).ReplaceAllString(expr, " ")
	var out []string
	for _, m := range regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`).FindAllString(expr, -1) {
		switch {
		case strings.HasSuffix(m, "("): // a function
		case m == "and" || m == "or" || m == "unless" || m == "bool" || m == "offset":
		default:
			out = append(out, m)
		}
	}
	return out
}
