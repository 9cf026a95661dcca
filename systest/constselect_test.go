package systest

import (
	"context"
	"testing"
)

// TestConstSelectDifferential runs the SELECTs of variables and literals
// that drivers and pools send, on a session whose handler answers them
// and on one through go-mysql-server, and compares names, types and
// values, also after the variables change; sessions in a transaction or
// with autocommit off, and texts the handler does not take, go to the
// general path.
func TestConstSelectDifferential(t *testing.T) {
	_, db := startNode(t, "cs", "cs")
	fast, slow := fastPathPair(t, db)
	ctx := context.Background()
	queries := []string{
		"SELECT 1",
		"select 1;",
		"SELECT 1 AS ok, 42 x",
		"select @@version_comment limit 1",
		"SELECT @@version",
		"SELECT @@session.auto_increment_increment AS auto_increment_increment, @@character_set_client AS character_set_client, " +
			"@@character_set_connection AS character_set_connection, @@character_set_results AS character_set_results, " +
			"@@character_set_server AS character_set_server, @@collation_server AS collation_server, @@init_connect AS init_connect, " +
			"@@interactive_timeout AS interactive_timeout, @@license AS license, @@lower_case_table_names AS lower_case_table_names, " +
			"@@max_allowed_packet AS max_allowed_packet, @@net_write_timeout AS net_write_timeout, @@performance_schema AS performance_schema, " +
			"@@sql_mode AS sql_mode, @@system_time_zone AS system_time_zone, @@time_zone AS time_zone, " +
			"@@transaction_isolation AS transaction_isolation, @@wait_timeout AS wait_timeout",
		"SELECT @@SESSION.sql_mode, @@GLOBAL.sql_mode",
		"SELECT @@autocommit, @@wsrep_sync_wait, @@wsrep_on",
		"SELECT @@global.max_connections `max conn`",
		"SELECT @@max_connections",
		"SELECT @@tx_isolation, @@innodb_lock_wait_timeout",
		"SELECT @@long_query_time",
		"SELECT @@last_insert_id, @@identity",
		"SELECT @@no_such_variable",
		"SELECT @@global.sql_select_limit",
		"SELECT 1, @@version LIMIT 5",
	}
	compare := func(when string) {
		t.Helper()
		for _, q := range queries {
			for round := 0; round < 3; round++ { // the first run teaches the handler
				got, err := runStmt(ctx, fast, true, q)
				if err != nil {
					t.Fatalf("%s, %s (run %d): %v", when, q, round, err)
				}
				want, err := runStmt(ctx, slow, true, q)
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != want.String() {
					t.Fatalf("%s, %s (run %d):\n handler: %s\n general: %s", when, q, round, got, want)
				}
			}
		}
	}
	before := fastPathStatements(t, db)
	compare("at start")
	answered := fastPathStatements(t, db) - before
	if answered < int64(len(queries)) {
		t.Fatalf("the handler answered %d of %d statements", answered, 3*len(queries))
	}
	t.Logf("the handler answered %d of %d statements", answered, 3*len(queries))

	for _, set := range []string{
		"SET sql_mode = 'ANSI_QUOTES'", "SET GLOBAL max_connections = 321", "SET SESSION wsrep_sync_wait = 1",
		"SET autocommit = 0", "SET character_set_results = latin1", "SET GLOBAL sql_mode = 'STRICT_TRANS_TABLES'",
	} {
		xexec(t, fast, set)
		xexec(t, slow, set)
		compare("after " + set)
	}
	xexec(t, fast, "SET autocommit = 1")
	xexec(t, slow, "SET autocommit = 1")
	xexec(t, fast, "SET GLOBAL max_connections = 151")
	xexec(t, fast, "SET GLOBAL sql_mode = DEFAULT")
	// in a transaction the general path answers (it may start one)
	xexec(t, fast, "BEGIN")
	before = fastPathStatements(t, db)
	if _, err := runStmt(ctx, fast, true, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if n := fastPathStatements(t, db) - before; n != 0 {
		t.Fatalf("the handler answered SELECT 1 in a transaction")
	}
	xexec(t, fast, "COMMIT")
}
