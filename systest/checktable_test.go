package systest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/certusdb/certus/storage"
)

// TestCheckTable runs CHECK TABLE (what mysqlcheck sends) on sound
// tables, on a missing one, and on a table one of whose index entries was
// deleted from the node's storage while it was down: that one is reported
// Corrupt, naming the index.
func TestCheckTable(t *testing.T) {
	n, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, k INT, u VARCHAR(10), KEY kk (k), UNIQUE KEY uu (u))")
	xexec(t, db, "CREATE TABLE e (id INT PRIMARY KEY)")
	for i := 1; i <= 20; i++ {
		xexec(t, db, "INSERT INTO t VALUES (?, ?, ?)", i, i%5, string(rune('a'+i)))
	}
	check := func(q string) []string {
		t.Helper()
		rs, err := db.QueryContext(t.Context(), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rs.Close()
		var out []string
		for rs.Next() {
			var table, op, typ, msg string
			if err := rs.Scan(&table, &op, &typ, &msg); err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.Join([]string{table, op, typ, msg}, " | "))
		}
		return out
	}
	want := "d1.t | check | status | OK\nd1.e | check | status | OK"
	if got := strings.Join(check("CHECK TABLE t, d1.e EXTENDED"), "\n"); got != want {
		t.Errorf("CHECK TABLE on sound tables:\n%s\nwant\n%s", got, want)
	}
	want = "d1.nope | check | Error | Table 'd1.nope' doesn't exist\nd1.nope | check | status | Operation failed"
	if got := strings.Join(check("CHECK TABLE nope"), "\n"); got != want {
		t.Errorf("CHECK TABLE of a missing table:\n%s\nwant\n%s", got, want)
	}

	// delete the first entry of index kk behind the node's back
	n.Stop()
	eng, err := storage.Open(storage.Config{Dir: filepath.Join(n.DataDir, "db")})
	if err != nil {
		t.Fatal(err)
	}
	def, ok := eng.Catalog().TableByName("d1", "t")
	if !ok {
		t.Fatal("table d1.t not in the catalog")
	}
	ix, _ := def.Index("kk")
	prefix := storage.IndexPrefix(def.ID, ix.ID)
	it, err := eng.DB().NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: append(prefix[:len(prefix):len(prefix)], 0xff)})
	if err != nil {
		t.Fatal(err)
	}
	if !it.First() {
		t.Fatal("index kk has no entries")
	}
	key := append([]byte(nil), it.Key()...)
	it.Close()
	if err := eng.DB().Delete(key, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	n.Start()
	db = n.DB("d1")
	got := check("CHECK TABLE t")
	if len(got) < 2 || got[len(got)-1] != "d1.t | check | error | Corrupt" || !strings.Contains(got[0], "Index 'kk' leads to 19 rows, the table has 20") {
		t.Errorf("CHECK TABLE of a table missing an index entry:\n%s", strings.Join(got, "\n"))
	}
}
