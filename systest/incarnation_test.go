package systest

import (
	"fmt"
	"testing"
	"time"
)

// TestRestartDoesNotPinCertification: a restart ends the node's incarnation
// (its origin). Unless the node retires it, the old incarnation's last
// position holds the certification horizon for a whole window, and the
// index keeps every key written meanwhile (and replays them at the next
// restart or state transfer). After a restart, keys written and then left
// idle for a few heartbeats must leave the index.
func TestRestartDoesNotPinCertification(t *testing.T) {
	n, db := startNode(t, "inc1", "inc")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	for i := range 50 {
		xexec(t, db, "INSERT INTO t VALUES (?, 0)", i)
	}
	n.Stop()
	n.Start()
	db = n.DB("inc")
	const rows = 400
	for i := range rows {
		xexec(t, db, "INSERT INTO t VALUES (?, 1)", 1000+i)
	}
	size := func() int64 {
		var name string
		var v int64
		if err := db.QueryRow("SHOW STATUS LIKE 'wsrep_cert_index_size'").Scan(&name, &v); err != nil {
			t.Fatalf("SHOW STATUS: %v", err)
		}
		return v
	}
	if s := size(); s < rows/2 {
		t.Logf("index holds %d keys right after %d inserts", s, rows)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := size()
		if s < rows/4 {
			t.Logf("index down to %d keys", s)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s", fmt.Sprintf("the certification index still holds %d keys 15 s after %d inserts: the restart's earlier incarnation pins its horizon", s, rows))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
