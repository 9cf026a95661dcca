package systest

import (
	"strings"
	"testing"
)

// TestSumAvgExact checks SUM and AVG as MySQL answers them: exact DECIMAL
// for integer and DECIMAL arguments (SUM keeps the scale, AVG adds 4),
// DOUBLE for floating-point ones, NULL over no rows, through the fast path
// (one aggregate of one table) and the general path (GROUP BY, several
// aggregates), text and prepared. A prepared SUM of integers once came
// back as a binary DOUBLE that database/sql cannot scan into an int64
// when it prints as 1e+06.
func TestSumAvgExact(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, qty INT, price DECIMAL(10,2), f DOUBLE)")
	for i := 1; i <= 10; i++ {
		xexec(t, db, "INSERT INTO t VALUES (?, 100000, 0.10, 0.5)", i)
	}
	for _, prepared := range []bool{false, true} {
		var args []any
		where := "id > 0"
		if prepared {
			where, args = "id > ?", []any{0}
		}
		var sum int64
		if err := db.QueryRowContext(t.Context(), "SELECT SUM(qty) FROM t WHERE "+where, args...).Scan(&sum); err != nil || sum != 1000000 {
			t.Errorf("SUM(qty) (prepared %v) = %d, %v; want 1000000", prepared, sum, err)
		}
		for q, want := range map[string]string{
			"SELECT SUM(price) FROM t WHERE " + where:                              "1.00",
			"SELECT AVG(price) FROM t WHERE " + where:                              "0.100000",
			"SELECT AVG(qty) FROM t WHERE " + where:                                "100000.0000",
			"SELECT SUM(price) FROM t WHERE id > 100 AND " + where:                 "NULL",
			"SELECT SUM(price) FROM t WHERE " + where + " GROUP BY id % 2 LIMIT 1": "0.50",
			// through derived tables, sorted, filtered, computed on
			"SELECT s + 0 FROM (SELECT SUM(price) s FROM t WHERE " + where + ") x":                                "1.00",
			"SELECT * FROM (SELECT SUM(price) s FROM t WHERE " + where + " GROUP BY id % 2) x ORDER BY s LIMIT 1": "0.50",
			"SELECT s FROM (SELECT * FROM (SELECT AVG(price) s FROM t WHERE " + where + ") y) x WHERE s > 0":      "0.100000",
		} {
			rows, err := db.QueryContext(t.Context(), q, args...)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			cts, _ := rows.ColumnTypes()
			var got *string
			if !rows.Next() {
				t.Fatalf("%s: no row", q)
			}
			if err := rows.Scan(&got); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			rows.Close()
			s := "NULL"
			if got != nil {
				s = *got
			}
			if s != want || cts[0].DatabaseTypeName() != "DECIMAL" {
				t.Errorf("%s (prepared %v) = %s %s, want %s DECIMAL", q, prepared, s, cts[0].DatabaseTypeName(), want)
			}
		}
		rows, err := db.QueryContext(t.Context(), "SELECT SUM(f), AVG(f) FROM t WHERE "+where, args...)
		if err != nil {
			t.Fatal(err)
		}
		cts, _ := rows.ColumnTypes()
		for rows.Next() {
			var s, a float64
			if err := rows.Scan(&s, &a); err != nil || s != 5 || a != 0.5 {
				t.Errorf("SUM(f), AVG(f) = %v, %v, %v; want 5, 0.5", s, a, err)
			}
		}
		rows.Close()
		if cts[0].DatabaseTypeName() != "DOUBLE" || cts[1].DatabaseTypeName() != "DOUBLE" {
			t.Errorf("SUM(f), AVG(f) types %s, %s; want DOUBLE", cts[0].DatabaseTypeName(), cts[1].DatabaseTypeName())
		}
	}
}

