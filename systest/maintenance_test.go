package systest

import (
	"context"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// TestMaintenance takes a node out of service as a Galera operator does:
// wsrep_desync (the node shows Donor/Desynced and fails /health, which
// HAProxy and certus proxy follow, yet serves whoever still asks),
// wsrep_reject_queries = ALL (queries get 1047 while SET, SHOW and
// variable reads work, so the operator can turn it back) and ALL_KILL
// (client connections are closed at once). Replication goes on meanwhile.
func TestMaintenance(t *testing.T) {
	c := testcluster.StartCluster(t, 3)
	n1, n2 := c.Nodes[0], c.Nodes[1]
	mustExec(t, n1.DB(""), "CREATE DATABASE m")
	mustExec(t, n1.DB(""), "CREATE TABLE m.t (id INT PRIMARY KEY)")
	awaitApplied(t, c)
	admin := conn(t, n2.DB(""))
	comment := func() string {
		return qMap(t, admin, "SHOW STATUS LIKE 'wsrep_local_state_comment'")["wsrep_local_state_comment"]
	}
	// health waits briefly for /health of n2 to answer code.
	health := func(code int, what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for n2.Health() != code {
			if time.Now().After(deadline) {
				t.Fatalf("%s: /health answers %d, want %d", what, n2.Health(), code)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	xexec(t, admin, "SET GLOBAL wsrep_desync = ON")
	if got := comment(); got != "Donor/Desynced" {
		t.Fatalf("wsrep_local_state_comment %q with wsrep_desync on, want Donor/Desynced", got)
	}
	health(503, "desynced")
	if ready := qMap(t, admin, "SHOW STATUS LIKE 'wsrep_ready'")["wsrep_ready"]; ready != "ON" {
		t.Fatalf("wsrep_ready %q on a desynced node, want ON (it still serves, as in Galera)", ready)
	}
	mustExec(t, n1.DB(""), "INSERT INTO m.t VALUES (1)")
	xexec(t, admin, "SET SESSION wsrep_sync_wait = 1")
	if n := qInt(t, admin, "SELECT COUNT(*) FROM m.t"); n != 1 {
		t.Fatalf("a desynced node serves %d rows, want 1", n)
	}
	xexec(t, admin, "SET GLOBAL wsrep_desync = OFF")
	if got := comment(); got != "Synced" {
		t.Fatalf("wsrep_local_state_comment %q after wsrep_desync off, want Synced", got)
	}
	health(200, "after desync")

	other := conn(t, n2.DB(""))
	xexec(t, admin, "SET GLOBAL wsrep_reject_queries = ALL") // a bare ALL, as MariaDB takes it
	if v := qStr(t, admin, "SELECT @@wsrep_reject_queries"); v != "ALL" {
		t.Fatalf("@@wsrep_reject_queries = %q, want ALL", v)
	}
	wantErr(t, tryExec(other, "SELECT COUNT(*) FROM m.t"), 1047, "08S01")
	wantErr(t, tryExec(other, "INSERT INTO m.t VALUES (2)"), 1047, "08S01")
	health(503, "rejecting queries")
	if got := comment(); got != "Synced" {
		t.Fatalf("wsrep_local_state_comment %q while rejecting queries, want Synced (it still applies)", got)
	}
	mustExec(t, n1.DB(""), "INSERT INTO m.t VALUES (3)")
	xexec(t, admin, "SET GLOBAL wsrep_reject_queries = NONE")
	health(200, "after reject_queries NONE")
	awaitApplied(t, c) // other reads without a causal wait
	if n := qInt(t, other, "SELECT COUNT(*) FROM m.t"); n != 2 {
		t.Fatalf("%d rows after the node served again, want 2", n)
	}

	// ALL_KILL closes every client connection, the one that set it too
	if err := tryExec(admin, "SET GLOBAL wsrep_reject_queries = ALL_KILL"); err == nil {
		t.Logf("the SET's own answer arrived before its connection closed")
	}
	deadline := time.Now().Add(5 * time.Second)
	for other.PingContext(context.Background()) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("a client connection survived wsrep_reject_queries = ALL_KILL")
		}
		time.Sleep(50 * time.Millisecond)
	}
	fresh := conn(t, n2.DB(""))
	wantErr(t, tryExec(fresh, "SELECT COUNT(*) FROM m.t"), 1047, "08S01")
	xexec(t, fresh, "SET GLOBAL wsrep_reject_queries = NONE")
	if n := qInt(t, fresh, "SELECT COUNT(*) FROM m.t"); n != 2 {
		t.Fatalf("%d rows after ALL_KILL and NONE, want 2", n)
	}
	health(200, "after ALL_KILL and NONE")
}

// TestDonorRejectsQueries: with wsrep_sst_donor_rejects_queries on, the
// node serving a state transfer refuses queries (1047) and fails /health
// for as long as it serves, so clients go elsewhere; the other member
// keeps serving, and the donor serves again once the joiner has its data.
func TestDonorRejectsQueries(t *testing.T) {
	flags := []string{"--gcache-size", "256KB", "--sst-max-rate", "1MB"}
	c := testcluster.StartCluster(t, 2, flags...)
	mustExec(t, c.Nodes[0].DB(""), "CREATE DATABASE m")
	mustExec(t, c.Nodes[0].DB(""), "CREATE TABLE m.t (id BIGINT PRIMARY KEY, v TEXT)")
	loadRows(t, c.Nodes[0].DB("m"), "t", 1, 2000, 2000) // ~4 MB: seconds at 1 MB/s
	for _, n := range c.Nodes {
		mustExec(t, n.DB(""), "SET GLOBAL wsrep_sst_donor_rejects_queries = ON")
	}
	n3 := testcluster.NewNode(t, "n3", append(flags, "--join", c.Nodes[0].PeerAddr)...)
	if err := n3.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	// during the transfer: one member refuses, the other serves
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := sstInfo(n3)
		if s != nil && s["active"] == true && num(s, "percent") >= 10 && num(s, "percent") <= 80 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no state transfer seen on the joiner: %v\n%s", s, n3.LogTail(30))
		}
		time.Sleep(50 * time.Millisecond)
	}
	refused, served := 0, 0
	for _, n := range c.Nodes {
		err := tryExec(n.DB("m"), "SELECT COUNT(*) FROM t")
		if code, _ := mysqlErr(err); code == 1047 {
			refused++
			if h := n.Health(); h != 503 {
				t.Errorf("%s refuses queries as a donor, but /health answers %d", n.Name, h)
			}
		} else if err == nil {
			served++
		} else {
			t.Fatalf("%s: %v", n.Name, err)
		}
	}
	if refused != 1 || served != 1 {
		t.Fatalf("during the state transfer %d members refused queries and %d served, want 1 and 1", refused, served)
	}
	if err := n3.WaitSynced(60 * time.Second); err != nil {
		t.Fatalf("joiner: %v\n%s", err, n3.LogTail(30))
	}
	deadline = time.Now().Add(10 * time.Second)
	for _, n := range c.Nodes {
		for tryExec(n.DB("m"), "SELECT COUNT(*) FROM t") != nil {
			if time.Now().After(deadline) {
				t.Fatalf("%s still refuses queries after the transfer", n.Name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
