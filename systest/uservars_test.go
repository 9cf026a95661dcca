package systest

import "testing"

// TestUserVarAssignments runs the := idioms of MySQL applications over
// the text protocol: a rank numbered in a select list, a group counter
// that reads the previous row's value, a renumbering UPDATE, and a
// variable read in the same select list that assigns it. Each was 1064.
func TestUserVarAssignments(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	c := conn(t, db)
	xexec(t, c, "CREATE TABLE s (id INT PRIMARY KEY, name VARCHAR(10), score INT, pos INT)")
	xexec(t, c, "INSERT INTO s (id, name, score) VALUES (1, 'a', 50), (2, 'b', 70), (3, 'c', 60), (4, 'd', 70)")
	wantRows(t, "rank", qLines(t, c, "SELECT @rank := @rank + 1 AS rnk, name FROM (SELECT name FROM s ORDER BY score DESC, id LIMIT 10) x, (SELECT @rank := 0) r"),
		[]string{"1|b", "2|d", "3|c", "4|a"})
	// the table first, the initializing derived table joined to it
	wantRows(t, "rank, table first", qLines(t, c, "SELECT @r := @r + 1 AS rnk, name FROM s, (SELECT @r := 0) x ORDER BY id"),
		[]string{"1|a", "2|b", "3|c", "4|d"})
	xexec(t, c, "SET @prev := NULL, @grp := 0")
	wantRows(t, "groups", qLines(t, c, "SELECT id, @grp := IF(score = @prev, @grp, @grp + 1) AS g, @prev := score AS p FROM (SELECT * FROM s ORDER BY score, id LIMIT 10) t"),
		[]string{"1|1|50", "3|2|60", "2|3|70", "4|3|70"})
	xexec(t, c, "SET @n := 0")
	xexec(t, c, "UPDATE s SET pos = @n := @n + 1 ORDER BY score DESC, id")
	wantRows(t, "renumbered", qLines(t, c, "SELECT id, pos FROM s ORDER BY pos"), []string{"2|1", "4|2", "3|3", "1|4"})
	wantRows(t, "same list", qLines(t, c, "SELECT @fresh := 'it''s', @fresh, @n"), []string{"it's|it's|4"})
	rows, err := c.QueryContext(t.Context(), "SELECT @h := 1, @h")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	rows.Close()
	if len(cols) != 2 || cols[0] != "@h := 1" || cols[1] != "@h" {
		t.Errorf("column names %q, want [@h := 1 @h]", cols)
	}
}
