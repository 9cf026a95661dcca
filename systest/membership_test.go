package systest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// writer inserts rows through db until stopped and remembers which
// inserts were acknowledged.
type writer struct {
	stop   context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  []int64
	errors int
}

func startWriter(db *sql.DB, table string, first int64) *writer {
	ctx, cancel := context.WithCancel(context.Background())
	w := &writer{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for id := first; ctx.Err() == nil; id++ {
			c, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := db.ExecContext(c, "INSERT INTO "+table+" (id, v) VALUES (?, ?)", id, strings.Repeat("w", 100))
			cancel()
			w.mu.Lock()
			if err == nil {
				w.acked = append(w.acked, id)
			} else if ctx.Err() == nil {
				w.errors++
			}
			w.mu.Unlock()
			if err != nil {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	return w
}

func (w *writer) finish() []int64 {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int64(nil), w.acked...)
}

func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// loadRows inserts n rows of size bytes each into table, in batches.
func loadRows(t *testing.T, db *sql.DB, table string, first, n, size int) {
	t.Helper()
	const batch = 50
	pad := strings.Repeat("x", size)
	for i := 0; i < n; i += batch {
		var b strings.Builder
		fmt.Fprintf(&b, "INSERT INTO %s (id, v) VALUES ", table)
		for j := i; j < min(i+batch, n); j++ {
			if j > i {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "(%d, '%s')", first+j, pad)
		}
		xexec(t, db, b.String())
	}
}

// sstInfo reads the "sst" object of a node's /status.
func sstInfo(n *testcluster.Node) map[string]any {
	st, err := n.Status()
	if err != nil {
		return nil
	}
	m, _ := st["sst"].(map[string]any)
	return m
}

func num(m map[string]any, k string) float64 {
	f, _ := m[k].(float64)
	return f
}

// logHas reports whether the node's log contains s.
func logHas(n *testcluster.Node, s string) bool {
	b, _ := os.ReadFile(n.LogPath)
	return strings.Contains(string(b), s)
}

// requireRows fails unless every id is in table on db.
func requireRows(t *testing.T, db *sql.DB, table string, ids []int64) {
	t.Helper()
	have := map[int64]bool{}
	for _, id := range qInts(t, db, "SELECT id FROM "+table) {
		have[id] = true
	}
	for _, id := range ids {
		if !have[id] {
			t.Fatalf("acknowledged row %d missing from %s", id, table)
		}
	}
}

// TestJoinByStateTransfer joins a fourth node while writes go on. The
// members keep little log (--gcache-size), so the joiner gets a state
// transfer (SST), not the log (IST). It is killed part way through the
// transfer; restarted, it resumes where it stopped, reaches Synced and
// holds exactly what the others hold.
func TestJoinByStateTransfer(t *testing.T) {
	flags := []string{"--gcache-size", "256KB", "--sst-max-rate", "1MB"}
	c := testcluster.StartCluster(t, 3, flags...)
	db := c.Nodes[0].DB("")
	mustExec(t, db, "CREATE DATABASE m")
	mustExec(t, db, "CREATE TABLE m.t (id BIGINT PRIMARY KEY, v TEXT)")
	db = c.Nodes[0].DB("m")
	loadRows(t, db, "t", 1, 3000, 2000) // ~6 MB: several seconds at 1 MB/s
	w := startWriter(c.Nodes[1].DB("m"), "t", 1_000_000)

	n4 := testcluster.NewNode(t, "n4", append(flags, "--join", c.Nodes[0].PeerAddr)...)
	if err := n4.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	var total float64
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := sstInfo(n4)
		if s != nil && s["active"] == true && num(s, "percent") >= 25 {
			total = num(s, "total")
			t.Logf("joiner at %.0f%% of %.1f MB: killing it", num(s, "percent"), total/1e6)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no state transfer seen on the joiner: %v\n%s", s, n4.LogTail(30))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, _ := n4.Status(); st != nil {
		if state, _ := st["state"].(string); !strings.HasPrefix(state, "Joining: receiving state transfer") {
			t.Errorf("wsrep_local_state_comment during the transfer: %q", state)
		}
	}
	n4.Kill()
	if !logHas(n4, "receiving a state transfer") {
		t.Fatalf("the joiner did not choose a state transfer:\n%s", n4.LogTail(30))
	}
	n4.Start() // waits until Synced
	s := sstInfo(n4)
	resumed := num(s, "resumed_bytes")
	if !logHas(n4, "resuming state transfer") || resumed <= 0 {
		t.Fatalf("the transfer did not resume (resumed %v bytes):\n%s", resumed, n4.LogTail(40))
	}
	t.Logf("resumed after %.1f MB of %.1f MB: %.0f%% of the state sent again", resumed/1e6, num(s, "total")/1e6, 100*(1-resumed/num(s, "total")))
	time.Sleep(time.Second)
	acked := w.finish()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged during the join")
	}
	all := &testcluster.Cluster{Nodes: append(append([]*testcluster.Node{}, c.Nodes...), n4)}
	requireIdentical(t, all)
	requireRows(t, n4.DB("m"), "t", acked)
	t.Logf("%d writes acknowledged during the join, %d errors; 4 nodes identical", len(acked), w.errors)
}

// TestCatchUpFromLog restarts a node that missed a few writes: the log
// still has them, so it catches up from the log (IST) without a state
// transfer; then one that missed more than the log keeps gets one (SST).
func TestCatchUpFromLog(t *testing.T) {
	c := testcluster.StartCluster(t, 3, "--gcache-size", "256KB")
	db := c.Nodes[0].DB("")
	mustExec(t, db, "CREATE DATABASE ist")
	mustExec(t, db, "CREATE TABLE ist.t (id BIGINT PRIMARY KEY, v TEXT)")
	db = c.Nodes[0].DB("ist")
	n3 := c.Nodes[2]

	n3.Stop()
	loadRows(t, db, "t", 1, 100, 100) // ~10 KB of log: kept
	n3.Start()
	requireIdentical(t, c)
	if logHas(n3, "receiving a state transfer") {
		t.Fatalf("a state transfer for a gap the log still holds:\n%s", n3.LogTail(20))
	}

	n3.Stop()
	loadRows(t, db, "t", 1000, 2000, 1000) // ~2 MB of log: more than is kept
	n3.Start()
	requireIdentical(t, c)
	if !logHas(n3, "receiving a state transfer") {
		t.Fatalf("no state transfer although the log no longer has the gap:\n%s", n3.LogTail(20))
	}
}

// commitProbe commits a row per 20 ms on each given node and records, per
// node, the commits and the longest time between two of them.
type commitProbe struct {
	stop    context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	commits map[string]int
	maxGap  map[string]time.Duration
	acked   []int64
}

func startProbe(t *testing.T, nodes []*testcluster.Node, table string) *commitProbe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &commitProbe{stop: cancel, commits: map[string]int{}, maxGap: map[string]time.Duration{}}
	for i, n := range nodes {
		// its own pool: a node's pools close when the node stops, the
		// probe must outlive restarts
		db, err := sql.Open("mysql", n.DSN("m"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		p.wg.Add(1)
		go func(i int, name string) {
			defer p.wg.Done()
			last := time.Now()
			for id := int64(i) << 40; ctx.Err() == nil; id++ {
				c, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := db.ExecContext(c, "INSERT INTO "+table+" (id, v) VALUES (?, 'p')", id)
				cancel()
				p.mu.Lock()
				if err == nil {
					p.commits[name]++
					p.acked = append(p.acked, id)
					p.maxGap[name] = max(p.maxGap[name], time.Since(last))
					last = time.Now()
				}
				p.mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		}(i, n.Name)
	}
	return p
}

// snapshot returns the commits so far per node.
func (p *commitProbe) snapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.commits {
		out[k] = v
	}
	return out
}

func (p *commitProbe) finish() []int64 {
	p.stop()
	p.wg.Wait()
	return p.acked
}

// TestPausedLeader stops the leader with SIGSTOP under load (a node alive
// on the network but not working): the others elect a new leader and keep
// committing within about an election timeout; resumed, it catches up.
func TestPausedLeader(t *testing.T) {
	pause := durationEnv("CERTUS_PAUSE_DURATION", 8*time.Second)
	c := testcluster.StartCluster(t, 3)
	mustExec(t, c.Nodes[0].DB(""), "CREATE DATABASE m")
	mustExec(t, c.Nodes[0].DB(""), "CREATE TABLE m.t (id BIGINT PRIMARY KEY, v TEXT)")
	var leader *testcluster.Node
	var others []*testcluster.Node
	for _, n := range c.Nodes {
		st, err := n.Status()
		if err != nil {
			t.Fatal(err)
		}
		if st["leader"] == st["id"] {
			leader = n
		} else {
			others = append(others, n)
		}
	}
	if leader == nil {
		t.Fatal("no leader")
	}
	p := startProbe(t, others, "m.t")
	// a causal reader on the leader, connected before it stops
	reader, err := leader.DB("m").Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, err := reader.ExecContext(context.Background(), "SET SESSION wsrep_sync_wait = 1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	before := p.snapshot()
	leader.Pause()
	p.mu.Lock()
	for k := range p.maxGap {
		p.maxGap[k] = 0
	}
	p.mu.Unlock()
	time.Sleep(pause)
	during := p.snapshot()
	// a read sent to the stopped leader after the others committed a row:
	// once resumed, the node still believes it leads, and its lease
	// expired long ago; it must see the row or fail, never miss it
	p.mu.Lock()
	last := p.acked[len(p.acked)-1]
	p.mu.Unlock()
	read := make(chan error, 1)
	go func() {
		var n int
		err := reader.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM t WHERE id = ?", last).Scan(&n)
		if err == nil && n != 1 {
			err = fmt.Errorf("stale read: row %d, acknowledged before the read was sent, is missing", last)
		} else if err != nil {
			t.Logf("the read sent to the stopped leader failed (allowed): %v", err)
			err = nil
		}
		read <- err
	}()
	time.Sleep(100 * time.Millisecond) // the query reaches the stopped node's socket
	leader.Resume()
	if err := <-read; err != nil {
		t.Error(err)
	}
	time.Sleep(time.Second)
	acked := p.finish()
	for _, n := range others {
		tps := float64(during[n.Name]-before[n.Name]) / pause.Seconds()
		t.Logf("%s: %.0f commits/s while the leader %s was stopped (%v), longest pause %v", n.Name, tps, leader.Name, pause, p.maxGap[n.Name].Round(time.Millisecond))
		if during[n.Name] == before[n.Name] {
			t.Errorf("%s committed nothing while the leader was stopped", n.Name)
		}
		if p.maxGap[n.Name] > 4*time.Second {
			t.Errorf("%s stalled %v (the election timeout is 1s)", n.Name, p.maxGap[n.Name])
		}
	}
	requireIdentical(t, c)
	requireRows(t, leader.DB("m"), "t", acked)
}

// TestRollingRestart restarts the three nodes one at a time under load:
// the cluster stays primary (writes keep succeeding on the running nodes)
// and no acknowledged commit is lost.
func TestRollingRestart(t *testing.T) {
	c := testcluster.StartCluster(t, 3)
	mustExec(t, c.Nodes[0].DB(""), "CREATE DATABASE m")
	mustExec(t, c.Nodes[0].DB(""), "CREATE TABLE m.t (id BIGINT PRIMARY KEY, v TEXT)")
	p := startProbe(t, c.Nodes, "m.t")
	for _, n := range c.Nodes {
		time.Sleep(time.Second)
		before := p.snapshot()
		n.Stop()
		time.Sleep(time.Second)
		during := p.snapshot()
		progressed := false
		for _, o := range c.Nodes {
			if o != n && during[o.Name] > before[o.Name] {
				progressed = true
			}
		}
		if !progressed {
			t.Fatalf("no commit while %s was down", n.Name)
		}
		n.Start()
	}
	time.Sleep(time.Second)
	acked := p.finish()
	requireIdentical(t, c)
	for _, n := range c.Nodes {
		requireRows(t, n.DB("m"), "t", acked)
	}
	t.Logf("%d commits acknowledged during the rolling restart, none lost", len(acked))
}

// TestArbitrator runs two data nodes and an arbitrator: killing either
// data node leaves a primary component, so the survivor keeps committing.
func TestArbitrator(t *testing.T) {
	c := testcluster.StartCluster(t, 2)
	arb := testcluster.NewNode(t, "garb")
	args := []string{"arbitrator", "--name", "garb", "--data-dir", arb.DataDir, "--peer-addr", arb.PeerAddr,
		"--http-addr", arb.HTTPAddr, "--join", c.Nodes[0].PeerAddr}
	if err := arb.StartCommand(args...); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := c.Nodes[0].Status()
		if err == nil && clusterSize(t, c.Nodes[0].DB("")) == "3" {
			t.Logf("cluster of 2 data nodes and an arbitrator: %v", st["members"])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the arbitrator did not become a voter:\n%s", arb.LogTail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	db := c.Nodes[0].DB("")
	mustExec(t, db, "CREATE DATABASE m")
	mustExec(t, db, "CREATE TABLE m.t (id BIGINT PRIMARY KEY, v TEXT)")
	for round, victim := range []int{1, 0} {
		survivor := c.Nodes[1-victim]
		c.Nodes[victim].Kill()
		sdb := survivor.DB("m")
		deadline := time.Now().Add(15 * time.Second)
		for {
			_, err := sdb.Exec("INSERT INTO t VALUES (?, 'after the loss of a data node')", round)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s cannot commit after %s was killed: %v\n%s", survivor.Name, c.Nodes[victim].Name, err, survivor.LogTail(20))
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("%s killed: %s keeps committing with the arbitrator", c.Nodes[victim].Name, survivor.Name)
		c.Nodes[victim].Start()
		if err := c.Nodes[victim].WaitSynced(30 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	requireIdentical(t, c)
	if n := qInt(t, c.Nodes[0].DB("m"), "SELECT COUNT(*) FROM t"); n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
}

// TestLeave removes a node with `certus leave`: the others go on as a
// cluster of two, and the node refuses to start again on its old data dir.
func TestLeave(t *testing.T) {
	c := testcluster.StartCluster(t, 3)
	n3 := c.Nodes[2]
	out, err := testcluster.Command(t, "leave", "--http-addr", n3.HTTPAddr)
	if err != nil {
		t.Fatalf("certus leave: %v: %s\n%s", err, out, n3.LogTail(20))
	}
	deadline := time.Now().Add(20 * time.Second)
	for n3.Running() {
		if time.Now().After(deadline) {
			t.Fatalf("the node did not stop after leaving:\n%s", n3.LogTail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	db := c.Nodes[0].DB("")
	if size := clusterSize(t, db); size != "2" {
		t.Fatalf("wsrep_cluster_size %s after a node left, want 2", size)
	}
	mustExec(t, db, "CREATE DATABASE m")
	c.Nodes[1].Kill() // one of two: no quorum now (a cluster of 2 needs both)
	c.Nodes[1].Start()
	mustExec(t, c.Nodes[1].DB(""), "CREATE TABLE m.t (id INT PRIMARY KEY)")
	if err := n3.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for !logHas(n3, "left the cluster") {
		if time.Now().After(deadline) {
			t.Fatalf("restarting a node that left: no clear error:\n%s", n3.LogTail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clusterSize is wsrep_cluster_size as the node reports it.
func clusterSize(t *testing.T, db *sql.DB) string {
	return qMap(t, db, "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'")["wsrep_cluster_size"]
}

// waitClusterSize waits until the node reports wsrep_cluster_size want.
func waitClusterSize(t *testing.T, db *sql.DB, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		size := clusterSize(t, db)
		if size == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("wsrep_cluster_size %s after %v, want %s", size, timeout, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReplaceLostNode: a node whose data dir was lost starts again under
// its name and address with an empty one. It replaces its old self, once
// the others no longer hear from that, and gets the data by state
// transfer, as a Galera node with a wiped data dir does; before, the join
// was refused (a member with that name exists) until an operator removed
// the old member.
func TestReplaceLostNode(t *testing.T) {
	c := testcluster.StartCluster(t, 3)
	db := c.Nodes[0].DB("")
	mustExec(t, db, "CREATE DATABASE r")
	mustExec(t, db, "CREATE TABLE r.t (id INT PRIMARY KEY)")
	mustExec(t, db, "INSERT INTO r.t VALUES (1), (2)")
	n3 := c.Nodes[2]
	n3.Kill()
	if err := os.RemoveAll(n3.DataDir); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "INSERT INTO r.t VALUES (3)")
	n3.Start()
	waitClusterSize(t, db, "3", 20*time.Second)
	sw := conn(t, n3.DB(""))
	xexec(t, sw, "SET SESSION wsrep_sync_wait = 1")
	if n := qInt(t, sw, "SELECT COUNT(*) FROM r.t"); n != 3 {
		t.Fatalf("the replacement node has %d rows, want 3", n)
	}
	var members []struct {
		Name string `json:"name"`
	}
	st, err := c.Nodes[0].Status()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(st["members"])
	if err := json.Unmarshal(b, &members); err != nil || len(members) != 3 {
		t.Fatalf("members after the replacement: %s (%v), want n1, n2, n3", b, err)
	}
	requireIdentical(t, c)
	// another node (another address) under a member's name is refused
	imp := testcluster.NewNode(t, "n2", "--join", c.Nodes[0].PeerAddr)
	if err := imp.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !logHas(imp, "a member with this name already exists") {
		if time.Now().After(deadline) {
			t.Fatalf("a second n2 was not refused:\n%s", imp.LogTail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitClusterSize(t, db, "3", 5*time.Second)
}

// TestLead moves leadership to each node in turn with `certus lead` while
// a probe commits on every node: every node must report the new leader,
// and no acknowledged commit may be lost.
func TestLead(t *testing.T) {
	c := testcluster.StartCluster(t, 3)
	mustExec(t, c.Nodes[0].DB(""), "CREATE DATABASE m")
	mustExec(t, c.Nodes[0].DB(""), "CREATE TABLE m.t (id BIGINT PRIMARY KEY, v TEXT)")
	p := startProbe(t, c.Nodes, "m.t")
	for _, i := range []int{2, 1, 0, 2} {
		n := c.Nodes[i]
		out, err := testcluster.Command(t, "lead", "--http-addr", n.HTTPAddr)
		if err != nil {
			t.Fatalf("certus lead on %s: %v: %s\n%s", n.Name, err, out, n.LogTail(20))
		}
		st, err := n.Status()
		if err != nil {
			t.Fatal(err)
		}
		id := st["id"]
		if st["leader"] != id {
			t.Fatalf("certus lead on %s returned (%s) but it reports leader %v, its id is %v", n.Name, strings.TrimSpace(out), st["leader"], id)
		}
		deadline := time.Now().Add(5 * time.Second)
		for _, o := range c.Nodes {
			for {
				s, err := o.Status()
				if err != nil {
					t.Fatal(err)
				}
				if s["leader"] == id {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s leads, but %s reports leader %v", n.Name, o.Name, s["leader"])
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		time.Sleep(500 * time.Millisecond) // commits under the new leader
	}
	acked := p.finish()
	requireIdentical(t, c)
	for _, n := range c.Nodes {
		requireRows(t, n.DB("m"), "t", acked)
	}
	t.Logf("%d commits acknowledged while leadership moved, none lost", len(acked))
}
