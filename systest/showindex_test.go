package systest

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// TestShowIndex checks SHOW INDEX's columns that go-mysql-server left
// empty: Collation A, Sub_part of a prefix key part, Cardinality at the
// last part of a unique key, and the index comment under Index_comment.
func TestShowIndex(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(30), b INT, note TEXT, UNIQUE KEY ab (a, b) COMMENT 'pair', KEY n (note(10)))")
	rows, err := db.QueryContext(t.Context(), "SHOW INDEX FROM t")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var table, key, column, collation, null, typ, comment, indexComment, visible string
		var nonUnique, seq int
		var cardinality, subPart sql.NullInt64
		var packed, expr sql.NullString
		if err := rows.Scan(&table, &nonUnique, &key, &seq, &column, &collation, &cardinality, &subPart, &packed,
			&null, &typ, &comment, &indexComment, &visible, &expr); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %d %s %d %s %s card=%v sub=%v %q %q", table, nonUnique, key, seq, column,
			collation, cardinality.Valid, subPart.Int64, comment, indexComment))
	}
	want := []string{
		`t 0 PRIMARY 1 id A card=true sub=0 "" ""`,
		`t 0 ab 1 a A card=false sub=0 "" "pair"`,
		`t 0 ab 2 b A card=true sub=0 "" "pair"`,
		`t 1 n 1 note A card=false sub=10 "" ""`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("SHOW INDEX:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestShowColumns checks SHOW FULL COLUMNS as ORMs read it (Rails builds
// its column types and defaults from it): Type without a COLLATE clause,
// the column's own collation, the privileges, defaults as values and
// generated columns in Extra; and SHOW TABLE STATUS's Auto_increment.
func TestShowColumns(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(20), c CHAR(3) COLLATE utf8mb4_bin, d BLOB, e ENUM('x','y'))")
	all := "select,insert,update,references"
	wantRows(t, "SHOW FULL COLUMNS", qLines(t, db, "SHOW FULL COLUMNS FROM t"), []string{
		"id|int|NULL|NO|PRI|NULL||" + all + "|",
		"a|varchar(20)|utf8mb4_0900_ai_ci|YES||NULL||" + all + "|",
		"c|char(3)|utf8mb4_bin|YES||NULL||" + all + "|",
		"d|blob|NULL|YES||NULL||" + all + "|",
		"e|enum('x','y')|utf8mb4_0900_ai_ci|YES||NULL||" + all + "|",
	})
	if typ := qStr(t, db, "SELECT COLUMN_TYPE FROM information_schema.columns WHERE table_name = 't' AND column_name = 'a'"); typ != "varchar(20)" {
		t.Errorf("COLUMN_TYPE = %s", typ)
	}
	// defaults as values, generated columns, SHOW TABLE STATUS
	xexec(t, db, "CREATE TABLE d (id INT AUTO_INCREMENT PRIMARY KEY, s VARCHAR(5) DEFAULT 'x''y', e VARCHAR(3) DEFAULT '', v INT AS (id * 2), w INT AS (id + 1) STORED)")
	xexec(t, db, "INSERT INTO d (s) VALUES ('a'), ('b')")
	wantRows(t, "SHOW COLUMNS", qLines(t, db, "SHOW COLUMNS FROM d"), []string{
		"id|int|NO|PRI|NULL|auto_increment",
		"s|varchar(5)|YES||x'y|",
		"e|varchar(3)|YES|||",
		"v|int|YES||NULL|VIRTUAL GENERATED",
		"w|int|YES||NULL|STORED GENERATED",
	})
	status := qLines(t, db, "SHOW TABLE STATUS LIKE 'd'")
	if len(status) != 1 || len(strings.Split(status[0], "|")) < 11 {
		t.Fatalf("SHOW TABLE STATUS LIKE 'd': %v", status)
	}
	if f := strings.Split(status[0], "|"); f[3] != "Dynamic" || f[10] != "3" {
		t.Errorf("SHOW TABLE STATUS: Row_format %q, Auto_increment %q; want Dynamic, 3", f[3], f[10])
	}
}

// TestShowIndexWhere checks that SHOW INDEX's WHERE selects rows (it was
// ignored, so a script that looks an index up before creating it never
// created it), that a condition naming no column of SHOW INDEX is 1054,
// and that one with a subquery is refused (1235).
func TestShowIndexWhere(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(30), b INT, UNIQUE KEY ab (a, b), KEY bk (b))")
	keys := func(q string, args ...any) []string {
		t.Helper()
		var out []string
		for _, l := range qLines(t, db, q, args...) {
			f := strings.Split(l, "|")
			out = append(out, f[2]+"."+f[4])
		}
		return out
	}
	wantRows(t, "Key_name = 'ab'", keys("SHOW INDEX FROM t WHERE Key_name = 'ab'"), []string{"ab.a", "ab.b"})
	wantRows(t, "no such key", keys("SHOW INDEX FROM t WHERE Key_name = 'nosuch'"), nil)
	wantRows(t, "Non_unique, any case", keys("SHOW KEYS FROM d1.t WHERE non_unique = 1 OR `KEY_NAME` = 'primary'"), []string{"PRIMARY.id", "bk.b"})
	wantRows(t, "Seq_in_index", keys("SHOW INDEXES FROM t FROM d1 WHERE Seq_in_index > 1"), []string{"ab.b"})
	wantErr(t, tryExec(db, "SHOW INDEX FROM t WHERE nosuch = 1"), 1054, "42S22")
	// refused (not supported) rather than a wrong answer
	wantErr(t, tryExec(db, "SHOW INDEX FROM t WHERE Key_name IN (SELECT 'ab')"), 1235, "42000")
}
