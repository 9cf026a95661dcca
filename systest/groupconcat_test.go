package systest

import (
	"database/sql"
	"testing"
)

// TestGroupConcat checks GROUP_CONCAT against what MySQL returns: every
// argument of a row concatenated, rows with a NULL argument left out,
// empty strings kept, DISTINCT over the argument tuple, ORDER BY and
// SEPARATOR, inside subqueries, and the 1260 warning when
// group_concat_max_len cuts the result. Text and prepared protocol alike.
func TestGroupConcat(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	c := conn(t, db)
	xexec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10), b INT)")
	xexec(t, c, "INSERT INTO t VALUES (1,'x',1),(2,'',2),(3,'y',NULL),(4,'z',4),(5,'a',0)")
	cases := []struct{ q, want string }{
		{"SELECT GROUP_CONCAT(a ORDER BY id) FROM t", "x,,y,z,a"},
		{"SELECT GROUP_CONCAT(a, b ORDER BY id) FROM t", "x1,2,z4,a0"},
		{"SELECT GROUP_CONCAT(a, '-', b ORDER BY id DESC SEPARATOR ';') FROM t", "a-0;z-4;-2;x-1"},
		{"SELECT GROUP_CONCAT(DISTINCT b ORDER BY b) FROM t", "0,1,2,4"},
		{"SELECT GROUP_CONCAT(DISTINCT a, b ORDER BY a, b) FROM (SELECT 'ab' a, 'c' b UNION ALL SELECT 'a', 'bc' UNION ALL SELECT 'ab', 'c') s", "abc,abc"},
		{"SELECT GROUP_CONCAT(b ORDER BY b DESC) FROM t WHERE id > 100", ""},
		{"SELECT (SELECT GROUP_CONCAT(a, id ORDER BY id) FROM t t2 WHERE t2.id <= t.id) FROM t WHERE id = 3", "x1,2,y3"},
	}
	for _, tc := range cases {
		for _, prepared := range []bool{false, true} {
			var got sql.NullString
			var err error
			if prepared {
				err = c.QueryRowContext(t.Context(), tc.q+" LIMIT ?", 10).Scan(&got)
			} else {
				err = c.QueryRowContext(t.Context(), tc.q).Scan(&got)
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.q, err)
			}
			if got.String != tc.want || got.Valid != (tc.want != "") {
				t.Errorf("%s (prepared %v) = %q (valid %v), want %q", tc.q, prepared, got.String, got.Valid, tc.want)
			}
		}
	}
	xexec(t, c, "SET group_concat_max_len = 5")
	if got := qStr(t, c, "SELECT GROUP_CONCAT(a, b ORDER BY id) FROM t"); got != "x1,2," {
		t.Errorf("cut result = %q, want %q", got, "x1,2,")
	}
	var level, msg string
	var code int
	if err := c.QueryRowContext(t.Context(), "SHOW WARNINGS").Scan(&level, &code, &msg); err != nil {
		t.Fatal(err)
	}
	if code != 1260 || msg != "Row 3 was cut by GROUP_CONCAT()" {
		t.Errorf("warning = %d %q, want 1260 Row 3 was cut by GROUP_CONCAT()", code, msg)
	}
}
