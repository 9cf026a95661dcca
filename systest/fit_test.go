package systest

import (
	"strings"
	"testing"
)

// TestValuesThatDoNotFit stores strings past a column's length, integers
// and DECIMALs past their bounds and unknown ENUM values, as MySQL does:
// in strict mode each fails with MySQL's code and text naming the column
// and row (1406, 1264, 1265), changing nothing; with sql_mode=” (or
// IGNORE) the row gets what fits and the statement the warnings. Before,
// every sql_mode failed, DECIMAL and ENUM with 1105, in
// go-mysql-server's words.
func TestValuesThatDoNotFit(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	c := conn(t, db)
	xexec(t, c, "CREATE TABLE w (id INT PRIMARY KEY, s VARCHAR(5), n TINYINT, u TINYINT UNSIGNED, d DECIMAL(5,2), e ENUM('a','b'))")
	xexec(t, c, "INSERT INTO w VALUES (1, 'ok', 1, 1, 1, 'a')")
	for _, tc := range []struct {
		q     string
		arg   any
		code  uint16
		state string
		msg   string
	}{
		{q: "INSERT INTO w (id, s) VALUES (2, 'toolong')", code: 1406, state: "22001", msg: "Data too long for column 's' at row 1"},
		{q: "INSERT INTO w (id, n) VALUES (2, 300)", code: 1264, state: "22003", msg: "Out of range value for column 'n' at row 1"},
		{q: "INSERT INTO w (id, n) VALUES (2, ?)", arg: 300, code: 1264, state: "22003", msg: "Out of range value for column 'n' at row 1"},
		{q: "INSERT INTO w (id, u) VALUES (2, 5), (3, -1)", code: 1264, state: "22003", msg: "Out of range value for column 'u' at row 2"},
		{q: "INSERT INTO w (id, d) VALUES (2, 1000)", code: 1264, state: "22003", msg: "Out of range value for column 'd' at row 1"},
		{q: "INSERT INTO w (id, e) VALUES (2, 'c')", code: 1265, state: "01000", msg: "Data truncated for column 'e' at row 1"},
		{q: "UPDATE w SET n = n + 200 WHERE id = 1", code: 1264, state: "22003", msg: "Out of range value for column 'n' at row 1"},
		{q: "UPDATE w SET s = CONCAT(s, 'tooo') WHERE id = 1", code: 1406, state: "22001", msg: "Data too long for column 's' at row 1"},
	} {
		var err error
		if tc.arg != nil {
			_, err = c.ExecContext(t.Context(), tc.q, tc.arg)
		} else {
			err = tryExec(c, tc.q)
		}
		code, state := mysqlErr(err)
		if code != tc.code || state != tc.state || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %d (%s) %s", tc.q, err, tc.code, tc.state, tc.msg)
		}
	}
	wantRows(t, "after the refused statements", qLines(t, c, "SELECT * FROM w"), []string{"1|ok|1|1|1.00|a"})
	// trailing spaces past the length are cut, in strict mode too
	xexec(t, c, "INSERT INTO w (id, s) VALUES (9, 'abcde   ')")
	xexec(t, c, "UPDATE w SET s = CONCAT(s, '  ') WHERE id = 9")
	wantRows(t, "spaces cut", qLines(t, c, "SELECT CONCAT('[', s, ']') FROM w WHERE id = 9"), []string{"[abcde]"})
	xexec(t, c, "DELETE FROM w WHERE id = 9")
	xexec(t, c, "SET sql_mode = ''")
	xexec(t, c, "INSERT INTO w VALUES (2, 'toolong', 300, -1, 12345.678, 'c')")
	wantRows(t, "warnings", qLines(t, c, "SHOW WARNINGS"), []string{
		"Warning|1265|Data truncated for column 's' at row 1",
		"Warning|1264|Out of range value for column 'n' at row 1",
		"Warning|1264|Out of range value for column 'u' at row 1",
		"Warning|1264|Out of range value for column 'd' at row 1",
		"Warning|1265|Data truncated for column 'e' at row 1",
	})
	xexec(t, c, "UPDATE w SET n = n - 300 WHERE id = 1")
	wantRows(t, "stored what fits", qLines(t, c, "SELECT * FROM w ORDER BY id"), []string{"1|ok|-128|1|1.00|a", "2|toolo|127|0|999.99|"})
	xexec(t, c, "SET sql_mode = DEFAULT")
	xexec(t, c, "INSERT IGNORE INTO w (id, n) VALUES (3, 1000)")
	wantRows(t, "IGNORE", qLines(t, c, "SELECT n FROM w WHERE id = 3"), []string{"127"})

	// TEXT and BLOB hold a number of bytes: past it, strict mode refuses
	// with MySQL's short text (go-mysql-server's quoted the whole value),
	// sql_mode='' stores what fits, a TEXT cut where a character starts
	xexec(t, c, "CREATE TABLE tb (id INT PRIMARY KEY, b BLOB, t TINYTEXT)")
	for _, tc := range []struct{ q, col string }{
		{"INSERT INTO tb (id, b) VALUES (1, REPEAT('x', 65536))", "b"},
		{"INSERT INTO tb (id, t) VALUES (1, REPEAT('é', 128))", "t"},
	} {
		err := tryExec(c, tc.q)
		code, state := mysqlErr(err)
		if want := "Data too long for column '" + tc.col + "' at row 1"; code != 1406 || state != "22001" || err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: %v, want 1406 (22001) %s", tc.q, err, want)
		}
	}
	xexec(t, c, "SET sql_mode = ''")
	xexec(t, c, "INSERT INTO tb VALUES (1, REPEAT('x', 65536), REPEAT('é', 128))")
	wantRows(t, "TEXT and BLOB cut", qLines(t, c, "SELECT LENGTH(b), LENGTH(t), CHAR_LENGTH(t) FROM tb"), []string{"65535|254|127"})
}

