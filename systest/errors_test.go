package systest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestErrorCodes checks that errors reach go-sql-driver with MySQL's error
// number and SQLSTATE.
func TestErrorCodes(t *testing.T) {
	n, db := startNode(t, "err1", "e")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, name VARCHAR(5), UNIQUE KEY uname (name))")
	xexec(t, db, "INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b')")
	nodb := n.DB("")

	cases := []struct {
		name  string
		db    *sql.DB
		query string
		code  uint16
		state string
	}{
		{"DuplicatePrimaryKey", db, "INSERT INTO t VALUES (1, 1, 'z')", 1062, "23000"},
		{"DuplicateUniqueKey", db, "INSERT INTO t VALUES (3, 1, 'a')", 1062, "23000"},
		{"DuplicateKeyByUpdate", db, "UPDATE t SET id = 2 WHERE id = 1", 1062, "23000"},
		{"ParseErrorKeyword", db, "SELEC 1", 1064, "42000"},
		{"ParseErrorIncomplete", db, "SELECT * FROM", 1064, "42000"},
		{"ParseErrorTrailing", db, "SELECT 1 FROM t WHERE", 1064, "42000"},
		{"UnknownFunction", db, "SELECT nosuchfn(1)", 1305, "42000"},
		{"UnknownTable", db, "SELECT * FROM nosuch", 1146, "42S02"},
		{"UnknownTableInsert", db, "INSERT INTO nosuch VALUES (1)", 1146, "42S02"},
		{"UnknownColumn", db, "SELECT nosuch FROM t", 1054, "42S22"},
		{"UnknownColumnWhere", db, "SELECT id FROM t WHERE nosuch = 1", 1054, "42S22"},
		{"UnknownColumnUpdate", db, "UPDATE t SET nosuch = 1", 1054, "42S22"},
		{"UnknownDatabaseUse", db, "USE nope", 1049, "42000"},
		{"TableExists", db, "CREATE TABLE t (id INT PRIMARY KEY)", 1050, "42S01"},
		{"DatabaseExists", db, "CREATE DATABASE e", 1007, "HY000"},
		{"DropUnknownTable", db, "DROP TABLE nosuch", 1051, "42S02"},
		{"ColumnCountMismatch", db, "INSERT INTO t VALUES (9)", 1136, "21S01"},
		{"NotNullViolation", db, "INSERT INTO t (id, v) VALUES (9, NULL)", 1048, "23000"},
		{"DataTooLong", db, "INSERT INTO t VALUES (9, 9, 'toolongvalue')", 1406, "22001"},
		{"SubqueryMoreThanOneRow", db, "SELECT (SELECT id FROM t)", 1242, "21000"},
		{"AmbiguousColumn", db, "SELECT id FROM t JOIN t AS t2", 1052, "23000"},
		{"NoDatabaseSelected", nodb, "SELECT * FROM t", 1046, "3D000"},
		{"NonAggregatedColumn", db, "SELECT COUNT(*), NOW(), v FROM t", 1140, "42000"},
		{"NonGroupedColumn", db, "SELECT v, COUNT(*) FROM t GROUP BY name", 1055, "42000"},
		{"UnknownCollation", db, "SET collation_connection = 'nope'", 1273, "HY000"},
		{"UnknownCollationTable", db, "CREATE TABLE c (s VARCHAR(3) COLLATE nope)", 1273, "HY000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tryExec(tc.db, tc.query)
			wantErr(t, err, tc.code, tc.state)
		})
	}

	t.Run("UnknownDatabaseInDSN", func(t *testing.T) {
		d, err := sql.Open("mysql", n.DSN("nope"))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		wantErr(t, d.PingContext(ctx), 1049, "42000")
	})

	// Under ONLY_FULL_GROUP_BY, as in MySQL, only column references must
	// be grouped or aggregated: functions without arguments and variables
	// are the same for every row.
	t.Run("ColumnFreeValuesWithAggregates", func(t *testing.T) {
		var n, conn, v int64
		var user, db1 string
		err := db.QueryRow("SELECT COUNT(*), CURRENT_USER(), DATABASE(), CONNECTION_ID() > 0, @@auto_increment_increment FROM t").
			Scan(&n, &user, &db1, &conn, &v)
		if err != nil || n != 2 || user != "root@localhost" || db1 != "e" || conn != 1 || v != 1 {
			t.Fatalf("got %d %q %q %d %d, %v", n, user, db1, conn, v, err)
		}
		if got := qInts(t, db, "SELECT SUM(v) + @@auto_increment_increment FROM t GROUP BY name ORDER BY name"); !equalInts(got, []int64{11, 21}) {
			t.Fatalf("grouped: %v", got)
		}
	})

	// Nothing above changed the table.
	if got := qInts(t, db, "SELECT v FROM t ORDER BY id"); !equalInts(got, []int64{10, 20}) {
		t.Fatalf("after the failed statements v = %v, want [10 20]", got)
	}
}

