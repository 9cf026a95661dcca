package sqlengine

import (
	"strings"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// The log tables.
//
// Every MySQL and MariaDB server has mysql.general_log and mysql.slow_log,
// where the general and slow query logs go when log_output=TABLE. Certus
// writes its own log, never to tables, and go-mysql-server's mysql schema
// has no such tables. But MariaDB's mysqldump, dumping the mysql schema
// (--all-databases), asks for the structure of both without listing them
// first and stops at the error: a backup of the whole server failed. So
// the handler answers SHOW CREATE TABLE for them with MariaDB's
// definitions, and the CREATE TABLE IF NOT EXISTS a restore of such a dump
// runs finds them there (Note 1050) and changes nothing.

// logTableDefs are the definitions SHOW CREATE TABLE gives of the log
// tables, as MariaDB creates them.
var logTableDefs = map[string]string{
	"general_log": "CREATE TABLE `general_log` (\n" +
		"  `event_time` timestamp(6) NOT NULL DEFAULT current_timestamp(6) ON UPDATE current_timestamp(6),\n" +
		"  `user_host` mediumtext NOT NULL,\n" +
		"  `thread_id` bigint(21) unsigned NOT NULL,\n" +
		"  `server_id` int(10) unsigned NOT NULL,\n" +
		"  `command_type` varchar(64) NOT NULL,\n" +
		"  `argument` mediumtext NOT NULL\n" +
		") ENGINE=CSV DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci COMMENT='General log'",
	"slow_log": "CREATE TABLE `slow_log` (\n" +
		"  `start_time` timestamp(6) NOT NULL DEFAULT current_timestamp(6) ON UPDATE current_timestamp(6),\n" +
		"  `user_host` mediumtext NOT NULL,\n" +
		"  `query_time` time(6) NOT NULL,\n" +
		"  `lock_time` time(6) NOT NULL,\n" +
		"  `rows_sent` bigint(20) unsigned NOT NULL,\n" +
		"  `rows_examined` bigint(20) unsigned NOT NULL,\n" +
		"  `db` varchar(512) NOT NULL,\n" +
		"  `last_insert_id` int(11) NOT NULL,\n" +
		"  `insert_id` int(11) NOT NULL,\n" +
		"  `server_id` int(10) unsigned NOT NULL,\n" +
		"  `sql_text` mediumtext NOT NULL,\n" +
		"  `thread_id` bigint(21) unsigned NOT NULL,\n" +
		"  `rows_affected` bigint(20) unsigned NOT NULL\n" +
		") ENGINE=CSV DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci COMMENT='Slow log'",
}

// logTable returns the log table n names (lower-cased), current being the
// session's database, or "" when it names none.
func logTable(n sqlparser.TableName, current string) string {
	db := n.DbQualifier.String()
	if db == "" {
		db = current
	}
	name := strings.ToLower(n.Name.String())
	if _, ok := logTableDefs[name]; !ok || !strings.EqualFold(db, "mysql") {
		return ""
	}
	return name
}

// logTables answers SHOW CREATE TABLE and CREATE TABLE of a log table
// (see logTableDefs); handled is false for any other statement.
func (h *Handler) logTables(c *mysql.Conn, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	s := h.session(c)
	first, rest, err := sqlparser.SplitStatement(query)
	if s == nil || err != nil || strings.TrimSpace(rest) != "" {
		return false, nil
	}
	stmt, err := sqlparser.Parse(first)
	if err != nil {
		return false, nil
	}
	switch st := stmt.(type) {
	case *sqlparser.Show:
		name := logTable(st.Table, s.GetCurrentDatabase())
		if !strings.EqualFold(st.Type, "create table") || name == "" {
			return false, nil
		}
		return true, out(&sqltypes.Result{
			Fields: []*querypb.Field{textField("Table", 1<<20), textField("Create Table", 1<<20)},
			Rows:   [][]sqltypes.Value{{sqltypes.NewVarChar(name), sqltypes.NewVarChar(logTableDefs[name])}},
		})
	case *sqlparser.DDL:
		name := logTable(st.Table, s.GetCurrentDatabase())
		if !strings.EqualFold(st.Action, sqlparser.CreateStr) || st.Temporary || st.TableSpec == nil && st.OptLike == nil && st.OptSelect == nil || name == "" {
			return false, nil
		}
		if !st.IfNotExists {
			return true, mysql.NewSQLError(mysql.ERTableExists, "42S01", "Table '%s' already exists", name)
		}
		s.ClearWarnings()
		s.Warn(tableExistsNote(name))
		return true, out(&sqltypes.Result{})
	}
	return false, nil
}
