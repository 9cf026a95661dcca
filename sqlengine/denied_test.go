package sqlengine

import (
	"testing"

	"github.com/dolthub/vitess/go/mysql"
)

func TestDeniedDetail(t *testing.T) {
	gms := mysql.NewSQLError(erTableAccessDenied, "42000", "command denied to user 'app'@'%%'")
	for _, tc := range []struct{ query, want string }{
		{"INSERT INTO t VALUES (1)", "INSERT command denied to user 'app'@'%' for table 't'"},
		{"delete from app.t where id = 1", "DELETE command denied to user 'app'@'%' for table 't'"},
		{"UPDATE t SET v = 1 WHERE id = 2; SELECT 1", "UPDATE command denied to user 'app'@'%' for table 't'"},
		{"REPLACE INTO t VALUES (1)", "INSERT command denied to user 'app'@'%' for table 't'"},
		{"SELECT * FROM a JOIN b ON a.id = b.id", "SELECT command denied to user 'app'@'%'"},
		{"WITH x AS (SELECT 1) SELECT * FROM t", "SELECT command denied to user 'app'@'%' for table 't'"},
	} {
		se := deniedDetail(tc.query, gms)
		if se.Message != tc.want || se.Number() != erTableAccessDenied || se.SQLState() != "42000" {
			t.Errorf("%q: %d %s %q, want %q", tc.query, se.Number(), se.SQLState(), se.Message, tc.want)
		}
	}
	for _, q := range []string{"CREATE DATABASE nope", "drop schema if exists nope", "ALTER DATABASE nope CHARACTER SET utf8mb4"} {
		se := deniedDetail(q, gms)
		if want := "Access denied for user 'app'@'%' to database 'nope'"; se.Message != want || se.Number() != mysql.ERDBAccessDenied || se.SQLState() != "42000" {
			t.Errorf("%q: %d %s %q, want 1044 42000 %q", q, se.Number(), se.SQLState(), se.Message, want)
		}
	}
	other := mysql.NewSQLError(erTableAccessDenied, "42000", "something else")
	if se := deniedDetail("SELECT * FROM t", other); se != other {
		t.Errorf("a message of another shape was changed: %q", se.Message)
	}
}
