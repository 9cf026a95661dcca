package systest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDateComparedWithNumber compares DATE and DATETIME columns (indexed
// and not) with integer constants and parameters, as MySQL reads them:
// the number is a date (YYYYMMDD, YYYYMMDDhhmmss, 0 the zero date), so
// `WHERE d > 0` finds every dated row. Before, go-mysql-server found none.
func TestDateComparedWithNumber(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, d DATE, dt DATETIME, u DATE, KEY (d), UNIQUE KEY (u))")
	for i := 1; i <= 40; i++ {
		u := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format("2006-01-02")
		xexec(t, db, fmt.Sprintf("INSERT INTO t VALUES (%d, '2024-01-%02d', '2024-01-%02d 10:00:00', '%s')", i, i%28+1, i%28+1, u))
	}
	xexec(t, db, "INSERT INTO t VALUES (100, NULL, NULL, NULL)")
	for q, want := range map[string]int64{
		"SELECT COUNT(*) FROM t WHERE d > 0":                           40,
		"SELECT COUNT(*) FROM t WHERE 0 < dt":                          40,
		"SELECT COUNT(*) FROM t WHERE d != 0":                          40,
		"SELECT COUNT(*) FROM t WHERE d = 20240105":                    2,
		"SELECT COUNT(*) FROM t WHERE d BETWEEN 20240101 AND 20240103": 5,
		"SELECT COUNT(*) FROM t WHERE dt >= 20240128100000":            1,
		"SELECT COUNT(*) FROM t WHERE u = 20230205":                    1,
		"SELECT COUNT(*) FROM t WHERE d > 240101":                      39,
		"SELECT SUM(d > 20240101) FROM t":                              39,
	} {
		for _, prepared := range []bool{false, true} {
			c := conn(t, db)
			if !prepared {
				if got := qInt(t, c, q); got != want {
					t.Errorf("%s = %d, want %d", q, got, want)
				}
				continue
			}
			if got := qInt(t, c, "SELECT ("+q+") + ?", 0); got != want {
				t.Errorf("prepared %s = %d, want %d", q, got, want)
			}
		}
	}
	if got := qInt(t, db, "SELECT COUNT(*) FROM t WHERE d > ?", 20240125); got != 3 {
		t.Errorf("d > ? (20240125) = %d, want 3", got)
	}
	if n, _ := xexec(t, db, "UPDATE t SET dt = dt + INTERVAL 1 SECOND WHERE d > 0").RowsAffected(); n != 40 {
		t.Errorf("UPDATE ... WHERE d > 0 changed %d rows, want 40", n)
	}
	if n, _ := xexec(t, db, "DELETE FROM t WHERE d < 20240102").RowsAffected(); n != 1 {
		t.Errorf("DELETE ... WHERE d < 20240102 removed %d rows, want 1", n)
	}
}

