package systest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/certusdb/certus/internal/testcluster"
)

// TestTemporaryTables checks CREATE TEMPORARY TABLE as a MySQL user sees
// it: the table belongs to its session, hides a stored table of the same
// name, keeps its rows transactional, enforces its keys, and is gone when
// the session ends.
func TestTemporaryTables(t *testing.T) {
	n, db := startNode(t, "temp", "tt")
	mustExec(t, db, "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20))")
	mustExec(t, db, "INSERT INTO items VALUES (1, 'stored')")

	t.Run("SessionLocal", func(t *testing.T) {
		a, b := conn(t, db), conn(t, db)
		xexec(t, a, "CREATE TEMPORARY TABLE scratch (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10), KEY (v))")
		xexec(t, a, "INSERT INTO scratch (v) VALUES ('x'), ('y')")
		if id := qInt(t, a, "SELECT LAST_INSERT_ID()"); id != 1 {
			t.Fatalf("LAST_INSERT_ID() = %d, want 1 (the first row of the multi-row insert)", id)
		}
		if got := qInts(t, a, "SELECT id FROM scratch ORDER BY id"); !equalInts(got, []int64{1, 2}) {
			t.Fatalf("ids %v, want [1 2]", got)
		}
		wantErr(t, tryExec(b, "SELECT * FROM scratch"), 1146, "42S02")
		// the same name in another session is another table
		xexec(t, b, "CREATE TEMPORARY TABLE scratch (n INT)")
		if c := qInt(t, b, "SELECT COUNT(*) FROM scratch"); c != 0 {
			t.Fatalf("session b's scratch has %d rows, want 0", c)
		}
		// SHOW TABLES lists stored tables only, as in MySQL
		if r, err := runStmt(context.Background(), a, true, "SHOW TABLES LIKE 'scratch'"); err != nil || len(r.Rows) != 0 {
			t.Fatalf("SHOW TABLES LIKE 'scratch': %v %v, want no rows", r, err)
		}
		var name, create string
		if err := a.QueryRowContext(context.Background(), "SHOW CREATE TABLE scratch").Scan(&name, &create); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(create, "CREATE TEMPORARY TABLE `scratch`") || !strings.Contains(create, "KEY `v` (`v`)") {
			t.Fatalf("SHOW CREATE TABLE scratch:\n%s", create)
		}
	})

	t.Run("HidesStoredTable", func(t *testing.T) {
		a := conn(t, db)
		xexec(t, a, "CREATE TEMPORARY TABLE items (id INT PRIMARY KEY, name VARCHAR(20))")
		xexec(t, a, "INSERT INTO items VALUES (1, 'temp'), (2, 'temp')")
		// a point select and an update by key (the fast path's shapes)
		// must reach the temporary table, not the stored one
		if s := qStr(t, a, "SELECT name FROM items WHERE id = ?", 1); s != "temp" {
			t.Fatalf("prepared point select read %q, want the temporary table's row", s)
		}
		if s := qStr(t, a, "SELECT name FROM items WHERE id = 1"); s != "temp" {
			t.Fatalf("point select read %q, want the temporary table's row", s)
		}
		xexec(t, a, "UPDATE items SET name = 'changed' WHERE id = 1")
		if s := qStr(t, db, "SELECT name FROM items WHERE id = 1"); s != "stored" {
			t.Fatalf("the stored row became %q", s)
		}
		// copying temporary rows into the stored table
		xexec(t, a, "CREATE TEMPORARY TABLE extra AS SELECT id + 100 AS id, name FROM items")
		xexec(t, a, "DROP TEMPORARY TABLE items")
		xexec(t, a, "INSERT INTO items SELECT * FROM extra")
		if got := qInts(t, db, "SELECT id FROM items ORDER BY id"); !equalInts(got, []int64{1, 101, 102}) {
			t.Fatalf("stored ids %v, want [1 101 102]", got)
		}
		// DROP TEMPORARY never drops a stored table
		wantErr(t, tryExec(a, "DROP TEMPORARY TABLE items"), 1051, "42S02")
		if c := qInt(t, db, "SELECT COUNT(*) FROM items"); c != 3 {
			t.Fatalf("items has %d rows after DROP TEMPORARY TABLE, want 3", c)
		}
	})

	t.Run("Keys", func(t *testing.T) {
		a := conn(t, db)
		xexec(t, a, "CREATE TEMPORARY TABLE k (id INT PRIMARY KEY, email VARCHAR(30) UNIQUE, n INT NOT NULL DEFAULT 0)")
		xexec(t, a, "INSERT INTO k (id, email) VALUES (1, 'a@x'), (2, NULL), (3, NULL)")
		wantErr(t, tryExec(a, "INSERT INTO k (id, email) VALUES (4, 'A@X')"), 1062, "23000") // case-insensitive collation
		wantErr(t, tryExec(a, "INSERT INTO k (id) VALUES (1)"), 1062, "23000")
		// a failed multi-row insert leaves nothing behind
		wantErr(t, tryExec(a, "INSERT INTO k (id, email) VALUES (5, 'e@x'), (6, 'a@x')"), 1062, "23000")
		xexec(t, a, "INSERT INTO k (id, email) VALUES (1, 'z') ON DUPLICATE KEY UPDATE n = n + 10")
		xexec(t, a, "INSERT IGNORE INTO k (id, email) VALUES (2, 'dup'), (7, 'g@x')")
		xexec(t, a, "REPLACE INTO k (id, email) VALUES (3, 'a@x')") // replaces rows 1 (email) and 3 (id)
		if got := qInts(t, a, "SELECT id FROM k ORDER BY id"); !equalInts(got, []int64{2, 3, 7}) {
			t.Fatalf("ids %v, want [2 3 7]", got)
		}
		wantErr(t, tryExec(a, "UPDATE k SET email = 'g@x' WHERE id = 2"), 1062, "23000")
		wantErr(t, tryExec(a, "ALTER TABLE k ADD UNIQUE INDEX nn (n)"), 1062, "23000")
	})

	t.Run("Alter", func(t *testing.T) {
		a := conn(t, db)
		xexec(t, a, "CREATE TEMPORARY TABLE al (x INT, y VARCHAR(10), b INT, PRIMARY KEY (b, x), UNIQUE KEY uy (y))")
		xexec(t, a, "INSERT INTO al VALUES (1, 'one', 10), (2, 'two', 10), (3, 'three', 5)")
		xexec(t, a, "ALTER TABLE al ADD COLUMN z INT NOT NULL DEFAULT 7 AFTER x")
		xexec(t, a, "ALTER TABLE al MODIFY COLUMN y VARCHAR(20) FIRST")
		xexec(t, a, "ALTER TABLE al RENAME COLUMN y TO yy")
		// rows keep the composite key's order (b, x), and the unique key
		// follows the renamed column
		if got := qInts(t, a, "SELECT x FROM al"); !equalInts(got, []int64{3, 1, 2}) {
			t.Fatalf("rows after ALTER: %v, want [3 1 2]", got)
		}
		if s := qStr(t, a, "SELECT GROUP_CONCAT(CONCAT(yy, z) ORDER BY x) FROM al"); s != "one7,two7,three7" {
			t.Fatalf("values after ALTER: %q", s)
		}
		wantErr(t, tryExec(a, "INSERT INTO al (x, yy, b) VALUES (9, 'one', 1)"), 1062, "23000")
		xexec(t, a, "ALTER TABLE al DROP COLUMN yy") // its index goes with it
		xexec(t, a, "INSERT INTO al (x, b) VALUES (9, 1)")
		xexec(t, a, "ALTER TABLE al RENAME TO al2")
		if c := qInt(t, a, "SELECT COUNT(*) FROM al2"); c != 4 {
			t.Fatalf("al2 has %d rows, want 4", c)
		}
	})

	t.Run("Transactions", func(t *testing.T) {
		a := conn(t, db)
		xexec(t, a, "CREATE TEMPORARY TABLE tx (id INT PRIMARY KEY)")
		xexec(t, a, "INSERT INTO tx VALUES (1)")
		xexec(t, a, "BEGIN")
		xexec(t, a, "INSERT INTO tx VALUES (2)")
		xexec(t, a, "CREATE TEMPORARY TABLE other (x INT)") // does not commit
		xexec(t, a, "SAVEPOINT s")
		xexec(t, a, "INSERT INTO tx VALUES (3)")
		xexec(t, a, "DELETE FROM tx WHERE id = 1")
		xexec(t, a, "ROLLBACK TO SAVEPOINT s")
		if got := qInts(t, a, "SELECT id FROM tx ORDER BY id"); !equalInts(got, []int64{1, 2}) {
			t.Fatalf("after ROLLBACK TO SAVEPOINT: %v, want [1 2]", got)
		}
		xexec(t, a, "ROLLBACK")
		if got := qInts(t, a, "SELECT id FROM tx ORDER BY id"); !equalInts(got, []int64{1}) {
			t.Fatalf("after ROLLBACK: %v, want [1]", got)
		}
		xexec(t, a, "SET autocommit = 0")
		xexec(t, a, "INSERT INTO tx VALUES (4)")
		xexec(t, a, "COMMIT")
		xexec(t, a, "DELETE FROM tx")
		xexec(t, a, "ROLLBACK")
		xexec(t, a, "SET autocommit = 1")
		if got := qInts(t, a, "SELECT id FROM tx ORDER BY id"); !equalInts(got, []int64{1, 4}) {
			t.Fatalf("after COMMIT and a rolled back DELETE: %v, want [1 4]", got)
		}
		// writes to a temporary table are allowed in a read-only transaction
		xexec(t, a, "START TRANSACTION READ ONLY")
		xexec(t, a, "INSERT INTO tx VALUES (5)")
		wantErr(t, tryExec(a, "INSERT INTO items VALUES (9, 'no')"), 1792, "25006")
		xexec(t, a, "COMMIT")
	})

	t.Run("Limits", func(t *testing.T) {
		a := conn(t, db)
		xexec(t, a, "SET SESSION max_heap_table_size = 16384")
		xexec(t, a, "CREATE TEMPORARY TABLE big (id INT PRIMARY KEY, pad VARCHAR(200))")
		var err error
		for i := 0; i < 200 && err == nil; i++ {
			err = tryExec(a, "INSERT INTO big VALUES (?, REPEAT('p', 200))", i)
		}
		wantErr(t, err, 1114, "HY000")
		xexec(t, a, "TRUNCATE TABLE big")
		xexec(t, a, "INSERT INTO big VALUES (1, 'fits again')")
	})

	t.Run("GoneWithTheSession", func(t *testing.T) {
		// a pool that never keeps an idle connection: closing a session
		// ends it on the server
		one := n.DB("tt")
		one.SetMaxIdleConns(0)
		ctx := context.Background()
		c, err := one.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		xexec(t, c, "CREATE TEMPORARY TABLE bye (id INT)")
		xexec(t, c, "INSERT INTO bye VALUES (1)")
		c.Close()
		c2 := conn(t, one)
		wantErr(t, tryExec(c2, "SELECT * FROM bye"), 1146, "42S02")
	})
}