// TestWithRollup checks GROUP BY ... WITH ROLLUP (text protocol) as MySQL
// answers it: each group's rows, then its super-aggregate row with NULL
// for the rolled-up column, the grand total last; DECIMAL sums keep their
// type; a user's ORDER BY sorts the whole result.
func TestWithRollup(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE s (id INT PRIMARY KEY, region VARCHAR(10), product VARCHAR(10), qty INT, price DECIMAL(6,2))")
	xexec(t, db, "INSERT INTO s VALUES (1,'east','apple',3,1.50),(2,'east','pear',2,2.00),(3,'west','apple',5,1.50),(4,'west','apple',1,1.60),(5,'north','kiwi',7,0.50),(6,'east','apple',4,1.40)")
	for q, want := range map[string]string{
		"SELECT region, product, SUM(qty) FROM s GROUP BY region, product WITH ROLLUP":         "east|apple|7 east|pear|2 east|NULL|9 north|kiwi|7 north|NULL|7 west|apple|6 west|NULL|6 NULL|NULL|22",
		"SELECT region AS r, SUM(qty * price) amt FROM s WHERE qty > 1 GROUP BY r WITH ROLLUP": "east|14.10 north|3.50 west|7.50 NULL|25.10",
		"SELECT region, COUNT(*) FROM s GROUP BY 1 WITH ROLLUP ORDER BY region DESC":           "west|2 north|1 east|3 NULL|6",
		"SELECT SUM(qty) FROM s GROUP BY region WITH ROLLUP LIMIT 2":                           "9 7",
	} {
		if got := strings.Join(qLines(t, db, q), " "); got != want {
			t.Errorf("%s:\n got %s\nwant %s", q, got, want)
		}
	}
	if got := qStr(t, db, "SELECT CONCAT_WS(',', COUNT(*), SUM(n IS NULL)) FROM (SELECT region n, SUM(qty) FROM s GROUP BY region) x"); got != "3,0" {
		t.Errorf("a derived table without ROLLUP: %s", got)
	}
}

// TestRoundPlaces checks ROUND and TRUNCATE as MySQL answers them (values
// checked against MariaDB's): a DECIMAL to a constant number of places
// has that many, and a DOUBLE rounded to an integer rounds half to even.
func TestRoundPlaces(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE p (id INT PRIMARY KEY, d DECIMAL(6,2), f DOUBLE)")
	xexec(t, db, "INSERT INTO p VALUES (1, 1.50, 2.5), (2, 2.25, -2.5), (3, 19.99, 3.5)")
	wantAnswers(t, db, []answer{
		{"SELECT ROUND(d), ROUND(d, 1), TRUNCATE(d, 1), ROUND(d, 3), ROUND(d, -1), ROUND(f), TRUNCATE(f, 0) FROM p ORDER BY id",
			"2|1.5|1.5|1.500|0|2|2\n2|2.3|2.2|2.250|0|-2|-2\n20|20.0|19.9|19.990|20|4|3"},
		{"SELECT ROUND(2.5e0), ROUND(-2.5e0), ROUND('2.5'), ROUND(2.5), ROUND(-2.5), ROUND(1.005, 2), ROUND(9.99, 1)",
			"2|-2|2|3|-3|1.01|10.0"},
		{"SELECT ROUND(MAX(d)), TRUNCATE(MAX(d), 1), ROUND(SUM(d), 1) FROM p", "20|19.9|23.7"},
		{"SELECT ROUND(d, id) FROM p ORDER BY id", "1.50\n2.25\n19.99"},
	})
}

// TestDistinctCollation checks that SELECT DISTINCT, UNION and
// COUNT(DISTINCT) compare by the columns' collations, as GROUP BY does (values as MySQL 8 and MariaDB
// give them): with the default utf8mb4_0900_ai_ci, 'Apple' and 'apple' are
// one row; 'APPLE ' is another (NO PAD), and a binary collation keeps case.
func TestDistinctCollation(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE s (id INT PRIMARY KEY, name VARCHAR(20), bin VARCHAR(20) COLLATE utf8mb4_bin)")
	xexec(t, db, "INSERT INTO s VALUES (1, 'Apple', 'Apple'), (2, 'apple', 'apple'), (3, 'APPLE ', 'APPLE '), (4, 'b', 'b')")
	wantAnswers(t, db, []answer{
		{"SELECT DISTINCT name FROM s ORDER BY id", "Apple\nAPPLE \nb"},
		{"SELECT COUNT(*) FROM (SELECT DISTINCT name FROM s) x", "3"},
		{"SELECT DISTINCT bin FROM s ORDER BY id", "Apple\napple\nAPPLE \nb"},
		{"SELECT COUNT(*) FROM (SELECT DISTINCT id % 2, 'x' FROM s) x", "2"},
		{"SELECT COUNT(DISTINCT name), COUNT(DISTINCT bin), COUNT(DISTINCT name, id % 2) FROM s", "3|4|4"},
		{"SELECT id % 2, COUNT(DISTINCT name) FROM s GROUP BY id % 2 ORDER BY 1", "0|2\n1|2"},
		{"SELECT name FROM s UNION SELECT UPPER(name) FROM s ORDER BY 1", "Apple\nAPPLE \nb"},
		{"SELECT COUNT(*) FROM (SELECT name FROM s UNION SELECT UPPER(name) FROM s) x", "3"},
		{"SELECT name FROM s UNION SELECT UPPER(name) FROM s ORDER BY 1 DESC LIMIT 1 OFFSET 1", "APPLE "},
		{"SELECT bin FROM s UNION SELECT UPPER(bin) FROM s ORDER BY 1", "APPLE\nAPPLE \nApple\nB\napple\nb"},
	})
}