// TestDatePastMonthEnd checks a date constant whose day is past its
// month's end, compared with a DATE or DATETIME column (indexed), as
// MySQL compares it: after the month's last day, before the next month's
// first (`dt <= '2024-02-31'` is all of February; it was February 1st to
// 3rd, go-mysql-server reading '2024-02-3').
func TestDatePastMonthEnd(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE e (id INT PRIMARY KEY, dt DATE, ts DATETIME, KEY (dt), KEY (ts))")
	xexec(t, db, "INSERT INTO e VALUES (1,'2024-02-03','2024-02-03 10:00:00'),(2,'2024-02-29','2024-02-29 23:59:59'),(3,'2024-03-01','2024-03-01 00:00:00'),(4,'2024-12-31','2024-12-31 12:00:00')")
	for q, want := range map[string]string{
		"SELECT id FROM e WHERE dt = '2024-02-30'":                              "",
		"SELECT id FROM e WHERE dt <=> '2024-02-30'":                            "",
		"SELECT id FROM e WHERE dt <= '2024-02-31' ORDER BY id":                 "1 2",
		"SELECT id FROM e WHERE dt > '2024-02-30' ORDER BY id":                  "3 4",
		"SELECT id FROM e WHERE '2024-02-31' >= dt ORDER BY id":                 "1 2",
		"SELECT id FROM e WHERE dt BETWEEN '2024-02-01' AND '2024-02-31'":       "1 2",
		"SELECT id FROM e WHERE ts BETWEEN '2024-02-01' AND '2024-02-31'":       "1 2",
		"SELECT id FROM e WHERE ts <= '2024-02-31 00:00:00' ORDER BY id":        "1 2",
		"SELECT id FROM e WHERE dt <= 20240231 ORDER BY id":                     "1 2",
		"SELECT id FROM e WHERE dt = ? ORDER BY id":                             "",
		"SELECT COUNT(*) FROM e WHERE dt BETWEEN '2024-02-30' AND '2024-03-31'": "1",
	} {
		var args []any
		if strings.Contains(q, "?") {
			args = []any{"2024-02-30"}
		}
		if got := strings.Join(qLines(t, db, q, args...), " "); got != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
	if n := xexec(t, db, "DELETE FROM e WHERE dt <= '2024-02-31'"); n != nil {
		if rows, _ := n.RowsAffected(); rows != 2 {
			t.Errorf("DELETE ... WHERE dt <= '2024-02-31' deleted %d rows, want 2", rows)
		}
	}
}

// TestDatetimeFunctionPrecision checks the fractional seconds of
// FROM_UNIXTIME, UTC_TIMESTAMP and CONVERT_TZ as MySQL gives them (they
// came as DATETIME(6): `2023-11-14 22:13:20.000000`).
func TestDatetimeFunctionPrecision(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	c := conn(t, db)
	xexec(t, c, "SET time_zone = '+00:00'")
	xexec(t, c, "CREATE TABLE u (id INT PRIMARY KEY, ts INT, d DATETIME(3), c TIMESTAMP DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)")
	xexec(t, c, "INSERT INTO u (id, ts, d) VALUES (1, 1700000000, '2024-01-01 10:00:00.123')")
	wantRows(t, "FROM_UNIXTIME and CONVERT_TZ", qLines(t, c, "SELECT FROM_UNIXTIME(ts), FROM_UNIXTIME(1700000000), CONVERT_TZ(d, '+00:00', '+01:00'), "+
		"CONVERT_TZ('2024-01-01 00:00:00', '+00:00', '+02:00'), FROM_UNIXTIME(ts) + INTERVAL 1 DAY FROM u"),
		[]string{"2023-11-14 22:13:20|2023-11-14 22:13:20|2024-01-01 11:00:00.123|2024-01-01 02:00:00|2023-11-15 22:13:20"})
	if s := qStr(t, c, "SELECT UTC_TIMESTAMP()"); strings.Contains(s, ".") {
		t.Errorf("UTC_TIMESTAMP() = %s, want no fraction", s)
	}
	if s := qStr(t, c, "SELECT UTC_TIMESTAMP(3)"); len(s) != len("2006-01-02 15:04:05.000") {
		t.Errorf("UTC_TIMESTAMP(3) = %s, want 3 fractional digits", s)
	}
}

// TestMySQLTimeFunctions checks the date and time functions go-mysql-server
// lacks (each was 1305 "function not found"), with values checked against
// MariaDB's, and TIME values as MySQL prints them: a zero fraction is
// left out (go-mysql-server printed `01:01:01.000000`), through the text
// and the binary protocol.
func TestMySQLTimeFunctions(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE tt (id INT PRIMARY KEY, dt DATETIME, d DATE, tm TIME, dt3 DATETIME(3))")
	xexec(t, db, "INSERT INTO tt VALUES (1, '2024-01-31 22:00:00', '2024-01-31', '10:00:00', '2024-01-31 22:00:00.125')")
	wantAnswers(t, db, []answer{
		{"SELECT SEC_TO_TIME(3661), SEC_TO_TIME(-90), SEC_TO_TIME(3661.5), SEC_TO_TIME(4000000), SEC_TO_TIME(NULL)",
			"01:01:01|-00:01:30|01:01:01.500000|838:59:59|NULL"},
		{"SELECT MAKETIME(12, 15, 30), MAKETIME(-1, 0, 0), MAKETIME(1, 60, 0), MAKETIME(1, 2, 3.25)",
			"12:15:30|-01:00:00|NULL|01:02:03.250000"},
		{"SELECT MAKEDATE(2024, 60), MAKEDATE(24, 1), MAKEDATE(99, 365), MAKEDATE(2024, 0), MAKEDATE(2023, 366), MAKEDATE(9999, 400)",
			"2024-02-29|2024-01-01|1999-12-31|NULL|2024-01-01|NULL"},
		{"SELECT ADDTIME('2024-01-01 23:00:00', '02:00:00'), ADDTIME('10:00:00', '01:30:00'), SUBTIME('10:00:00', '11:00:00'), SUBTIME('2024-03-01 00:00:00', '00:00:01')",
			"2024-01-02 01:00:00|11:30:00|-01:00:00|2024-02-29 23:59:59"},
		{"SELECT ADDTIME(dt, '03:00:00'), ADDTIME(d, '01:00:00'), ADDTIME(tm, '15:00:00'), SUBTIME(dt3, '00:00:00.125') FROM tt",
			"2024-02-01 01:00:00|2024-01-31 01:00:00|25:00:00|2024-01-31 22:00:00.000"},
		{"SELECT PERIOD_ADD(202401, 2), PERIOD_ADD(2412, 1), PERIOD_ADD(202401, -1), PERIOD_DIFF(202403, 202312), PERIOD_DIFF(2401, 9912), PERIOD_ADD(0, 5)",
			"202403|202501|202312|3|289|0"},
		{"SELECT TO_SECONDS('2024-01-01'), TO_SECONDS('2024-01-01 10:00:00'), TO_SECONDS(20240101), TO_SECONDS(dt) FROM tt",
			"63871286400|63871322400|63871286400|63873957600"},
		{"SELECT id FROM tt WHERE ADDTIME(dt, '02:00:00') >= '2024-02-01' AND ADDTIME(dt, '01:59:59') < '2024-02-01'", "1"},
		{"SELECT tm, TIMEDIFF('12:00:00', '10:30:00'), TIMEDIFF('12:00:00.5', '10:30:00'), CAST('10:00' AS TIME) FROM tt",
			"10:00:00|01:30:00|01:30:00.500000|10:00:00"},
	})
	if got := qStr(t, db, "SELECT tm FROM tt WHERE id = ?", 1); got != "10:00:00" {
		t.Errorf("prepared SELECT tm = %s, want 10:00:00", got)
	}
}

// TestTimeAsText reads TIME values as strings, as MySQL does: CONCAT,
// CAST(t AS CHAR), LIKE and the string functions see 'hh:mm:ss[.ffffff]'.
// go-mysql-server failed them with 1105 "incompatible conversion" and gave
// NULL for the CAST. UTC_TIME() exists (it was 1305).
func TestTimeAsText(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE tm (id INT PRIMARY KEY, t TIME)")
	xexec(t, db, "INSERT INTO tm VALUES (1, '10:00:00'), (2, '-01:30:00.5'), (3, NULL)")
	q := "SELECT CONCAT(t, '|'), CAST(t AS CHAR), t LIKE '10%', LEFT(t, 2), REPLACE(t, ':', '-'), LENGTH(t) FROM tm ORDER BY id"
	want := []string{
		"10:00:00||10:00:00|1|10|10-00-00|8",
		"-01:30:00.500000||-01:30:00.500000|0|-0|-01-30-00.500000|16",
		"NULL|NULL|NULL|NULL|NULL|NULL",
	}
	wantRows(t, "text", qLines(t, conn(t, db), q), want)
	wantRows(t, "prepared", qLines(t, db, q+" LIMIT ?", 5), want)
	wantAnswers(t, db, []answer{
		{"SELECT LENGTH(SEC_TO_TIME(5)), CONCAT(TIMEDIFF('12:00:00', '10:00:00'), 'x')", "8|02:00:00x"},
		{"SELECT GROUP_CONCAT(t ORDER BY id) FROM tm", "10:00:00,-01:30:00.500000"},
		{"SELECT id FROM tm WHERE CONCAT(t, '') LIKE '-%'", "2"},
		// not a single-table SELECT: typed after analysis, as the string
		{"SELECT SUBSTRING(a.t, 1, 2), REVERSE(a.t) FROM tm a JOIN tm b USING (id) WHERE a.id = 1", "10|00:00:01"},
		{"SELECT x FROM (SELECT MID(t, 5, 2) x FROM tm WHERE id = 2) d", "30"},
		// UTC_TIME(3) is cut to milliseconds; its text is not checked: a
		// TIME prints six digits, none when the fraction is zero (COMPAT.md),
		// so LENGTH(UTC_TIME(3)) was 8 once a thousand runs
		{"SELECT LENGTH(UTC_TIME()), MICROSECOND(UTC_TIME(3)) % 1000", "8|0"},
		// a single-table SELECT too (SUBSTRING, MID and REVERSE were 1105)
		{"SELECT SUBSTRING(t, 1, 2), MID(t, 4, 2), REVERSE(t), UPPER(t) FROM tm WHERE id = 1", "10|00|00:00:01|10:00:00"},
		// go-mysql-server panicked on TRIM of a TIME, and LTRIM and ELT failed
		{"SELECT TRIM(SEC_TO_TIME(5)), LTRIM(t), ELT(1, t) FROM tm WHERE id = 1", "00:00:05|10:00:00|10:00:00"},
	})
}

// TestDatesAsText reads DATE, DATETIME, TIMESTAMP and YEAR values as
// strings as MySQL writes them (answers checked against MariaDB 10.11):
// go-mysql-server wrote a DATE column's value as a DATETIME in CONCAT,
// LENGTH, CAST(d AS CHAR) and LIKE ('2024-01-05 00:00:00', so
// `d LIKE '2024-01-05'` was false), and SUBSTRING, MID and REVERSE of any
// of them failed with 1105 "Incorrect datetime value".
func TestDatesAsText(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE dd (id INT PRIMARY KEY, d DATE, dt DATETIME, d2 DATETIME(2), ts TIMESTAMP(6) NULL, y YEAR)")
	xexec(t, db, "INSERT INTO dd VALUES (1, '2024-01-05', '2024-01-05 10:11:12', '2024-01-05 10:11:12.25', '2024-01-05 10:11:12.5', 2024), (2, NULL, NULL, NULL, NULL, NULL)")
	q := "SELECT CONCAT(d, '|', dt, '|', d2, '|', ts, '|', y), LENGTH(d), CAST(d AS CHAR), d LIKE '2024-01-05', " +
		"SUBSTRING(d, 1, 4), MID(dt, 12, 5), REVERSE(y), UPPER(d2) FROM dd ORDER BY id"
	want := []string{
		"2024-01-05|2024-01-05 10:11:12|2024-01-05 10:11:12.25|2024-01-05 10:11:12.500000|2024|10|2024-01-05|1|2024|10:11|4202|2024-01-05 10:11:12.25",
		"NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
	}
	wantRows(t, "text", qLines(t, conn(t, db), q), want)
	wantRows(t, "prepared", qLines(t, db, q+" LIMIT ?", 5), want)
	wantAnswers(t, db, []answer{
		{"SELECT GROUP_CONCAT(d), CONCAT_WS(',', d, y) FROM dd WHERE id = 1", "2024-01-05|2024-01-05,2024"},
		{"SELECT x FROM (SELECT SUBSTRING(d, 6) x FROM dd WHERE id = 1) s", "01-05"},
		{"SELECT COUNT(*) FROM dd a JOIN dd b USING (id) WHERE CONCAT(a.d, '') = '2024-01-05'", "1"},
		// a date or a string is a string (it was '2024-01-05 00:00:00')
		{"SELECT IFNULL(d, 'none'), COALESCE(NULL, d, 5), IF(id = 1, d, 'x'), IF(d, 'y', 'n') FROM dd WHERE id = 1", "2024-01-05|2024-01-05|2024-01-05|y"},
		{"SELECT IFNULL(d, 'none'), IFNULL(y, 'none') FROM dd WHERE id = 2", "none|none"},
		// GREATEST and LEAST of a date and a string compare strings (they
		// were 0)
		{"SELECT GREATEST(d, '2024-01-01'), LEAST(d, '2025-01-01'), GREATEST(dt, '2024-01-05 10'), LEAST(y, '2030'), " +
			"GREATEST(d, '2024-02-01', '2023-12-31') FROM dd WHERE id = 1", "2024-01-05|2024-01-05|2024-01-05 10:11:12|2024|2024-02-01"},
		{"SELECT GREATEST(d, '2024-01-01') FROM dd WHERE id = 2", "NULL"},
		{"SELECT COUNT(*) FROM dd a JOIN dd b USING (id) WHERE GREATEST(a.d, '2024-01-01') = '2024-01-05'", "1"},
		// a mix of DATE, DATETIME and TIMESTAMP values is a DATETIME of the
		// largest fraction (six zero decimals were printed, or a DATE)
		{"SELECT IFNULL(d, dt), COALESCE(d, dt, d2), IF(id = 1, d, dt), GREATEST(d, dt), LEAST(d, d2), IFNULL(d2, ts), IFNULL(d, d) FROM dd WHERE id = 1",
			"2024-01-05 00:00:00|2024-01-05 00:00:00.00|2024-01-05 00:00:00|2024-01-05 10:11:12|2024-01-05 00:00:00.00|2024-01-05 10:11:12.250000|2024-01-05"},
		{"SELECT IFNULL(a.d, b.dt) FROM dd a JOIN dd b USING (id) WHERE a.id = 1", "2024-01-05 00:00:00"},
		// so is a CASE of a date and a string (it was '2024-01-05 00:00:00')
		{"SELECT CASE WHEN id = 1 THEN d ELSE 'none' END, CASE id WHEN 2 THEN 'x' ELSE dt END, CASE WHEN d > '2024-01-01' THEN y ELSE 'old' END FROM dd WHERE id = 1",
			"2024-01-05|2024-01-05 10:11:12|2024"},
		{"SELECT CASE WHEN a.id = 1 THEN a.d ELSE 'none' END FROM dd a JOIN dd b USING (id) ORDER BY a.id", "2024-01-05\nnone"},
	})
}

// TestDatesAsNumbers reads DATE, DATETIME and TIMESTAMP values as numbers
// where MySQL does, in casts to numbers and arithmetic: 20240105 for a
// DATE, 20240105101112 for a DATETIME, its fraction digits kept (answers
// checked against MariaDB 10.11). go-mysql-server made CAST(d AS SIGNED)
// the Unix time (1704412800) and d + 0 of a DATE 20240105000000.
func TestDatesAsNumbers(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE dn (id INT PRIMARY KEY, d DATE, dt DATETIME, d2 DATETIME(2), ts TIMESTAMP NULL)")
	xexec(t, db, "INSERT INTO dn VALUES (1, '2024-01-05', '2024-01-05 10:11:12', '2024-01-05 10:11:12.25', '2024-01-05 10:11:12'), (2, NULL, NULL, NULL, NULL)")
	q := "SELECT d + 0, CAST(d AS SIGNED), dt + 0, CAST(dt AS UNSIGNED), d2 + 0, CAST(d2 AS DECIMAL(20,2)), ts + 0, " +
		"d * 2, d - 1, d DIV 100, d MOD 100, d / 2, d + INTERVAL 1 DAY FROM dn ORDER BY id"
	want := []string{
		"20240105|20240105|20240105101112|20240105101112|20240105101112.25|20240105101112.25|20240105101112|40480210|20240104|202401|5|10120052.5000|2024-01-06",
		"NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
	}
	wantRows(t, "text", qLines(t, conn(t, db), q), want)
	wantRows(t, "prepared", qLines(t, db, q+" LIMIT ?", 5), want)
	wantAnswers(t, db, []answer{
		{"SELECT a.d + 0, CAST(b.dt AS SIGNED) FROM dn a JOIN dn b USING (id) WHERE id = 1", "20240105|20240105101112"},
		{"SELECT SUM(d + 0), COUNT(*) FROM dn WHERE d + 0 > 20240101", "20240105|1"},
	})
}

// TestIntervalArithmetic checks `expr + INTERVAL`, `INTERVAL + expr` and
// `expr - INTERVAL` typed and printed as MySQL's DATE_ADD and DATE_SUB,
// which they are: a DATE plus days is a DATE (go-mysql-server made every
// one a DATETIME: `2024-02-01 00:00:00`), a TIME plus hours a TIME (it
// was today's date and time), a DATETIME(2) keeps its fraction and a
// string stays a string; DATE_ADD of a DATETIME has its precision (it
// printed six zeros). Also in a view, a join and a prepared statement,
// and the answers were checked against MariaDB's.
func TestIntervalArithmetic(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE ia (id INT PRIMARY KEY, d DATE, dt DATETIME, dt2 DATETIME(2), tm TIME, s VARCHAR(20))")
	xexec(t, db, "INSERT INTO ia VALUES (1, '2024-01-31', '2024-01-31 10:11:12', '2024-01-31 10:11:12.34', '12:34:56', '2024-01-31')")
	q := "SELECT d + INTERVAL 1 DAY, INTERVAL 1 YEAR + d, d - INTERVAL 1 MONTH, d + INTERVAL 2 HOUR, dt + INTERVAL 1 DAY, " +
		"dt2 - INTERVAL 1 DAY, tm + INTERVAL 1 HOUR, s + INTERVAL 1 DAY, d + INTERVAL 1 DAY + INTERVAL 1 HOUR, " +
		"DATE_ADD(dt, INTERVAL 1 MONTH), DATE_SUB(dt2, INTERVAL 1 SECOND), DATE_ADD(dt, INTERVAL 5 MICROSECOND) FROM ia"
	want := "2024-02-01|2025-01-31|2023-12-31|2024-01-31 02:00:00|2024-02-01 10:11:12|" +
		"2024-01-30 10:11:12.34|13:34:56|2024-02-01|2024-02-01 01:00:00|" +
		"2024-02-29 10:11:12|2024-01-31 10:11:11.34|2024-01-31 10:11:12.000005"
	wantAnswers(t, db, []answer{{q, want}})
	// a fractional number of seconds counts its fraction, as in MySQL
	// (MariaDB prints a number's own digits: 01.5), not rounded or cut
	wantAnswers(t, db, []answer{{
		"SELECT TIMESTAMP'2024-01-01 00:00:00' + INTERVAL 1.5 SECOND, DATE_ADD('2024-01-01 00:00:00', INTERVAL '1.5' SECOND), " +
			"dt - INTERVAL 0.25 SECOND, DATE_ADD(dt, INTERVAL -1.5 SECOND), DATE_SUB(dt, INTERVAL '-0.000001' SECOND), DATE_ADD(d, INTERVAL 1.5 DAY) FROM ia",
		"2024-01-01 00:00:01.500000|2024-01-01 00:00:01.500000|2024-01-31 10:11:11.750000|2024-01-31 10:11:10.500000|" +
			"2024-01-31 10:11:12.000001|2024-02-02",
	}})
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	cts, err := rows.ColumnTypes()
	rows.Close()
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ct := range cts {
		types = append(types, ct.DatabaseTypeName())
	}
	wantTypes := "DATE DATE DATE DATETIME DATETIME DATETIME TIME VARCHAR DATETIME DATETIME DATETIME DATETIME"
	if got := strings.Join(types, " "); got != wantTypes {
		t.Errorf("column types %s, want %s", got, wantTypes)
	}
	xexec(t, db, "CREATE VIEW iav AS SELECT id, d + INTERVAL 1 MONTH AS nm FROM ia")
	wantAnswers(t, db, []answer{
		{"SELECT nm FROM iav", "2024-02-29"},
		{"SELECT a.d + INTERVAL 1 DAY FROM ia a JOIN ia b USING (id) WHERE b.d - INTERVAL 1 DAY < a.d", "2024-02-01"},
		{"SELECT id FROM ia WHERE d + INTERVAL 1 DAY = '2024-02-01'", "1"},
	})
	if got := qStr(t, db, "SELECT d + INTERVAL ? DAY FROM ia", 2); got != "2024-02-02" {
		t.Errorf("prepared d + INTERVAL ? DAY = %s, want 2024-02-02", got)
	}
	xexec(t, db, "UPDATE ia SET d = d + INTERVAL 1 DAY, dt = dt - INTERVAL 30 MINUTE")
	wantAnswers(t, db, []answer{{"SELECT d, dt FROM ia", "2024-02-01|2024-01-31 09:41:12"}})
	if err := tryExec(db, "SELECT INTERVAL 1 DAY - d FROM ia"); err == nil {
		t.Error("INTERVAL 1 DAY - d succeeded, want an error")
	}
}

// TestTimeArguments checks functions that read a TIME from a string, as
// MySQL does (each was NULL): HOUR, MINUTE, SECOND, MICROSECOND and
// TIME_TO_SEC of '10:11:12' or of a date and time, a negative TIME, and
// CAST of a date and time to TIME; CAST of a date past its month's end,
// which is NULL with a warning (it was the 3rd of the month); and TIME(n)
// columns, which go-mysql-server refused.
func TestTimeArguments(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE ta (id INT PRIMARY KEY, tm TIME, dt DATETIME, d DATE)")
	xexec(t, db, "INSERT INTO ta VALUES (1, '-01:30:00', '2024-01-31 10:11:12', '2024-01-31')")
	wantAnswers(t, db, []answer{
		{"SELECT HOUR('10:11:12'), MINUTE('10:11:12'), SECOND('10:11:12.5'), MICROSECOND('10:11:12.5'), HOUR('100:00:00'), HOUR('2024-01-31 22:01:02')",
			"10|11|12|500000|100|22"},
		{"SELECT TIME_TO_SEC('01:00:00'), TIME_TO_SEC('-01:00:00'), TIME_TO_SEC('10:00'), TIME_TO_SEC(tm), TIME_TO_SEC(dt), HOUR(tm), HOUR(d) FROM ta",
			"3600|-3600|36000|-5400|36672|1|0"},
		{"SELECT CAST('2024-01-31 10:11:12' AS TIME), CAST('2024-01-31 10:11:12.5' AS TIME), CAST(dt AS TIME), CAST('10:11' AS TIME) FROM ta",
			"10:11:12|10:11:12|10:11:12|10:11:00"},
		{"SELECT CAST('2024-02-30' AS DATE), CAST('2023-02-29 10:00:00' AS DATETIME), CAST('2024-02-29' AS DATE), CONVERT('2024-04-31', DATE)",
			"NULL|NULL|2024-02-29|NULL"},
		{"SELECT HOUR('x'), TIME_TO_SEC(NULL)", "NULL|NULL"},
	})
	// TIME(n) columns are accepted (go-mysql-server refused n < 6)
	xexec(t, db, "CREATE TABLE tn (id INT PRIMARY KEY, a TIME(3), b TIME(0))")
	xexec(t, db, "ALTER TABLE tn ADD COLUMN c TIME(2), MODIFY b TIME(1)")
	xexec(t, db, "INSERT INTO tn VALUES (1, '10:11:12.5', '-01:00:00', '23:59:59')")
	wantAnswers(t, db, []answer{{"SELECT TIME_TO_SEC(a), b, c FROM tn", "36672|-01:00:00|23:59:59"}})
	c := conn(t, db)
	qLines(t, c, "SELECT CAST('2024-02-30' AS DATE)")
	if got := qLines(t, c, "SHOW WARNINGS"); len(got) != 1 || got[0] != "Warning|1292|Incorrect datetime value: '2024-02-30'" {
		t.Errorf("warnings of CAST('2024-02-30' AS DATE): %q", got)
	}
}