// TestFailedAutocommitLeavesNoTransaction checks that a failed autocommit
// statement does not leave a transaction (snapshot or locks) behind on its
// connection.
func TestFailedAutocommitLeavesNoTransaction(t *testing.T) {
	_, db := startNode(t, "err2", "e")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, u INT, UNIQUE KEY uu (u))")
	xexec(t, db, "INSERT INTO t VALUES (1, 0, 1), (2, 0, 2)")

	// Does the server know @@in_transaction (MariaDB)? Then check it too.
	probe := conn(t, db)
	var inTxnVar bool
	if err := tryExec(probe, "SELECT @@in_transaction"); err == nil {
		inTxnVar = true
	} else {
		t.Logf("@@in_transaction not available (%s); checking visibility and locks only", errDesc(err))
	}

	cases := []struct {
		name  string
		setup string // run on the session first
		query string
		code  uint16
	}{
		{"DuplicatePrimaryKey", "", "INSERT INTO t VALUES (1, 5, 5)", 1062},
		{"DuplicateMultiRow", "", "INSERT INTO t VALUES (7, 7, 7), (1, 5, 5)", 1062},
		{"DuplicateUniqueByUpdate", "", "UPDATE t SET u = 2 WHERE id = 1", 1062},
		{"UnknownColumn", "", "UPDATE t SET nosuch = 1 WHERE id = 1", 1054},
		{"ParseError", "", "UPDATE t SET v = WHERE id = 1", 1064},
		{"LockWaitTimeout", "SET SESSION innodb_lock_wait_timeout = 1", "UPDATE t SET v = v + 1 WHERE id = 2", 1205},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, other := conn(t, db), conn(t, db)
			if tc.setup != "" {
				xexec(t, c, tc.setup)
			}
			before := qInt(t, c, "SELECT v FROM t WHERE id = 1")
			var holder *sql.Conn
			if tc.code == 1205 {
				holder = conn(t, db)
				xexec(t, holder, "BEGIN")
				xexec(t, holder, "UPDATE t SET v = v WHERE id = 2")
			}
			err := tryExec(c, tc.query)
			if holder != nil {
				xexec(t, holder, "ROLLBACK")
			}
			if err == nil {
				t.Fatalf("%s succeeded, want error %d", tc.query, tc.code)
			}
			if code, _ := mysqlErr(err); code != tc.code {
				t.Errorf("%s: want error %d, got %s", tc.query, tc.code, errDesc(err))
			}
			if inTxnVar {
				if v := qInt(t, c, "SELECT @@in_transaction"); v != 0 {
					t.Errorf("@@in_transaction = %d after the failed autocommit statement, want 0", v)
				}
			}
			// Another session changes row 1 (the row the failed statement
			// targeted): it must not wait for a lock the failed statement
			// left behind, and the failed session must see the change.
			want := before + int64(i) + 1
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err = other.ExecContext(ctx, fmt.Sprintf("UPDATE t SET v = %d WHERE id = 1", want))
			cancel()
			if err != nil {
				t.Fatalf("another session's UPDATE of row 1 after the failed statement: %s (a lock left behind?)", errDesc(err))
			}
			if v := qInt(t, c, "SELECT v FROM t WHERE id = 1"); v != want {
				t.Fatalf("after the failed %q the same connection reads v = %d, want %d (another session's committed change): a stale transaction/snapshot was left open", tc.query, v, want)
			}
			if cnt := qInt(t, c, "SELECT COUNT(*) FROM t WHERE id = 7"); cnt != 0 {
				t.Fatalf("a row of the failed statement is visible")
			}
		})
	}
}

