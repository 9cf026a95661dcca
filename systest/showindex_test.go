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
	rows, err := db.QueryContext(t.Context(), "SHOW FULL COLUMNS FROM t")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var field, typ, null, key, extra, privileges, comment string
		var collation, def sql.NullString
		if err := rows.Scan(&field, &typ, &collation, &null, &key, &def, &extra, &privileges, &comment); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s", field, typ, collation.String, privileges))
	}
	want := []string{
		"id int  select,insert,update,references",
		"a varchar(20) utf8mb4_0900_ai_ci select,insert,update,references",
		"c char(3) utf8mb4_bin select,insert,update,references",
		"d blob  select,insert,update,references",
		"e enum('x','y') utf8mb4_0900_ai_ci select,insert,update,references",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("SHOW FULL COLUMNS:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if typ := qStr(t, db, "SELECT COLUMN_TYPE FROM information_schema.columns WHERE table_name = 't' AND column_name = 'a'"); typ != "varchar(20)" {
		t.Errorf("COLUMN_TYPE = %s", typ)
	}
	// defaults as values, generated columns, SHOW TABLE STATUS
	xexec(t, db, "CREATE TABLE d (id INT AUTO_INCREMENT PRIMARY KEY, s VARCHAR(5) DEFAULT 'x''y', e VARCHAR(3) DEFAULT '', v INT AS (id * 2), w INT AS (id + 1) STORED)")
	xexec(t, db, "INSERT INTO d (s) VALUES ('a'), ('b')")
	got = nil
	rows2, err := db.QueryContext(t.Context(), "SHOW COLUMNS FROM d")
	if err != nil {
		t.Fatal(err)
	}
	defer rows2.Close()
	for rows2.Next() {
		var field, typ, null, key, extra string
		var def sql.NullString
		if err := rows2.Scan(&field, &typ, &null, &key, &def, &extra); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s [%s] %s", field, def.String, extra))
	}
	want = []string{"id [] auto_increment", "s [x'y] ", "e [] ", "v [] VIRTUAL GENERATED", "w [] STORED GENERATED"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("SHOW COLUMNS:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	st, err := db.QueryContext(t.Context(), "SHOW TABLE STATUS LIKE 'd'")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cols, _ := st.Columns()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if !st.Next() {
		t.Fatal("SHOW TABLE STATUS LIKE 'd': no row")
	}
	if err := st.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for i, c := range cols {
		status[c] = string(vals[i])
	}
	if status["Auto_increment"] != "3" || status["Row_format"] != "Dynamic" {
		t.Errorf("SHOW TABLE STATUS: Auto_increment %q, Row_format %q; want 3, Dynamic", status["Auto_increment"], status["Row_format"])
	}
}