// TestTemporaryTableMatchesStored runs the same random writes, inside and
// outside transactions, on a temporary table and on a stored table of the
// same definition in one session, and requires equal answers (errors,
// affected rows) and equal contents: a temporary table behaves as an
// InnoDB table does. A failure prints the seed; rerun it with
// CERTUS_FASTPATH_SEED=<seed>.
func TestTemporaryTableMatchesStored(t *testing.T) {
	_, db := startNode(t, "tempdiff", "td")
	seed := fastPathSeed(t)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	s := conn(t, db)
	for _, def := range []struct{ name, ddl, order string }{
		{"keyed", "(id INT PRIMARY KEY, u INT, v VARCHAR(8), UNIQUE KEY (u))", "id"},
		{"keyless", "(id INT, u INT, v VARCHAR(8), UNIQUE KEY (u))", "id, u, CAST(v AS BINARY)"},
		{"bag", "(id INT, u INT, v VARCHAR(8))", "id, u, CAST(v AS BINARY)"},
	} {
		xexec(t, s, "CREATE TABLE s_"+def.name+" "+def.ddl)
		xexec(t, s, "CREATE TEMPORARY TABLE t_"+def.name+" "+def.ddl)
		inTxn := false
		for i := 0; i < 400; i++ {
			if rng.IntN(25) == 0 {
				inTxn = tempTxnStep(t, rng, s, inTxn)
			}
			q, args := tempWrite(rng, def.name == "keyed")
			ctx := context.Background()
			got, err := runStmt(ctx, s, false, strings.ReplaceAll(q, "{t}", "t_"+def.name), args...)
			if err != nil {
				t.Fatal(err)
			}
			want, err := runStmt(ctx, s, false, strings.ReplaceAll(q, "{t}", "s_"+def.name), args...)
			if err != nil {
				t.Fatal(err)
			}
			if got.Err != want.Err || got.Affected != want.Affected {
				t.Fatalf("seed %d, %s, statement %d: %s %v\ntemporary: %v\nstored:    %v", seed, def.name, i, q, args, got, want)
			}
			if i%20 == 19 {
				tempTablesEqual(t, seed, s, def.name, def.order)
			}
		}
		if inTxn {
			xexec(t, s, "COMMIT")
		}
		tempTablesEqual(t, seed, s, def.name, def.order)
	}
}