// TestDiagnosticsArea checks that a failed statement leaves its error as
// the session's condition, as MySQL does: SHOW WARNINGS and SHOW ERRORS
// list it, SHOW COUNT(*) ERRORS counts it, and the next statement clears
// it. FLUSH LOGS (mysqldump --flush-logs) is accepted with RELOAD.
func TestDiagnosticsArea(t *testing.T) {
	n, db := startNode(t, "n1", "d1")
	c := conn(t, db)
	conditions := func(q string) []string {
		t.Helper()
		rs, err := c.QueryContext(t.Context(), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rs.Close()
		var out []string
		for rs.Next() {
			var level, msg string
			var code int
			if err := rs.Scan(&level, &code, &msg); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %d", level, code))
		}
		return out
	}
	if err := tryExec(c, "SELECT * FROM nope"); err == nil {
		t.Fatal("SELECT from a missing table succeeded")
	}
	for _, q := range []string{"SHOW WARNINGS", "SHOW ERRORS", "SHOW ERRORS LIMIT 1", "SHOW ERRORS LIMIT 0, 5"} {
		if got := conditions(q); len(got) != 1 || got[0] != "Error 1146" {
			t.Errorf("%s after a failed SELECT = %v, want [Error 1146]", q, got)
		}
	}
	if got := conditions("SHOW ERRORS LIMIT 1, 5"); len(got) != 0 {
		t.Errorf("SHOW ERRORS LIMIT 1, 5 = %v, want none", got)
	}
	if n := qInt(t, c, "SHOW COUNT(*) ERRORS"); n != 1 {
		t.Errorf("SHOW COUNT(*) ERRORS = %d, want 1", n)
	}
	xexec(t, c, "SELECT 1/0")
	if got := conditions("SHOW WARNINGS"); len(got) != 1 || got[0] != "Warning 1365" {
		t.Errorf("SHOW WARNINGS after 1/0 = %v, want [Warning 1365]", got)
	}
	if n := qInt(t, c, "SHOW COUNT(*) ERRORS"); n != 0 {
		t.Errorf("SHOW COUNT(*) ERRORS after 1/0 = %d, want 0", n)
	}
	if n := qInt(t, c, "SHOW COUNT(*) WARNINGS"); n != 1 {
		t.Errorf("SHOW COUNT(*) WARNINGS after 1/0 = %d, want 1", n)
	}
	// a statement without tables leaves the conditions before it, and
	// @@warning_count / @@error_count count them
	xexec(t, c, "SELECT 1")
	for q, want := range map[string]int64{"SELECT @@warning_count": 1, "SELECT @@session.error_count": 0, "SHOW COUNT(*) WARNINGS": 1} {
		if n := qInt(t, c, q); n != want {
			t.Errorf("%s after 1/0 and SELECT 1 = %d, want %d", q, n, want)
		}
	}
	if err := tryExec(c, "SELECT * FROM nope"); err == nil {
		t.Fatal("SELECT from a missing table succeeded")
	}
	if n := qInt(t, c, "SELECT @@error_count"); n != 1 {
		t.Errorf("@@error_count after a failed SELECT = %d, want 1", n)
	}
	xexec(t, c, "CREATE TABLE w (id INT PRIMARY KEY)")
	xexec(t, c, "INSERT IGNORE INTO w VALUES (1), (1), (1)")
	if n := qInt(t, c, "SELECT @@warning_count"); n != 2 {
		t.Errorf("@@warning_count after two ignored duplicates = %d, want 2", n)
	}
	if n := qInt(t, c, "SELECT COUNT(*) FROM w"); n != 1 {
		t.Errorf("COUNT(*) = %d, want 1", n)
	}
	if n := qInt(t, c, "SELECT @@warning_count"); n != 0 {
		t.Errorf("@@warning_count after a SELECT from a table = %d, want 0", n)
	}
	wantErr(t, tryExec(c, "SET warning_count = 3"), 1238, "HY000")
	// what IGNORE skips is a Warning with MySQL's text
	xexec(t, c, "CREATE TABLE ig (id INT PRIMARY KEY, u INT, v INT NOT NULL, UNIQUE KEY u (u), CONSTRAINT small CHECK (u < 100))")
	xexec(t, c, "INSERT INTO ig VALUES (1, 1, 1)")
	xexec(t, c, "INSERT IGNORE INTO ig VALUES (1, 2, 1), (2, 1, 1), (3, 3, NULL), (4, 400, 1)")
	wantRows(t, "SHOW WARNINGS after INSERT IGNORE", qLines(t, c, "SHOW WARNINGS"), []string{
		"Warning|1062|Duplicate entry '1' for key 'ig.PRIMARY'",
		"Warning|1062|Duplicate entry '1' for key 'ig.u'",
		"Warning|1048|Column 'v' cannot be null",
		"Warning|3819|Check constraint 'small' is violated.",
	})
	// in the order raised
	xexec(t, c, "SELECT CAST('1a' AS SIGNED), CAST('2b' AS SIGNED)")
	for q, want := range map[string]string{"SHOW WARNINGS LIMIT 1": "1a", "SHOW WARNINGS LIMIT 1, 1": "2b"} {
		var level, msg string
		var code int
		if err := c.QueryRowContext(t.Context(), q).Scan(&level, &code, &msg); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if !strings.Contains(msg, want) {
			t.Errorf("%s = %s, want the warning about %s", q, msg, want)
		}
	}
	for _, q := range []string{"FLUSH LOGS", "FLUSH BINARY LOGS", "FLUSH LOCAL ERROR LOGS"} {
		xexec(t, c, q)
	}
	xexec(t, db, "CREATE USER 'plain'@'%' IDENTIFIED BY 'pw'")
	plain, err := sql.Open("mysql", "plain:pw@tcp("+n.SQLAddr+")/?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	wantErr(t, tryExec(plain, "FLUSH LOGS"), 1227, "42000")
}

// TestErrorMessages checks MySQL's text for the errors users meet most,
// where go-mysql-server has its own ("table not found: t").
func TestErrorMessages(t *testing.T) {
	n, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, a INT)")
	xexec(t, db, "CREATE TABLE dd (id INT PRIMARY KEY, d DATE, UNIQUE KEY d (d))")
	xexec(t, db, "INSERT INTO dd VALUES (1, '2024-01-05')")
	xexec(t, db, "CREATE TABLE ck (a INT, CONSTRAINT pos CHECK (a > 0))")
	xexec(t, db, "CREATE TABLE parent (id INT PRIMARY KEY)")
	xexec(t, db, "CREATE TABLE child (id INT PRIMARY KEY, pid INT, CONSTRAINT fk_p FOREIGN KEY (pid) REFERENCES parent (id) ON DELETE CASCADE)")
	xexec(t, db, "CREATE TABLE c2 (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES parent (id))")
	xexec(t, db, "INSERT INTO parent VALUES (1)")
	xexec(t, db, "INSERT INTO c2 VALUES (1, 1)")
	for q, want := range map[string]string{
		"SELECT * FROM nope":                      "Error 1146 (42S02): Table 'd1.nope' doesn't exist",
		"SELECT * FROM other.nope":                "Error 1146 (42S02): Table 'other.nope' doesn't exist",
		"DROP TABLE nope":                         "Error 1051 (42S02): Unknown table 'd1.nope'",
		"CREATE TABLE t (id INT)":                 "Error 1050 (42S01): Table 't' already exists",
		"CREATE DATABASE d1":                      "Error 1007 (HY000): Can't create database 'd1'; database exists",
		"ALTER TABLE t ADD COLUMN a INT":          "Error 1060 (42S21): Duplicate column name 'a'",
		"CREATE TABLE u (a INT, a INT)":           "Error 1060 (42S21): Duplicate column name 'a'",
		"INSERT INTO dd VALUES (2, '2024-01-05')": "Error 1062 (23000): Duplicate entry '2024-01-05' for key 'dd.d'",
		"CALL nope()":                             "Error 1305 (42000): PROCEDURE d1.nope does not exist",
		"INSERT INTO ck VALUES (-1)":              "Error 3819 (HY000): Check constraint 'pos' is violated.",
		"INSERT INTO child VALUES (1, 9)":         "Error 1452 (23000): Cannot add or update a child row: a foreign key constraint fails (`d1`.`child`, CONSTRAINT `fk_p` FOREIGN KEY (`pid`) REFERENCES `parent` (`id`) ON DELETE CASCADE)",
		"DELETE FROM parent WHERE id = 1":         "Error 1451 (23000): Cannot delete or update a parent row: a foreign key constraint fails (`d1`.`c2`, CONSTRAINT `c2_ibfk_1` FOREIGN KEY (`pid`) REFERENCES `parent` (`id`))",
		"SELECT nope FROM t":                      "Error 1054 (42S22): Unknown column 'nope' in 'field list'",
		"SELECT id FROM t WHERE `nope` = 1":       "Error 1054 (42S22): Unknown column 'nope' in 'where clause'",
		"SELECT id FROM t ORDER BY nope":          "Error 1054 (42S22): Unknown column 'nope' in 'order clause'",
		"SELECT x.nope FROM t x":                  "Error 1054 (42S22): Unknown column 'x.nope' in 'field list'",
		"SELEC 1":                                 "Error 1064 (42000): You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near 'SELEC 1' at line 1",
		"SELECT * FROM t WHER id = 1":             "Error 1064 (42000): You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near 'id = 1' at line 1",
		"INSERT INTO dd VALUES (3, '2024-02-30')": "Error 1292 (22007): Incorrect date value: '2024-02-30' for column 'd' at row 1",
		"UPDATE dd SET d = '2023-02-29'":          "Error 1292 (22007): Incorrect date value: '2023-02-29' for column 'd' at row 1",
		"SELECT * FROM nodb.t":                    "Error 1146 (42S02): Table 'nodb.t' doesn't exist",
	} {
		if err := tryExec(db, q); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", q, err, want)
		}
	}
	other, err := sql.Open("mysql", n.DSN("nodb"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Ping(); err == nil || err.Error() != "Error 1049 (42000): Unknown database 'nodb'" {
		t.Errorf("connecting to a missing database: %v", err)
	}
}

// TestStrictNumericStrings checks strings stored into numeric columns as
// MySQL checks them: in strict mode ” or 'abc' fail with 1366 and '3x'
// with 1265, and the statement changes nothing; with IGNORE or outside
// strict mode the column gets 0 or the number and the statement a
// warning. Text and prepared statements alike.
func TestStrictNumericStrings(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	c := conn(t, db)
	xexec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, i INT, d DECIMAL(5,2), f DOUBLE)")
	xexec(t, c, "INSERT INTO t VALUES (1, ' 42 ', ' 1.5 ', '2e3'), (2, '3.7', '.25', '-1')")
	if got := qStr(t, c, "SELECT CONCAT_WS(',', i, d, f) FROM t WHERE id = 1"); got != "42,1.50,2000" {
		t.Errorf("row 1 = %s, want 42,1.50,2000", got)
	}
	for _, tc := range []struct {
		q     string
		args  []any
		code  uint16
		state string
		msg   string
	}{
		{"INSERT INTO t (id, i) VALUES (3, '')", nil, 1366, "HY000", "Incorrect integer value: '' for column 'i' at row 1"},
		{"INSERT INTO t (id, i) VALUES (3, ?)", []any{""}, 1366, "HY000", "Incorrect integer value: '' for column 'i' at row 1"},
		{"INSERT INTO t (id, d) VALUES (3, 'abc')", nil, 1366, "HY000", "Incorrect decimal value: 'abc' for column 'd' at row 1"},
		{"INSERT INTO t (id, f) VALUES (3, ' ')", nil, 1366, "HY000", "Incorrect double value: ' ' for column 'f' at row 1"},
		{"INSERT INTO t (id, i) VALUES (3, '3x')", nil, 1265, "01000", "Data truncated for column 'i' at row 1"},
		{"INSERT INTO t (id, i) VALUES (3, 5), (4, '0x1F')", nil, 1265, "01000", "Data truncated for column 'i' at row 2"},
		{"UPDATE t SET i = '' WHERE id = 1", nil, 1366, "HY000", "Incorrect integer value: '' for column 'i' at row 1"},
		{"UPDATE t SET d = ? WHERE id >= 1", []any{"9q"}, 1265, "01000", "Data truncated for column 'd' at row 1"},
	} {
		err := tryExec(c, tc.q, tc.args...)
		if checkErr(t, err, tc.code, tc.state, tc.q) && !strings.HasSuffix(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want the message %q", tc.q, err, tc.msg)
		}
	}
	if got := qStr(t, c, "SELECT GROUP_CONCAT(CONCAT_WS(',', id, i, d, f) ORDER BY id SEPARATOR ';') FROM t"); got != "1,42,1.50,2000;2,4,0.25,-1" {
		t.Errorf("after the failed statements the table holds %s", got)
	}
	xexec(t, c, "INSERT IGNORE INTO t (id, i, d) VALUES (5, 'q', '5y')")
	if n := qInt(t, c, "SELECT @@warning_count"); n != 2 {
		t.Errorf("INSERT IGNORE of two bad strings raised %d warnings, want 2", n)
	}
	xexec(t, c, "SET sql_mode = ''")
	xexec(t, c, "INSERT INTO t (id, i, f) VALUES (6, '', '12ab')")
	if n := qInt(t, c, "SELECT @@warning_count"); n != 2 {
		t.Errorf("a non-strict INSERT of two bad strings raised %d warnings, want 2", n)
	}
	xexec(t, c, "UPDATE t SET i = '7 apples' WHERE id = 6")
	if got := qStr(t, c, "SELECT GROUP_CONCAT(CONCAT_WS(',', id, i, d, f) ORDER BY id SEPARATOR ';') FROM t WHERE id > 4"); got != "5,0,5.00;6,7,12" {
		t.Errorf("rows stored with warnings: %s, want 5,0,5.00;6,7,12", got)
	}
}

// TestChecksWithVirtualColumns checks that a table with a virtual
// generated column enforces its CHECK constraints, including one on the
// virtual column, through INSERT (text and prepared), REPLACE, ON
// DUPLICATE KEY UPDATE and UPDATE, and that SHOW CREATE TABLE lists them
// (go-mysql-server's wrapper of such tables hid them: nothing was
// enforced).
func TestChecksWithVirtualColumns(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	c := conn(t, db)
	xexec(t, c, "CREATE TABLE v (id INT PRIMARY KEY, a INT, b INT AS (a * 2), CHECK (a > 0), CONSTRAINT small CHECK (b < 100))")
	xexec(t, c, "INSERT INTO v (id, a) VALUES (1, 1)")
	for _, tc := range []struct {
		q    string
		args []any
		name string
	}{
		{"INSERT INTO v (id, a) VALUES (2, -1)", nil, "v_chk_1"},
		{"INSERT INTO v (id, a) VALUES (?, ?)", []any{2, -1}, "v_chk_1"},
		{"INSERT INTO v (id, a) VALUES (2, 60)", nil, "small"},
		{"REPLACE INTO v (id, a) VALUES (1, -5)", nil, "v_chk_1"},
		{"INSERT INTO v (id, a) VALUES (1, 2) ON DUPLICATE KEY UPDATE a = -1", nil, "v_chk_1"},
		{"UPDATE v SET a = 50 WHERE id = 1", nil, "small"},
		{"UPDATE v SET a = a - 5", nil, "v_chk_1"},
	} {
		err := tryExec(c, tc.q, tc.args...)
		if checkErr(t, err, 3819, "HY000", tc.q) && !strings.Contains(err.Error(), "'"+tc.name+"'") {
			t.Errorf("%s: %v, want constraint %s", tc.q, err, tc.name)
		}
	}
	if got := qStr(t, c, "SELECT CONCAT_WS(',', COUNT(*), SUM(a), SUM(b)) FROM v"); got != "1,1,2" {
		t.Errorf("after the refused statements the table holds (count, a, b) %s, want 1,1,2", got)
	}
	var name, ddl string
	if err := c.QueryRowContext(t.Context(), "SHOW CREATE TABLE v").Scan(&name, &ddl); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CONSTRAINT `v_chk_1` CHECK ((`a` > 0))", "CONSTRAINT `small` CHECK ((`b` < 100))"} {
		if !strings.Contains(ddl, want) {
			t.Errorf("SHOW CREATE TABLE lacks %s:\n%s", want, ddl)
		}
	}
}

