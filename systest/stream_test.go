package systest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// TestStreamingReplication runs streaming transactions (wsrep_trx_fragment_unit
// and wsrep_trx_fragment_size, as in Galera) on a 3-node cluster of real
// processes: their fragments are replicated while they run, lock their rows
// on every node and stay invisible until the commit; a rollback, a lost
// conflict or the origin's crash leaves no trace on any node.
func TestStreamingReplication(t *testing.T) {
	// a low threshold: a transaction of more than 64 KiB streams by itself
	c := testcluster.StartCluster(t, 3, "--stream-threshold=64KB")
	n1, n2, n3 := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	const rows = 2000
	mustExec(t, n1.DB(""), "CREATE DATABASE sr")
	mustExec(t, n1.DB(""), "CREATE TABLE sr.t (id INT PRIMARY KEY, c INT NOT NULL, u INT NOT NULL, pad VARCHAR(40), UNIQUE KEY uu (u), KEY kc (c))")
	var q strings.Builder
	q.WriteString("INSERT INTO sr.t VALUES ")
	for i := 0; i < rows; i++ {
		if i > 0 {
			q.WriteString(",")
		}
		fmt.Fprintf(&q, "(%d, 0, %d, 'pad-%d')", i, i, i)
	}
	mustExec(t, n1.DB(""), q.String())
	awaitApplied(t, c)
	state := func(t *testing.T, n *testcluster.Node) string {
		var s string
		if err := adhoc(n, "").QueryRow("SELECT CONCAT(COUNT(*), '/', SUM(c), '/', SUM(u)) FROM sr.t").Scan(&s); err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		return s
	}
	// begin starts a streaming transaction on n that moves every row's c
	// and unique u, with fragments of 100 rows.
	begin := func(t *testing.T, n *testcluster.Node, bump int) (*sql.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		conn, err := n.DB("").Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// the session ends with the test, so a failed check leaves no
		// transaction open on a pooled connection
		t.Cleanup(func() {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			_ = conn.Close()
		})
		for _, s := range []string{"SET SESSION wsrep_trx_fragment_unit = 'rows'", "SET SESSION wsrep_trx_fragment_size = 100", "BEGIN"} {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				t.Fatalf("%s: %s: %v", n.Name, s, err)
			}
		}
		_, err = conn.ExecContext(ctx, fmt.Sprintf("UPDATE sr.t SET c = c + %d, u = u + %d", bump, bump*rows))
		return conn, err
	}
	exec := func(conn *sql.Conn, s string) error {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		_, err := conn.ExecContext(ctx, s)
		return err
	}
	awaitStreams := func(t *testing.T, want int64, nodes ...*testcluster.Node) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for _, n := range nodes {
			for qStatus(t, n, "certus_open_streams") != want {
				if time.Now().After(deadline) {
					t.Fatalf("%s: certus_open_streams = %d, want %d", n.Name, qStatus(t, n, "certus_open_streams"), want)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	// requireState checks every node holds want, and the same data, with
	// no streaming transaction left open
	requireState := func(t *testing.T, want, when string) {
		t.Helper()
		awaitStreams(t, 0, c.Nodes...)
		awaitApplied(t, c)
		for _, n := range c.Nodes {
			if got := state(t, n); got != want {
				t.Fatalf("%s: %s %s, want %s", n.Name, got, when, want)
			}
		}
		requireIdentical(t, c)
	}
	// bumped is the state after k committed bumps of every row
	bumped := func(k int) string {
		return fmt.Sprintf("%d/%d/%d", rows, k*rows, rows*(rows-1)/2+k*rows*rows)
	}
	base := state(t, n1)
	if base != bumped(0) {
		t.Fatalf("loaded %s, want %s", base, bumped(0))
	}

	t.Run("commit", func(t *testing.T) {
		conn, err := begin(t, n2, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := qStatus(t, n2, "certus_streamed_fragments"); got < rows/100-1 {
			t.Fatalf("origin replicated %d fragments before COMMIT, want about %d", got, rows/100)
		}
		awaitStreams(t, 1, n1, n3)
		for _, n := range []*testcluster.Node{n1, n3} {
			if got := state(t, n); got != base {
				t.Fatalf("%s sees %s before the commit, want %s: fragments must stay invisible", n.Name, got, base)
			}
		}
		_, err = adhoc(n1, "").Exec("UPDATE sr.t SET c = 99 WHERE id = 7")
		wantErr(t, err, 1213, "40001")
		_, err = adhoc(n3, "").Exec(fmt.Sprintf("INSERT INTO sr.t VALUES (%d, 0, %d, 'x')", rows+1, rows+5)) // u taken by the stream
		wantErr(t, err, 1213, "40001")
		if err := exec(conn, "COMMIT"); err != nil {
			t.Fatalf("COMMIT: %v", err)
		}
		base = bumped(1)
		requireState(t, base, "after the commit")
	})

	t.Run("rollback", func(t *testing.T) {
		conn, err := begin(t, n3, 1)
		if err != nil {
			t.Fatal(err)
		}
		awaitStreams(t, 1, n1, n2)
		if err := exec(conn, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		awaitStreams(t, 0, n1, n2, n3)
		mustExec(t, n1.DB(""), "UPDATE sr.t SET pad = 'after rollback' WHERE id = 7") // the row is free again
		requireState(t, base, "after ROLLBACK")
	})

	t.Run("conflict", func(t *testing.T) {
		res := make(chan error, 2)
		for _, n := range []*testcluster.Node{n1, n3} {
			go func(n *testcluster.Node) {
				conn, err := begin(t, n, 1)
				if err == nil {
					err = exec(conn, "COMMIT")
				}
				res <- err
			}(n)
		}
		won := 0
		for range 2 {
			err := <-res
			if err == nil {
				won++
			} else if code, _ := mysqlErr(err); code != 1213 {
				t.Errorf("the losing transaction got %v, want 1213", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d of 2 streaming transactions over the same rows committed, want 1", won)
		}
		base = bumped(2)
		requireState(t, base, "(exactly one transaction applied)")
	})

	// streamThenKill starts a streaming transaction on n2, then kills n2
	streamThenKill := func(t *testing.T) {
		t.Helper()
		if _, err := begin(t, n2, 1); err != nil {
			t.Fatal(err)
		}
		awaitStreams(t, 1, n1, n3)
		n2.Kill()
	}

	t.Run("origin crash", func(t *testing.T) {
		streamThenKill(t)
		_, err := adhoc(n1, "").Exec("UPDATE sr.t SET pad = 'origin down' WHERE id = 7")
		wantErr(t, err, 1213, "40001") // locked while its origin may come back
		n2.Start()
		awaitStreams(t, 0, n1, n2, n3)
		mustExec(t, n1.DB(""), "UPDATE sr.t SET pad = 'origin back' WHERE id = 7")
		requireState(t, base, "after the origin's crash")
	})

	t.Run("origin gone", func(t *testing.T) {
		streamThenKill(t)
		start := time.Now()
		// the leader rolls it back once n2 is out of reach for 15 s
		awaitStreams(t, 0, n1, n3)
		t.Logf("rolled back %v after the origin was killed", time.Since(start).Round(time.Second))
		mustExec(t, n1.DB(""), "UPDATE sr.t SET pad = 'origin gone' WHERE id = 7")
		n2.Start()
		requireState(t, base, "after the origin's loss")
	})

	t.Run("automatic", func(t *testing.T) {
		before := qStatus(t, n3, "certus_streamed_transactions")
		mustExec(t, n3.DB(""), "UPDATE sr.t SET c = c + 1, pad = REPEAT('p', 40)") // ~100 KB of changes
		if got := qStatus(t, n3, "certus_streamed_transactions"); got != before+1 {
			t.Fatalf("certus_streamed_transactions %d -> %d: a transaction past --stream-threshold must stream", before, got)
		}
		awaitApplied(t, c)
		requireIdentical(t, c)
	})
}