// TestIntegerOverflow checks integer arithmetic past BIGINT: MySQL's 1690
// (22003), where go-mysql-server wrapped around or clamped an unsigned
// operand; results in range are unchanged.
func TestIntegerOverflow(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE big (id INT PRIMARY KEY, b BIGINT, u BIGINT UNSIGNED)")
	xexec(t, db, "INSERT INTO big VALUES (1, 9223372036854775807, 18446744073709551615), (2, -5, 7)")
	for _, q := range []string{
		"SELECT b + 1 FROM big WHERE id = 1",
		"SELECT b * 2 FROM big WHERE id = 1",
		"SELECT -b - 2 FROM big WHERE id = 1",
		"SELECT u + 0 FROM big WHERE id = 1",
		"SELECT 9223372036854775807 + 1",
	} {
		err := tryExec(db, q)
		if code, state := mysqlErr(err); code != 1690 || state != "22003" || !strings.Contains(err.Error(), "value is out of range in") {
			t.Errorf("%s: %v, want 1690 (22003)", q, err)
		}
	}
	wantRows(t, "in range", qLines(t, db, "SELECT b + 1, b * 3, u - 2, u * 2, b - 9223372036854775800 FROM big WHERE id = ?", 2),
		[]string{"-4|-15|5|14|-9223372036854775805"})
	if n, _ := xexec(t, db, "UPDATE big SET b = b + 1 WHERE id = 2").RowsAffected(); n != 1 {
		t.Errorf("UPDATE b = b + 1 changed %d rows, want 1", n)
	}
	wantErr(t, tryExec(db, "UPDATE big SET b = b + 1 WHERE id = 1"), 1690, "22003")

	// an unsigned operand makes the result BIGINT UNSIGNED, as in MySQL:
	// a negative one is out of range (it was the negative number)
	for _, q := range []string{
		"SELECT u - 10 FROM big WHERE id = 2",
		"SELECT CAST(5 AS UNSIGNED) - 10",
		"SELECT u * -1 FROM big WHERE id = 2",
		"SELECT u + (-8) FROM big WHERE id = 2",
	} {
		err := tryExec(db, q)
		if code, _ := mysqlErr(err); code != 1690 || !strings.Contains(err.Error(), "BIGINT UNSIGNED value is out of range in") {
			t.Errorf("%s: %v, want 1690 BIGINT UNSIGNED value is out of range", q, err)
		}
	}
	wantErr(t, tryExec(db, "UPDATE big SET b = u - 8 WHERE id = 2"), 1690, "22003")
	wantRows(t, "unsigned in range", qLines(t, db, "SELECT u - 7, u + (-7), -u + 1, u - b FROM big WHERE id = ?", 2),
		[]string{"0|0|-6|11"}) // b is -4 since the UPDATE above
	// NO_UNSIGNED_SUBTRACTION makes a subtraction signed
	c := conn(t, db)
	xexec(t, c, "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_UNSIGNED_SUBTRACTION')")
	if n := qInt(t, c, "SELECT u - 10 FROM big WHERE id = 2"); n != -3 {
		t.Errorf("u - 10 under NO_UNSIGNED_SUBTRACTION = %d, want -3", n)
	}
}
