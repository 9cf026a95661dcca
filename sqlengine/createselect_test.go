package sqlengine

import "testing"

func TestCreateSelectParens(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"CREATE TABLE c AS (SELECT * FROM a)", "CREATE TABLE c AS SELECT * FROM a"},
		{"CREATE TABLE d (SELECT * FROM a);", "CREATE TABLE d AS SELECT * FROM a;"},
		{"create temporary table if not exists `x y`.t as ( select ')' , \"(\" from a where b in (1, 2) )", "create temporary table if not exists `x y`.t as select ')' , \"(\" from a where b in (1, 2) "},
		{"CREATE TABLE e AS (WITH w AS (SELECT 1) SELECT * FROM w)", "CREATE TABLE e AS WITH w AS (SELECT 1) SELECT * FROM w"},
		{"CREATE TABLE has (SELECT 1)", "CREATE TABLE has AS SELECT 1"},
		// unchanged
		{"CREATE TABLE c AS SELECT * FROM a", "CREATE TABLE c AS SELECT * FROM a"},
		{"CREATE TABLE c (id INT) SELECT 1 AS id", "CREATE TABLE c (id INT) SELECT 1 AS id"},
		{"CREATE TABLE c (SELECT 1) UNION (SELECT 2)", "CREATE TABLE c (SELECT 1) UNION (SELECT 2)"},
		{"CREATE TABLE c (selected INT)", "CREATE TABLE c (selected INT)"},
		{"SELECT 'CREATE TABLE c (SELECT 1)'", "SELECT 'CREATE TABLE c (SELECT 1)'"},
	} {
		if got := createSelectParens(tc.in); got != tc.want {
			t.Errorf("createSelectParens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMayStartWith(t *testing.T) {
	for _, tc := range []struct {
		q, w string
		want bool
	}{
		{"  flush tables", "flush", true},
		{"FLUSH", "flush", true},
		{"/*!40101 FLUSH */ TABLES", "flush", true},
		{"-- c\nCREATE TABLE t (a INT)", "create", true},
		{"SELECT 1", "flush", false},
		{"SELECT 'flush'", "flush", false},
		{"fl", "flush", false},
	} {
		if got := mayStartWith(tc.q, tc.w); got != tc.want {
			t.Errorf("mayStartWith(%q, %q) = %v", tc.q, tc.w, got)
		}
	}
}
