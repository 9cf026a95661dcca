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