// TestDistinctOrderBy: an ORDER BY over SELECT DISTINCT sorts by the
// selected expressions it names (by position or as written), as in MySQL
// and MariaDB. go-mysql-server failed `ORDER BY 1` over an expression with
// 1105 and left `SELECT DISTINCT id % 2, 'x' ... ORDER BY 1` unsorted. The
// answers are MariaDB's.
func TestDistinctOrderBy(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE s (id INT PRIMARY KEY, v INT, name VARCHAR(20))")
	xexec(t, db, "INSERT INTO s VALUES (1,5,'b'),(2,3,'a'),(3,9,'B'),(4,1,'c'),(5,7,'A'),(6,NULL,'d')")
	wantAnswers(t, db, []answer{
		{"SELECT DISTINCT v+1 FROM s ORDER BY 1", "NULL\n2\n4\n6\n8\n10"},
		{"SELECT DISTINCT v+1 FROM s ORDER BY 1 DESC LIMIT 3", "10\n8\n6"},
		{"SELECT DISTINCT id % 2, 'x' FROM s ORDER BY 1", "0|x\n1|x"},
		{"SELECT DISTINCT id % 3 AS m, 'y' FROM s ORDER BY m DESC, 2", "2|y\n1|y\n0|y"},
		{"SELECT DISTINCT UPPER(name) u FROM s ORDER BY u DESC LIMIT 2", "D\nC"},
		{"SELECT DISTINCT v, id % 2 FROM s ORDER BY 2, 1", "NULL|0\n1|0\n3|0\n5|1\n7|1\n9|1"},
		{"SELECT DISTINCT v * 2 FROM s WHERE id IN (1,2,3) ORDER BY 1", "6\n10\n18"},
		{"SELECT DISTINCT COALESCE(v, 0) + id % 2 FROM s ORDER BY 1", "0\n1\n3\n6\n8\n10"},
	})
}

// TestStddevVarianceDouble checks that STDDEV, VARIANCE and their variants
// are DOUBLE, as in MySQL: go-mysql-server typed them as their argument,
// so STDDEV of a DECIMAL(10,2) came back rounded to 2 places, of an INT
// to an integer.
func TestStddevVarianceDouble(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE sv (id INT PRIMARY KEY, g INT, price DECIMAL(10,2))")
	xexec(t, db, "INSERT INTO sv VALUES (1, 1, 100.50), (2, 1, 80.00), (3, 2, NULL), (4, 2, 60.25), (5, 2, 95.00)")
	want := []string{"1.4142135623730951|2|15.598853122906183|18.01200409911864|243.32421875|324.4322916666667"}
	q := "SELECT STDDEV(id), VARIANCE(id), STD(price), STDDEV_SAMP(price), VAR_POP(price), VAR_SAMP(price) FROM sv"
	wantRows(t, "text", qLines(t, conn(t, db), q), want)
	wantRows(t, "prepared", qLines(t, db, q+" WHERE id > ?", 0), want)
	wantRows(t, "grouped, in a derived table", qLines(t, db, "SELECT g, s FROM (SELECT g, STDDEV_POP(price) s FROM sv GROUP BY g) x ORDER BY g"),
		[]string{"1|10.25", "2|17.375"})
}

// TestWindowSumOfNulls checks SUM(x) OVER (...) on frames that hold only
// NULLs: NULL, as in MySQL (go-mysql-server's window sum counted NULL as
// 0), with running, whole-partition and sliding frames.
func TestWindowSumOfNulls(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE ws (id INT PRIMARY KEY, g INT, v DECIMAL(10,2))")
	xexec(t, db, "INSERT INTO ws VALUES (1, 1, 100.50), (2, 1, 80), (3, 2, NULL), (4, NULL, 60.25), (5, 2, 95), (6, 2, NULL), (7, 3, NULL)")
	wantRows(t, "window sums", qLines(t, db, "SELECT id, SUM(v) OVER (PARTITION BY g ORDER BY id), SUM(v) OVER (PARTITION BY g), "+
		"SUM(v) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM ws ORDER BY id"), []string{
		"1|100.50|180.50|100.50", "2|180.50|180.50|180.50", "3|NULL|95.00|80.00", "4|60.25|60.25|60.25",
		"5|95.00|95.00|155.25", "6|95.00|95.00|95.00", "7|NULL|NULL|NULL",
	})
}
