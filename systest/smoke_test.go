package systest

import (
	"testing"

	"github.com/certusdb/certus/internal/testcluster"
)

func TestSingleNodeSmoke(t *testing.T) {
	n := testcluster.NewNode(t, "n1")
	n.Start()
	db := n.DB("")
	mustExec(t, db, "CREATE DATABASE app")
	mustExec(t, db, "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, db, "INSERT INTO app.t VALUES (1, 10), (2, 20)")
	var sum int
	if err := db.QueryRow("SELECT SUM(v) FROM app.t").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum != 30 {
		t.Fatalf("sum = %d, want 30", sum)
	}
	// a point read on the fast path (from a statement's second run) fills
	// the row cache, the next is served by it, and a commit's change is
	// read at once
	read := func() int {
		t.Helper()
		var v int
		if err := db.QueryRow("SELECT v FROM app.t WHERE id = 1").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	read()
	read()
	hits := qStatus(t, n, "certus_row_cache_hits")
	if v := read(); v != 10 {
		t.Fatalf("v = %d, want 10", v)
	}
	if got := qStatus(t, n, "certus_row_cache_hits"); got <= hits {
		t.Fatalf("certus_row_cache_hits stayed %d over a second read of a row", got)
	}
	mustExec(t, db, "UPDATE app.t SET v = 11 WHERE id = 1")
	if v := read(); v != 11 {
		t.Fatalf("after UPDATE v = %d, want 11", v)
	}
	// a table made from a query in parentheses, as MySQL takes it (1064
	// from go-mysql-server's parser)
	mustExec(t, db, "CREATE TABLE app.c AS (SELECT id, v FROM app.t WHERE v > 15)")
	mustExec(t, db, "CREATE TABLE app.d (SELECT id FROM app.t)")
	if c, d := qInt(t, db, "SELECT COUNT(*) FROM app.c"), qInt(t, db, "SELECT COUNT(*) FROM app.d"); c != 1 || d != 2 {
		t.Fatalf("CREATE TABLE ... (SELECT ...) made %d and %d rows, want 1 and 2", c, d)
	}
	if code := n.Health(); code != 200 {
		t.Fatalf("/health = %d", code)
	}
}