// TestIfExistsNotes checks the notes of DDL with IF [NOT] EXISTS that
// finds nothing to do, as MySQL words them: CREATE TABLE IF NOT EXISTS
// raised none, and the database ones left the name unquoted.
func TestIfExistsNotes(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	c := conn(t, db)
	for _, tc := range []struct{ stmt, want string }{
		{"CREATE DATABASE IF NOT EXISTS d1", "Note|1007|Can't create database 'd1'; database exists"},
		{"DROP DATABASE IF EXISTS nosuch", "Note|1008|Can't drop database 'nosuch'; database doesn't exist"},
		{"CREATE TABLE t (id INT PRIMARY KEY)", ""},
		{"CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, v INT)", "Note|1050|Table 't' already exists"},
		{"CREATE TABLE IF NOT EXISTS u (id INT PRIMARY KEY)", ""},
		{"CREATE TEMPORARY TABLE IF NOT EXISTS t (id INT PRIMARY KEY, v INT)", ""}, // shadows t
		{"CREATE TEMPORARY TABLE IF NOT EXISTS t (id INT PRIMARY KEY)", "Note|1050|Table 't' already exists"},
	} {
		if err := tryExec(c, tc.stmt); err != nil {
			t.Fatalf("%s: %v", tc.stmt, err)
		}
		got := strings.Join(qLines(t, c, "SHOW WARNINGS"), "\n")
		if got != tc.want {
			t.Errorf("%s: SHOW WARNINGS gave %q, want %q", tc.stmt, got, tc.want)
		}
	}
	// the temporary t shadows the table, which is untouched
	if cols := qLines(t, c, "SHOW COLUMNS FROM t"); len(cols) != 2 {
		t.Errorf("temporary t has columns %v", cols)
	}
	if cols := qLines(t, db, "SHOW COLUMNS FROM d1.t"); len(cols) != 1 {
		t.Errorf("t has columns %v after CREATE TABLE IF NOT EXISTS with another definition", cols)
	}
}
