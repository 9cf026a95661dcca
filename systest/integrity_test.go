package systest

import (
	"strings"
	"testing"
)

// TestIntegrity: statements whose answer decides what data an application
// keeps or sees (issue #55's data-loss items).
func TestIntegrity(t *testing.T) {
	_, db := startNode(t, "integrity", "i")

	t.Run("UniqueIndexOverRepeatedRows", func(t *testing.T) {
		// a keyless table keeps equal rows as one with a count: a unique
		// index over them was built, over two equal keys
		c := conn(t, db)
		xexec(t, c, "CREATE TABLE k (a INT, b INT)")
		xexec(t, c, "INSERT INTO k VALUES (1, 1), (1, 1)")
		checkErr(t, tryExec(c, "CREATE UNIQUE INDEX ua ON k (a)"), 1062, "23000", "CREATE UNIQUE INDEX over equal rows")
		checkErr(t, tryExec(c, "ALTER TABLE k ADD UNIQUE KEY ua (a)"), 1062, "23000", "ADD UNIQUE KEY over equal rows")
		if v := qInt(t, c, "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE table_schema = 'i' AND table_name = 'k'"); v != 0 {
			t.Fatalf("%d indexes left behind", v)
		}
		xexec(t, c, "CREATE INDEX a ON k (a)") // not unique: fine
		xexec(t, c, "DELETE FROM k LIMIT 1")
		xexec(t, c, "CREATE UNIQUE INDEX ub ON k (b)")
		checkErr(t, tryExec(c, "INSERT INTO k VALUES (1, 1)"), 1062, "23000", "a repeated row under a unique index")
	})

	t.Run("MultiUpdateKeyConflict", func(t *testing.T) {
		// a table updated through two aliases, one of them changing its
		// primary key: the rows one alias finds move under the other
		c := conn(t, db)
		xexec(t, c, "CREATE TABLE m (pk INT PRIMARY KEY, a INT)")
		xexec(t, c, "INSERT INTO m VALUES (1, 1), (2, 2)")
		checkErr(t, tryExec(c, "UPDATE m AS A, m AS B SET A.pk = 1, B.a = 2"), 1706, "HY000", "two aliases, a primary key")
		checkErr(t, tryExec(c, "UPDATE m AS A JOIN m AS B ON A.pk = B.a SET B.a = 3, A.pk = A.pk + 10"), 1706, "HY000", "a join, a primary key")
		wantRows(t, "m", qLines(t, c, "SELECT pk, a FROM m ORDER BY pk"), []string{"1|1", "2|2"})
		xexec(t, c, "UPDATE m AS A, m AS B SET A.a = 5, B.a = 5 WHERE A.pk = 1 AND B.pk = 2") // no key changed
		wantRows(t, "m", qLines(t, c, "SELECT pk, a FROM m ORDER BY pk"), []string{"1|5", "2|5"})
	})

	t.Run("DuplicateIndexWarning", func(t *testing.T) {
		// 1831 only for an index with the same columns as another
		c := conn(t, db)
		xexec(t, c, "CREATE TABLE w (a INT, b INT, KEY (a), KEY (b))")
		if v := qInt(t, c, "SELECT @@warning_count"); v != 0 {
			t.Fatalf("KEY (a), KEY (b): %d warnings", v)
		}
		xexec(t, c, "CREATE INDEX ab ON w (a, b)")
		if v := qInt(t, c, "SELECT @@warning_count"); v != 0 {
			t.Fatalf("an index on (a, b): %d warnings", v)
		}
		xexec(t, c, "CREATE INDEX a2 ON w (a)")
		if v := qLines(t, c, "SHOW WARNINGS"); len(v) != 1 || !strings.Contains(v[0], "1831") {
			t.Fatalf("a second index on (a): %q", v)
		}
	})

	t.Run("ConsistentSnapshot", func(t *testing.T) {
		// mysqldump --single-transaction: the snapshot is the one of START
		// TRANSACTION WITH CONSISTENT SNAPSHOT, not of the first read
		xexec(t, db, "CREATE TABLE s (id INT PRIMARY KEY)")
		xexec(t, db, "INSERT INTO s VALUES (1)")
		reader, writer := conn(t, db), conn(t, db)
		xexec(t, reader, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
		xexec(t, writer, "INSERT INTO s VALUES (2)")
		if v := qInt(t, reader, "SELECT COUNT(*) FROM s"); v != 1 {
			t.Fatalf("a row committed after the snapshot was seen: %d rows", v)
		}
		xexec(t, reader, "COMMIT")
		// without the clause, as in InnoDB, the snapshot is the first read's
		xexec(t, reader, "START TRANSACTION")
		xexec(t, writer, "INSERT INTO s VALUES (3)")
		if v := qInt(t, reader, "SELECT COUNT(*) FROM s"); v != 3 {
			t.Fatalf("START TRANSACTION then a read: %d rows, want 3", v)
		}
		xexec(t, reader, "COMMIT")
	})
}
