package sqlengine

import "testing"

func TestLentDatabase(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"SELECT * FROM shop.v", "shop"},
		{"SELECT v.a FROM shop.v JOIN other.t ON t.a = v.a", "shop"},
		{"SELECT a FROM (SELECT a FROM shop.v) AS d", "shop"},
		{"SELECT a FROM shop.v UNION SELECT a FROM shop.t", "shop"},
		{"SELECT (SELECT COUNT(*) FROM shop.v)", "shop"},
		{"SELECT a FROM shop.v WHERE a = ?", "shop"},
		{"SELECT * FROM v", ""},                           // the current database's
		{"SELECT * FROM shop.v, t", ""},                   // one unqualified table
		{"WITH c AS (SELECT 1 AS a) SELECT * FROM c", ""}, // a CTE
		{"SELECT DATABASE(), a FROM shop.v", ""},          // asks for it
		{"SELECT SCHEMA() FROM shop.v", ""},               //
		{"INSERT INTO shop.t SELECT * FROM shop.v", ""},   // not a query
		{"SELECT * FROM", ""},                             // not parsed
	} {
		if got := lentDatabase(tc.query); got != tc.want {
			t.Errorf("lentDatabase(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
}
