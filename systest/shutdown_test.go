package systest

import "testing"

// TestCleanShutdownAfterScans runs reads of every scan shape through the
// general and the fast path, then stops the node: its storage must close
// with no iterator left open (a query that leaked one made pebble report
// "leaked iterators" at shutdown).
func TestCleanShutdownAfterScans(t *testing.T) {
	n, db := startNode(t, "n1", "d1")
	c := conn(t, db)
	xexec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, k INT, u INT, v VARCHAR(10), KEY (k), UNIQUE KEY (u))")
	xexec(t, c, "INSERT INTO t VALUES (1,1,1,'a'),(2,2,2,'b'),(3,3,3,'c')")
	queries := []string{
		"SELECT * FROM t",
		"SELECT * FROM t ORDER BY id",
		"SELECT * FROM t ORDER BY id DESC",
		"SELECT * FROM d1.t ORDER BY id",
		"SELECT * FROM t WHERE id > 1 ORDER BY id",
		"SELECT * FROM t WHERE k IN (1,3) ORDER BY k",
		"SELECT * FROM t WHERE u = 2",
		"SELECT * FROM t ORDER BY id LIMIT 1",
		"SELECT a.id, b.v FROM t a JOIN t b ON a.k = b.id ORDER BY a.id",
		"SELECT COUNT(*), SUM(k) FROM t",
		"SELECT * FROM t WHERE id IN (SELECT k FROM t WHERE u > 1)",
	}
	for _, fast := range []string{"ON", "OFF"} {
		xexec(t, c, "SET certus_fast_path = "+fast)
		for _, q := range queries {
			rows, err := c.QueryContext(t.Context(), q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			for rows.Next() {
			}
			rows.Close()
		}
		xexec(t, c, "BEGIN")
		qInts(t, c, "SELECT id FROM t WHERE id >= 2 ORDER BY id FOR UPDATE")
		xexec(t, c, "UPDATE t SET v = 'x' WHERE k > 1")
		xexec(t, c, "COMMIT")
	}
	c.Close()
	n.Stop() // fails the test on an unclean storage close
}
