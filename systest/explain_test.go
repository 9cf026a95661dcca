package systest

import (
	"database/sql"
	"strings"
	"testing"
)

// explainRow is one row of EXPLAIN, scanned into the types MySQL's
// columns have (a driver that parses numbers failed on go-mysql-server's
// placeholder text 'NULL' in the numeric columns).
type explainRow struct {
	id                                   sql.NullInt64
	selectType                           string
	table, partitions, typ, possibleKeys sql.NullString
	key, keyLen, ref                     sql.NullString
	rows                                 sql.NullInt64
	filtered                             sql.NullFloat64
	extra                                sql.NullString
}

func explain(t *testing.T, db queryer, q string) []explainRow {
	t.Helper()
	rs, err := db.QueryContext(t.Context(), "EXPLAIN "+q)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", q, err)
	}
	defer rs.Close()
	var out []explainRow
	for rs.Next() {
		var r explainRow
		if err := rs.Scan(&r.id, &r.selectType, &r.table, &r.partitions, &r.typ, &r.possibleKeys,
			&r.key, &r.keyLen, &r.ref, &r.rows, &r.filtered, &r.extra); err != nil {
			t.Fatalf("EXPLAIN %s: %v", q, err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatalf("EXPLAIN %s: %v", q, err)
	}
	return out
}

// explainLines is EXPLAIN q, a line per row: "select_type table type key
// key_len ref Extra", "-" for NULL. It checks the columns not shown: id
// 1 on the first row, partitions NULL.
func explainLines(t *testing.T, db queryer, q string) []string {
	t.Helper()
	null := func(s sql.NullString) string {
		if !s.Valid {
			return "-"
		}
		return s.String
	}
	var out []string
	for i, r := range explain(t, db, q) {
		out = append(out, strings.Join([]string{r.selectType, null(r.table), null(r.typ), null(r.key),
			null(r.keyLen), null(r.ref), null(r.extra)}, " "))
		if r.partitions.Valid || i == 0 && r.id.Int64 != 1 {
			t.Errorf("EXPLAIN %s: row %d has id %v, partitions %v", q, i, r.id, r.partitions)
		}
	}
	return out
}

// TestExplain checks EXPLAIN's tabular output against
// the plans chosen: access type, key, key length, ref and Extra per table.
func TestExplain(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(20), u BIGINT, KEY kk (k), UNIQUE KEY uu (u))")
	xexec(t, db, "CREATE TABLE s (id INT PRIMARY KEY, v INT)")
	xexec(t, db, "INSERT INTO t VALUES (1,1,'a',1),(2,2,'b',2),(3,3,'c',3),(4,4,'d',4)")
	xexec(t, db, "INSERT INTO s VALUES (1,10),(2,20)")
	// each case: the statement, then per row "select_type table type key key_len ref extra"
	// ("-" for NULL)
	cases := []struct {
		q    string
		want []string
	}{
		{"SELECT c FROM t WHERE id = 2", []string{"SIMPLE t const PRIMARY 4 const -"}},
		{"SELECT c FROM t WHERE u = 2", []string{"SIMPLE t const uu 9 const -"}},
		{"SELECT id, k FROM t WHERE k = 3", []string{"SIMPLE t ref kk 4 const Using index"}},
		{"SELECT * FROM t WHERE id BETWEEN 2 AND 3", []string{"SIMPLE t range PRIMARY 4 - -"}},
		{"SELECT * FROM t WHERE c = 'x'", []string{"SIMPLE t ALL - - - Using where"}},
		{"SELECT * FROM t ORDER BY c", []string{"SIMPLE t ALL - - - Using filesort"}},
		{"SELECT c, (SELECT v FROM s WHERE s.id = t.id) FROM t WHERE id = 1", []string{
			"PRIMARY t const PRIMARY 4 const -", "DEPENDENT SUBQUERY s eq_ref PRIMARY 4 t.id Using where"}},
		{"SELECT 1", []string{"SIMPLE - - - - - No tables used"}},
		{"UPDATE t SET c = 'z' WHERE id BETWEEN 1 AND 2", []string{"UPDATE t range PRIMARY 4 - -"}},
		{"DELETE FROM t WHERE id = 4", []string{"DELETE t const PRIMARY 4 const -"}},
		{"INSERT INTO s VALUES (3, 30)", []string{"INSERT s ALL - - - -"}},
	}
	for _, tc := range cases {
		if got := explainLines(t, db, tc.q); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("EXPLAIN %s:\n got %q\nwant %q\n%s", tc.q, got, tc.want, planTree(t, db, tc.q))
		}
	}
	// a join: the rows follow the join go-mysql-server chose (it depends
	// on the tables' size estimates)
	join := "SELECT t.c, s.v FROM t JOIN s ON s.id = t.k WHERE t.id = 3"
	tree := planTree(t, db, join)
	var want []string
	switch {
	case strings.Contains(tree, "LookupJoin"):
		want = []string{"SIMPLE t const PRIMARY 4 const -", "SIMPLE s eq_ref PRIMARY 4 t.k -"}
	case strings.Contains(tree, "HashJoin"):
		want = []string{"SIMPLE s ALL - - - -", "SIMPLE t const PRIMARY 4 const Using where; Using join buffer (hash join)"}
	default: // a nested loop over s
		want = []string{"SIMPLE s ALL - - - -", "SIMPLE t const PRIMARY 4 const Using where"}
	}
	if got := explainLines(t, db, join); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("EXPLAIN %s:\n got %q\nwant %q\n%s", join, got, want, tree)
	}
	// the explained statements changed nothing
	if n := qInt(t, db, "SELECT COUNT(*) FROM s"); n != 2 {
		t.Errorf("s has %d rows after EXPLAIN INSERT, want 2", n)
	}
	if c := qStr(t, db, "SELECT c FROM t WHERE id = 1"); c != "a" {
		t.Errorf("t.c = %q after EXPLAIN UPDATE, want a", c)
	}
}

// planTree is go-mysql-server's plan of q, as EXPLAIN FORMAT=TREE shows it.
func planTree(t *testing.T, db queryer, q string) string {
	t.Helper()
	rs, err := db.QueryContext(t.Context(), "EXPLAIN FORMAT=TREE "+q)
	if err != nil {
		t.Fatalf("EXPLAIN FORMAT=TREE %s: %v", q, err)
	}
	defer rs.Close()
	var lines []string
	for rs.Next() {
		var l string
		if err := rs.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// TestIndexHints runs the index hints MySQL accepts and go-mysql-server's
// parser refused: FORCE INDEX (PRIMARY) without backquotes, FORCE KEY,
// USE INDEX (), as text statements (a statement to prepare is parsed by
// vitess before Certus sees it).
func TestIndexHints(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, k INT, KEY kk (k))")
	xexec(t, db, "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)")
	for _, q := range []string{
		"SELECT k FROM t FORCE INDEX (PRIMARY) WHERE id = %s",
		"SELECT k FROM t force key (kk, primary) WHERE id = %s",
		"SELECT k FROM t USE INDEX () WHERE id = %s",
		"SELECT k FROM t IGNORE INDEX FOR ORDER BY (PRIMARY) WHERE id = %s ORDER BY id",
	} {
		if got := qInt(t, db, strings.Replace(q, "%s", "2", 1)); got != 20 {
			t.Errorf("%s: k = %d, want 20", q, got)
		}
	}
}
