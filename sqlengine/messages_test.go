package sqlengine

import (
	"testing"

	"github.com/dolthub/vitess/go/mysql"
)

func TestWithMySQLMessage(t *testing.T) {
	for _, tc := range []struct {
		code       int
		msg, db, q string
		want       string
	}{
		{1146, "table not found: nope", "d1", "SELECT * FROM nope", "Table 'd1.nope' doesn't exist"},
		{1146, "table not found: nope", "d1", "SELECT * FROM `other`.`nope`", "Table 'other.nope' doesn't exist"},
		{1146, "table not found: nope", "d1", "select * from Other . NOPE", "Table 'Other.nope' doesn't exist"},
		{1146, "table not found: nope", "d1", "SELECT * FROM x.nope2, nope", "Table 'd1.nope' doesn't exist"},
		{1146, "table not found: nope", "", "SELECT * FROM nope", "Table 'nope' doesn't exist"},
		{1051, "table not found: t", "d1", "DROP TABLE t", "Unknown table 'd1.t'"},
		{1049, "database not found: zz", "", "USE zz", "Unknown database 'zz'"},
		{1050, "table with name t already exists", "d1", "CREATE TABLE t (id INT)", "Table 't' already exists"},
		{1007, "can't create database d1; database exists", "", "CREATE DATABASE d1", "Can't create database 'd1'; database exists"},
		{1060, "duplicate column name: `a`", "d1", "ALTER TABLE t ADD a INT", "Duplicate column name 'a'"},
		{1060, `Column "a" already exists`, "d1", "ALTER TABLE t ADD a INT", "Duplicate column name 'a'"},
		{1146, "Table 'd1.t' doesn't exist", "d1", "SELECT * FROM t", "Table 'd1.t' doesn't exist"},
		{1064, "table not found: t", "d1", "x", "table not found: t"},
		{1105, "local_infile needs to be set to 1 to use LOCAL", "d1", "LOAD DATA LOCAL INFILE 'f' INTO TABLE t", "Loading local data is disabled; this must be enabled on both the client and server sides"},
		{1305, `stored procedure "nope" does not exist`, "d1", "CALL nope()", "PROCEDURE d1.nope does not exist"},
		{1146, "table not found: nope", "d1", "SELECT * FROM nope WHERE e = 'x.nope'", "Table 'd1.nope' doesn't exist"},
		{1049, "database not found: nodb", "d1", "SELECT * FROM nodb.t", "Table 'nodb.t' doesn't exist"},
		{1049, "database not found: nodb", "d1", "SHOW TABLES FROM nodb", "Unknown database 'nodb'"},
		{1054, `column "c" could not be found in any table in scope`, "d1", "SELECT a FROM t WHERE b = 1 AND c = 2", "Unknown column 'c' in 'where clause'"},
		{1054, `column "c" could not be found in any table in scope`, "d1", "SELECT a FROM t GROUP BY a HAVING `c` > 1", "Unknown column 'c' in 'having clause'"},
		{1054, `table "x" does not have column "c"`, "d1", "SELECT * FROM t x JOIN u ON x.c = u.a", "Unknown column 'x.c' in 'on clause'"},
		{1054, `column "c" could not be found in any table in scope`, "d1", "UPDATE t SET c = 1 WHERE a = 2", "Unknown column 'c' in 'field list'"},
		{1054, `column "c" could not be found in any table in scope`, "d1", "SELECT 'c' FROM t WHERE c = 1", "Unknown column 'c' in 'where clause'"},
		{1064, "syntax error at position 6 near 'selec'", "d1", "selec 1", "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near 'selec 1' at line 1"},
		{1064, "syntax error at position 16 near 'fro'", "d1", "SELECT 1,\n2 fro t", "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near 'fro t' at line 2"},
	} {
		got := withMySQLMessage(mysql.NewSQLError(tc.code, "42S02", "%s", tc.msg), tc.db, tc.q)
		code := tc.code
		switch {
		case tc.code == 1049 && tc.want[0] == 'T':
			code = 1146 // a table of a missing database, in a SELECT
		case tc.code == 1105 && tc.want[0] == 'L':
			code = 3948
		}
		if got.Message != tc.want || got.Number() != code {
			t.Errorf("%d %q in %q: got %d %q, want %q", tc.code, tc.msg, tc.q, got.Number(), got.Message, tc.want)
		}
	}
}
