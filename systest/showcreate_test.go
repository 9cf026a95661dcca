package systest

import (
	"strings"
	"testing"
)

// TestShowCreateTableAsMySQL checks SHOW CREATE TABLE's column lines as
// MySQL 8.0 writes them (a nullable column without a default says
// DEFAULT NULL, TEXT and BLOB columns do not), and that the statement
// creates the same table again.
func TestShowCreateTableAsMySQL(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	c := conn(t, db)
	xexec(t, c, "CREATE TABLE s (id INT AUTO_INCREMENT PRIMARY KEY, n INT, v VARCHAR(10) NOT NULL DEFAULT 'x', "+
		"memo TEXT, doc JSON, bin BLOB, d DATE, twice INT AS (n * 2), KEY (n), "+
		// conditions as MariaDB's dumps write them, in one pair of parentheses
		"big BOOL AS (n > 100), isx BOOL GENERATED ALWAYS AS (v = 'x') STORED, known BOOL AS (n IS NOT NULL))")
	xexec(t, c, "INSERT INTO s (n) VALUES (150), (NULL)")
	if got := strings.Join(qLines(t, c, "SELECT big, isx, known FROM s ORDER BY id"), " "); got != "1|1|1 NULL|1|0" {
		t.Errorf("generated conditions: %s, want 1|1|1 NULL|1|0", got)
	}
	show := func(table string) string {
		var name, ddl string
		if err := c.QueryRowContext(t.Context(), "SHOW CREATE TABLE "+table).Scan(&name, &ddl); err != nil {
			t.Fatal(err)
		}
		return ddl
	}
	ddl := show("s")
	for _, want := range []string{
		"`id` int NOT NULL AUTO_INCREMENT,", "`n` int DEFAULT NULL,", "`v` varchar(10) NOT NULL DEFAULT 'x',",
		"`memo` text,", "`doc` json DEFAULT NULL,", "`bin` blob,", "`d` date DEFAULT NULL,",
		"`twice` int GENERATED ALWAYS AS ((`n` * 2)),", "`big` tinyint(1) GENERATED ALWAYS AS ((`n` > 100)),",
		"`isx` tinyint(1) GENERATED ALWAYS AS ((`v` = 'x')) STORED,",
	} {
		if !strings.Contains(ddl, want) {
			t.Errorf("SHOW CREATE TABLE lacks %q:\n%s", want, ddl)
		}
	}
	xexec(t, c, strings.Replace(ddl, "CREATE TABLE `s`", "CREATE TABLE `s2`", 1))
	if again := show("s2"); strings.Replace(again, "`s2`", "`s`", 1) != ddl {
		t.Errorf("the table SHOW CREATE TABLE's statement created differs:\n%s\nwant\n%s", again, ddl)
	}
}
