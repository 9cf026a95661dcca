package systest

import (
	"context"
	"database/sql"
	"sort"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// TestAutoIncrementAcrossNodes checks wsrep_auto_increment_control as a
// Galera user sees it: on an N-node cluster every node reports
// auto_increment_increment = N and its own auto_increment_offset, hands
// out exactly that series (so the keys a driver computes for a multi-row
// INSERT from LAST_INSERT_ID() and the increment, as Connector/J does,
// are the rows' keys), overrides a session's own values at its next
// statement while the control is on, honours them when it is off, and
// follows a membership change.
func TestAutoIncrementAcrossNodes(t *testing.T) {
	c := testcluster.StartCluster(t, 3)
	mustExec(t, c.Nodes[0].DB(""), "CREATE DATABASE ai")
	mustExec(t, c.Nodes[0].DB(""), "CREATE TABLE ai.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, node INT NOT NULL, v INT NOT NULL)")
	awaitApplied(t, c)

	// step returns the session's increment and offset, and checks that
	// the global values agree (as they do while the control is on).
	step := func(db queryer) (inc, off int64) {
		t.Helper()
		var ginc, goff int64
		if err := db.QueryRowContext(context.Background(), "SELECT @@auto_increment_increment, @@auto_increment_offset, "+
			"@@global.auto_increment_increment, @@global.auto_increment_offset").Scan(&inc, &off, &ginc, &goff); err != nil {
			t.Fatal(err)
		}
		if (ginc != inc || goff != off) && qInt(t, db, "SELECT @@wsrep_auto_increment_control") == 1 {
			t.Fatalf("session auto_increment_increment/offset %d/%d, global %d/%d", inc, off, ginc, goff)
		}
		return inc, off
	}
	// insertRows inserts n rows in one statement on db and checks that
	// row i has the key LAST_INSERT_ID() + i*inc, in the series of off.
	insertRows := func(db *sql.Conn, node, n int, inc, off int64) {
		t.Helper()
		q := "INSERT INTO ai.t (node, v) VALUES (?, 0)"
		args := []any{node}
		for i := 1; i < n; i++ {
			q += ", (?, ?)"
			args = append(args, node, i)
		}
		first, err := xexec(t, db, q, args...).LastInsertId()
		if err != nil {
			t.Fatal(err)
		}
		if off > inc {
			off = 0 // ignored, as in MySQL
		}
		for i := 0; i < n; i++ {
			want := first + int64(i)*inc
			if got := qInt(t, db, "SELECT id FROM ai.t WHERE node = ? AND v = ? ORDER BY id DESC LIMIT 1", node, i); got != want {
				t.Fatalf("node %d, row %d of a %d-row insert: id %d, want LAST_INSERT_ID() %d + %d*%d = %d", node, i, n, got, first, i, inc, want)
			}
			if want%inc != off%inc {
				t.Fatalf("node %d: id %d is not in the series of offset %d, increment %d", node, want, off, inc)
			}
		}
	}

	var offsets []int64
	conns := make([]*sql.Conn, 3)
	for i, n := range c.Nodes {
		conns[i] = conn(t, n.DB(""))
		inc, off := step(conns[i])
		if inc != 3 {
			t.Fatalf("node %d: auto_increment_increment %d on a 3-node cluster, want 3", i+1, inc)
		}
		offsets = append(offsets, off)
		insertRows(conns[i], i+1, 4, inc, off)
	}
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
	if offsets[0] != 1 || offsets[1] != 2 || offsets[2] != 3 {
		t.Fatalf("auto_increment_offset of the nodes %v, want 1, 2 and 3", offsets)
	}

	// with the control on, a session's own values last one statement
	a := conns[0]
	inc, off := step(a)
	xexec(t, a, "SET SESSION auto_increment_increment = 10")
	if got, _ := step(a); got != inc {
		t.Fatalf("auto_increment_increment %d after SET SESSION with wsrep_auto_increment_control on, want the cluster's %d", got, inc)
	}
	insertRows(a, 1, 3, inc, off)

	// with it off, MySQL's rules: the session's values count
	xexec(t, a, "SET GLOBAL wsrep_auto_increment_control = OFF")
	xexec(t, a, "SET SESSION auto_increment_increment = 10")
	xexec(t, a, "SET SESSION auto_increment_offset = 7")
	if inc, off := step(a); inc != 10 || off != 7 {
		t.Fatalf("auto_increment_increment/offset %d/%d with the control off, want the session's 10/7", inc, off)
	}
	insertRows(a, 1, 3, 10, 7)
	xexec(t, a, "SET SESSION auto_increment_offset = 12") // above the increment: ignored
	insertRows(a, 1, 2, 10, 12)
	xexec(t, a, "SET GLOBAL wsrep_auto_increment_control = ON")
	if got, gotOff := step(a); got != inc || gotOff != off {
		t.Fatalf("auto_increment_increment/offset %d/%d after the control is back on, want the cluster's %d/%d", got, gotOff, inc, off)
	}

	// a node leaves: the two others space their values by 2
	if out, err := testcluster.Command(t, "leave", "--http-addr", c.Nodes[2].HTTPAddr); err != nil {
		t.Fatalf("certus leave: %v: %s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		inc, _ := step(a)
		if inc == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("auto_increment_increment %d 20 s after a node left a 3-node cluster, want 2", inc)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var two []int64
	for i := 0; i < 2; i++ {
		inc, off := step(conns[i])
		if inc != 2 {
			t.Fatalf("node %d: auto_increment_increment %d after a node left, want 2", i+1, inc)
		}
		two = append(two, off)
		insertRows(conns[i], i+1, 3, inc, off)
	}
	if two[0]+two[1] != 3 {
		t.Fatalf("offsets %v of the two remaining nodes, want 1 and 2", two)
	}
	// every key is unique and every node holds every row
	for i := 0; i < 2; i++ {
		xexec(t, conns[i], "SET SESSION wsrep_sync_wait = 1")
		if n, d := qInt(t, conns[i], "SELECT COUNT(*) FROM ai.t"), qInt(t, conns[i], "SELECT COUNT(DISTINCT id) FROM ai.t"); n != d || n != 3*4+3+3+2+2*3 {
			t.Fatalf("node %d: %d rows, %d distinct ids, want %d of each", i+1, n, d, 3*4+3+3+2+2*3)
		}
	}
	// and CHECKSUM TABLE, as a Galera DBA compares nodes, agrees
	var sums []string
	for i := 0; i < 2; i++ {
		r, err := runStmt(context.Background(), conns[i], true, "CHECKSUM TABLE ai.t")
		if err != nil || r.Err != 0 || len(r.Rows) != 1 || r.Rows[0][0] != "'ai.t'" || r.Rows[0][1] == "NULL" {
			t.Fatalf("CHECKSUM TABLE ai.t on node %d: %v %+v", i+1, err, r)
		}
		sums = append(sums, r.Rows[0][1])
	}
	if sums[0] != sums[1] {
		t.Fatalf("CHECKSUM TABLE ai.t differs between the nodes: %v", sums)
	}
}