// tempTxnStep begins a transaction, sets or rolls back to a savepoint,
// or ends the transaction; it returns whether one is open.
func tempTxnStep(t *testing.T, rng *rand.Rand, s execer, inTxn bool) bool {
	if !inTxn {
		xexec(t, s, "BEGIN")
		return true
	}
	switch rng.IntN(4) {
	case 0:
		xexec(t, s, "SAVEPOINT sp")
		return true
	case 1:
		// the savepoint may not exist: both tables see the same outcome
		_ = tryExec(s, "ROLLBACK TO SAVEPOINT sp")
		return true
	case 2:
		xexec(t, s, "ROLLBACK")
	default:
		xexec(t, s, "COMMIT")
	}
	return false
}

// tempWrite returns a random write ({t} stands for the table) over a small
// domain of values, so keys collide often; keyed tells whether the table
// has a primary key.
func tempWrite(rng *rand.Rand, keyed bool) (string, []any) {
	id, u := rng.IntN(12), any(rng.IntN(12))
	if rng.IntN(5) == 0 {
		u = nil
	}
	v := []any{"a", "A", "b", "bb", nil}[rng.IntN(5)]
	switch rng.IntN(9) {
	case 0:
		return "UPDATE {t} SET u = ? WHERE id = ?", []any{u, id}
	case 1:
		if keyed {
			// rows change in primary key order on both tables; without
			// one the order, and so a unique key's collision, may differ
			return "UPDATE {t} SET v = ?, u = u + 1 WHERE v = ?", []any{v, []any{"a", "b"}[rng.IntN(2)]}
		}
		return "UPDATE {t} SET v = ? WHERE v = ?", []any{v, []any{"a", "b"}[rng.IntN(2)]}
	case 2:
		return "DELETE FROM {t} WHERE id = ?", []any{id}
	case 3:
		return "DELETE FROM {t} WHERE u > ?", []any{rng.IntN(14)}
	case 4:
		return "REPLACE INTO {t} VALUES (?, ?, ?)", []any{id, u, v}
	case 5:
		return "INSERT IGNORE INTO {t} VALUES (?, ?, ?), (?, ?, ?)", []any{id, u, v, rng.IntN(12), rng.IntN(12), v}
	case 6:
		return "INSERT INTO {t} VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE v = CONCAT(COALESCE(v, ''), 'x')", []any{id, u, v}
	case 7:
		// a multi-row insert that may fail on its second row
		return "INSERT INTO {t} VALUES (?, ?, ?), (?, ?, ?)", []any{id, u, v, rng.IntN(12), rng.IntN(12), v}
	default:
		return "INSERT INTO {t} VALUES (?, ?, ?)", []any{id, u, v}
	}
}

