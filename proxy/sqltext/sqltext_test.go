package sqltext

import (
	"reflect"
	"testing"
)

func TestDigest(t *testing.T) {
	cases := []struct{ in, want string }{
		{"SELECT * FROM t WHERE id = 5", "SELECT * FROM t WHERE id = ?"},
		{"select  *\n from t where id=5", "SELECT * FROM t WHERE id = ?"},
		{"SELECT a FROM t WHERE s = 'it''s' AND d = \"x\"", "SELECT a FROM t WHERE s = ? AND d = ?"},
		{"SELECT a FROM t WHERE id IN (1, 2, 3, 4)", "SELECT a FROM t WHERE id IN (?,...)"},
		{"SELECT a FROM t WHERE id IN (?, ?)", "SELECT a FROM t WHERE id IN (?,...)"},
		{"INSERT INTO t VALUES (1, 'a', -2.5e3, 0x1F, x'ab', NULL)", "INSERT INTO t VALUES (?,..., NULL)"},
		{"UPDATE t SET v = v - 1 WHERE id = -7", "UPDATE t SET v = v - ? WHERE id = ?"},
		{"SELECT /* hint */ 1 -- trailing\n", "SELECT ?"},
		{"SELECT 1 # mysql comment", "SELECT ?"},
		{"SELECT `Weird Col` FROM `T1` LIMIT 10", "SELECT `Weird Col` FROM `T1` LIMIT ?"},
		{"SELECT @@session.sql_mode, @X", "SELECT @@session.sql_mode, @x"},
		{"SELECT Name FROM Users", "SELECT Name FROM Users"},
		{"select count(*) from db1.t1", "SELECT COUNT(*) FROM db1.t1"},
		{"SELECT 'unterminated", "SELECT ?"},
		{"", ""},
	}
	for _, tc := range cases {
		if got := Digest(tc.in); got != tc.want {
			t.Errorf("Digest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		q    string
		kind Kind
		sticky,
		global bool
		db   string
		vars []string // keys
	}{
		{q: "SELECT * FROM t", kind: Read},
		{q: "  (SELECT 1) UNION (SELECT 2)", kind: Read},
		{q: "select @@version", kind: Read},
		{q: "SHOW TABLES", kind: Read},
		{q: "WITH x AS (SELECT 1) SELECT * FROM x", kind: Read},
		{q: "SELECT * FROM t FOR UPDATE", kind: Write},
		{q: "SELECT * FROM t LOCK IN SHARE MODE", kind: Write},
		{q: "SELECT LAST_INSERT_ID()", kind: Write},
		{q: "SELECT GET_LOCK('x', 1)", kind: Write, sticky: true},
		{q: "SELECT @a := 1", kind: Write, sticky: true},
		{q: "SELECT 1 INTO @a", kind: Write, sticky: true},
		{q: "SELECT 'FOR UPDATE' FROM t", kind: Read},
		{q: "INSERT INTO t VALUES (1)", kind: Write},
		{q: "UPDATE t SET a = @x", kind: Write, sticky: true},
		{q: "BEGIN", kind: Begin},
		{q: "START TRANSACTION READ ONLY", kind: Begin},
		{q: "COMMIT", kind: Commit},
		{q: "ROLLBACK", kind: Rollback},
		{q: "ROLLBACK TO SAVEPOINT a", kind: Write},
		{q: "USE `my db`", kind: Use, db: "my db"},
		{q: "use shop", kind: Use, db: "shop"},
		{q: "SET autocommit = 0", kind: Set, vars: []string{"autocommit"}},
		{q: "SET SESSION sql_mode = 'ANSI', @@session.wsrep_sync_wait = 1", kind: Set, vars: []string{"sql_mode", "wsrep_sync_wait"}},
		{q: "SET NAMES utf8mb4 COLLATE utf8mb4_bin", kind: Set, vars: []string{"names"}},
		// mysqldump's executable comments run on the server: their SETs
		// are replayed; MariaDB's /*M! and newer versions' are comments
		{q: "/*!40100 SET @@SQL_MODE='' */", kind: Set, vars: []string{"sql_mode"}},
		{q: "/*!40101 SET NAMES utf8mb4 */;", kind: Set, vars: []string{"names"}},
		{q: "/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */", kind: Write, sticky: true, vars: []string{"foreign_key_checks"}},
		{q: "/*!SET autocommit = 0 */", kind: Set, vars: []string{"autocommit"}},
		{q: "/*M!100100 SET @@MAX_STATEMENT_TIME=0.000000 */", kind: Read},
		{q: "/*!99999 SET sql_mode = '' */", kind: Read},
		{q: "SELECT 1 /*!80031 FOR UPDATE */", kind: Write},
		{q: "SELECT 1 /*!80032 FOR UPDATE */", kind: Read},
		{q: "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", kind: Set, vars: []string{"transaction"}},
		{q: "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", kind: Write, sticky: true},
		{q: "SET GLOBAL max_connections = 10", kind: Set, global: true},
		{q: "SET @x = 1", kind: Write, sticky: true},
		{q: "SET x = FUNC(1, 2), y = 3", kind: Set, vars: []string{"x", "y"}},
		{q: "CREATE TEMPORARY TABLE tmp (a INT)", kind: Write, sticky: true},
		{q: "LOCK TABLES t WRITE", kind: Write, sticky: true},
		{q: "SELECT 1; SELECT 2", kind: Write, sticky: true},
		{q: "SELECT 1;", kind: Read},
		{q: "SELECT ';'", kind: Read},
		{q: "", kind: Read},
	}
	for q, want := range map[string]bool{
		"SHOW WARNINGS": true, "show errors limit 1": true, "SHOW COUNT(*) WARNINGS": true,
		"SELECT @@warning_count": true, "select @@session.error_count, 1": true,
		"SHOW TABLES": false, "SELECT warning_count FROM t": false,
	} {
		if st := Classify(q); st.Diagnostics != want || st.Kind != Read {
			t.Errorf("Classify(%q): Diagnostics %v, kind %v; want %v, read", q, st.Diagnostics, st.Kind, want)
		}
	}
	for q, want := range map[string]bool{
		"SELECT LAST_INSERT_ID()": true, "insert into c (pid) values (last_insert_id())": true,
		"SELECT LAST_INSERT_ID(5)": false, "SELECT 'LAST_INSERT_ID()'": false, "UPDATE t SET a = 1": false,
	} {
		if st := Classify(q); st.LastInsertID != want {
			t.Errorf("Classify(%q).LastInsertID = %v, want %v", q, st.LastInsertID, want)
		}
	}
	for q, want := range map[string]bool{
		"SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 1": true, "SELECT FOUND_ROWS()": true,
		"SELECT * FROM t FOR UPDATE": true, "SHOW TABLES": true, "SELECT 1 INTO @a": true,
		"WITH x AS (SELECT 1) UPDATE t SET a = 1": false, "UPDATE t SET a = 1": false,
		"SELECT 1; SELECT 2": false, "COMMIT": false,
	} {
		if st := Classify(q); st.Query != want {
			t.Errorf("Classify(%q).Query = %v, want %v", q, st.Query, want)
		}
	}
	for _, tc := range cases {
		st := Classify(tc.q)
		var keys []string
		for _, v := range st.Vars {
			keys = append(keys, v.Key)
		}
		if st.Kind != tc.kind || st.Sticky != tc.sticky || st.Global != tc.global || st.DB != tc.db || !reflect.DeepEqual(keys, tc.vars) {
			t.Errorf("Classify(%q) = %v sticky=%v global=%v db=%q vars=%v; want %v sticky=%v global=%v db=%q vars=%v",
				tc.q, st.Kind, st.Sticky, st.Global, st.DB, keys, tc.kind, tc.sticky, tc.global, tc.db, tc.vars)
		}
	}
}

func TestSetReplay(t *testing.T) {
	st := Classify("SET @@SESSION.sql_mode = 'ANSI_QUOTES', autocommit := OFF")
	want := []Assignment{
		{Key: "sql_mode", Stmt: "SET SESSION sql_mode = 'ANSI_QUOTES'", Value: "'ANSI_QUOTES'"},
		{Key: "autocommit", Stmt: "SET SESSION autocommit = OFF", Value: "OFF"},
	}
	if !reflect.DeepEqual(st.Vars, want) {
		t.Fatalf("vars = %+v", st.Vars)
	}
	for _, tc := range []struct {
		v     string
		b, ok bool
	}{{"0", false, true}, {"'ON'", true, true}, {"true", true, true}, {"maybe", false, false}} {
		if b, ok := BoolValue(tc.v); b != tc.b || ok != tc.ok {
			t.Errorf("BoolValue(%q) = %v, %v", tc.v, b, ok)
		}
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{"SELECT 1", "SET a = (1, ')", "USE `", "/* x", "@@", "x'", "SET SESSION", "0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		_ = Classify(q)
		_ = Digest(q)
	})
}

func TestRowCountQuery(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT ROW_COUNT()": "ROW_COUNT()", "select row_count();": "row_count()", "SELECT ROW_COUNT( ) AS n": "n",
		"SELECT ROW_COUNT() `rows changed`": "rows changed", "SELECT ROW_COUNT() 'n'": "n", " /* c */ SELECT ROW_COUNT() AS `a``b`": "a`b",
	} {
		if got, ok := RowCountQuery(q); !ok || got != want {
			t.Errorf("RowCountQuery(%q) = %q, %v; want %q", q, got, ok, want)
		}
	}
	for _, q := range []string{
		"SELECT ROW_COUNT() + 1", "SELECT ROW_COUNT(), 1", "SELECT ROW_COUNT() FROM t", "SELECT 'ROW_COUNT()'",
		"SELECT ROW_COUNT(); SELECT 1", "SELECT ROW_COUNT() INTO @n", "SELECT ROW_COUNT() AS", "SELECT ROW_COUNT",
	} {
		if got, ok := RowCountQuery(q); ok {
			t.Errorf("RowCountQuery(%q) = %q, true; want false", q, got)
		}
	}
}
