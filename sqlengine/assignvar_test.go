package sqlengine

import "testing"

func TestAssignUserVars(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SET @a := 1", "SET @a := 1"},
		{"SET @a := 1, @b := @a + 1", "SET @a := 1, @b := @a + 1"},
		{"SELECT @a := 1", "SELECT certus_set_user_var('a', 1) AS `@a := 1`"},
		{"SELECT @a := 1, @a", "SELECT certus_set_user_var('a', 1) AS `@a := 1`, certus_get_user_var('a') AS `@a`"},
		{"SELECT @r := @r + 1 AS rank, name FROM t, (SELECT @r := 0) x",
			"SELECT certus_set_user_var('r', certus_get_user_var('r') + 1) AS rank, name FROM t, (SELECT certus_set_user_var('r', 0) AS `@r := 0`) x"},
		{"SELECT name, @r := @r + 1 rn FROM t",
			"SELECT name, certus_set_user_var('r', certus_get_user_var('r') + 1) rn FROM t"},
		{"SELECT IF(score = @p, @g, @g := @g + 1) g FROM t",
			"SELECT IF(score = @p, certus_get_user_var('g'), certus_set_user_var('g', certus_get_user_var('g') + 1)) g FROM t"},
		{"SELECT @x := CASE WHEN a THEN 'y' ELSE 'n' END AS c FROM t",
			"SELECT certus_set_user_var('x', CASE WHEN a THEN 'y' ELSE 'n' END) AS c FROM t"},
		{"SELECT @d := NOW() + INTERVAL 1 DAY d", "SELECT certus_set_user_var('d', NOW() + INTERVAL 1 DAY) d"},
		{"SELECT @a := b IS NOT NULL AND c LIKE 'x%' FROM t",
			"SELECT certus_set_user_var('a', b IS NOT NULL AND c LIKE 'x%') AS `@a := b IS NOT NULL AND c LIKE 'x%'` FROM t"},
		{"SELECT 'a := b', `c:=d`, @@sql_mode", "SELECT 'a := b', `c:=d`, @@sql_mode"},
		{"SELECT @a := 'it''s' -- @b := 1\n", "SELECT certus_set_user_var('a', 'it''s') AS `@a := 'it''s'` -- @b := 1\n"},
		{"UPDATE t SET v = @n := @n + 1", "UPDATE t SET v = certus_set_user_var('n', certus_get_user_var('n') + 1)"},
		{"SELECT * FROM t WHERE (@n := @n + 1) > 2",
			"SELECT * FROM t WHERE (certus_set_user_var('n', certus_get_user_var('n') + 1)) > 2"},
		{"SELECT @a := @b := 2", "SELECT certus_set_user_var('a', certus_set_user_var('b', 2)) AS `@a := @b := 2`"},
		{"SELECT @a :=", "SELECT @a :="},
		{"CREATE PROCEDURE p() BEGIN SET @x := 1, @y := @x; SELECT @z := 2; END",
			"CREATE PROCEDURE p() BEGIN SET @x := 1, @y := @x; SELECT certus_set_user_var('z', 2) AS `@z := 2`; END"},
		{"SET @a := 1; SELECT @b := @a", "SET @a := 1; SELECT certus_set_user_var('b', certus_get_user_var('a')) AS `@b := @a`"},
		{"UPDATE t SET a = 1, b = @n := @n + 1 WHERE c = @m := 2",
			"UPDATE t SET a = 1, b = certus_set_user_var('n', certus_get_user_var('n') + 1) WHERE c = certus_set_user_var('m', 2)"},
	} {
		if got := assignUserVars(tc.in); got != tc.want {
			t.Errorf("assignUserVars(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