// tempTablesEqual fails t unless the temporary and the stored table of
// definition name hold the same rows.
func tempTablesEqual(t *testing.T, seed uint64, s *sql.Conn, name, order string) {
	t.Helper()
	ctx := context.Background()
	a, err := runStmt(ctx, s, true, fmt.Sprintf("SELECT * FROM t_%s ORDER BY %s", name, order))
	if err != nil {
		t.Fatal(err)
	}
	b, err := runStmt(ctx, s, true, fmt.Sprintf("SELECT * FROM s_%s ORDER BY %s", name, order))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Rows, b.Rows) {
		t.Fatalf("seed %d, %s: contents differ\ntemporary: %v\nstored:    %v", seed, name, a.Rows, b.Rows)
	}
}

// TestTemporaryTablesStayLocal checks that temporary tables are never
// replicated, as in Galera: writing one commits nothing to the cluster and
// other nodes do not see it, while rows copied from it into a stored table
// reach every node.
func TestTemporaryTablesStayLocal(t *testing.T) {
	c := testcluster.StartCluster(t, 3)
	mustExec(t, c.Nodes[0].DB(""), "CREATE DATABASE tl")
	mustExec(t, c.Nodes[0].DB("tl"), "CREATE TABLE kept (id INT PRIMARY KEY)")
	awaitApplied(t, c)
	s := conn(t, c.Nodes[0].DB("tl"))
	// wsrep_local_commits counts the transactions that replicated writes
	// (the node's own background write-sets, such as its low watermark
	// reports, move wsrep_last_committed but are not transactions)
	before := qStatus(t, c.Nodes[0], "wsrep_local_commits")
	xexec(t, s, "CREATE TEMPORARY TABLE local (id INT PRIMARY KEY)")
	xexec(t, s, "INSERT INTO local VALUES (1), (2), (3)")
	xexec(t, s, "UPDATE local SET id = id * 10")
	if after := qStatus(t, c.Nodes[0], "wsrep_local_commits"); after != before {
		t.Fatalf("wsrep_local_commits moved from %d to %d: a temporary table was replicated", before, after)
	}
	for _, n := range c.Nodes[1:] {
		other := conn(t, n.DB("tl"))
		wantErr(t, tryExec(other, "SELECT * FROM local"), 1146, "42S02")
	}
	xexec(t, s, "INSERT INTO kept SELECT id FROM local")
	awaitApplied(t, c)
	for _, n := range c.Nodes {
		if got := qInts(t, n.DB("tl"), "SELECT id FROM kept ORDER BY id"); !equalInts(got, []int64{10, 20, 30}) {
			t.Fatalf("node %s: kept holds %v, want [10 20 30]", n.Name, got)
		}
	}
	requireIdentical(t, c)
}
