package sqlengine

import "testing"

func TestSetKeywordValues(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SET GLOBAL wsrep_reject_queries = ALL", "SET GLOBAL wsrep_reject_queries = 'ALL'"},
		{"set global wsrep_reject_queries=all;", "set global wsrep_reject_queries='all';"},
		{"SET @@global.wsrep_reject_queries := ALL_KILL", "SET @@global.wsrep_reject_queries := ALL_KILL"},
		{"SET GLOBAL wsrep_reject_queries = 'ALL'", "SET GLOBAL wsrep_reject_queries = 'ALL'"},
		{"SELECT * FROM t WHERE a = ALL (SELECT b FROM u)", "SELECT * FROM t WHERE a = ALL (SELECT b FROM u)"},
		{"SET sql_mode = 'ANSI'", "SET sql_mode = 'ANSI'"},
		{"/*!40101 set @@character_set_database=binary */;", "/*!40101 set @@character_set_database='binary' */;"},
		{"SET character_set_results = BINARY, @x = 1", "SET character_set_results = 'BINARY', @x = 1"},
		{"SET character_set_client = binary", "SET character_set_client = 'binary'"},
		{"SET @x = BINARY 'abc'", "SET @x = BINARY 'abc'"},
		{"SET @x = BINARY(1)", "SET @x = BINARY(1)"},
		{"SELECT BINARY 'a' = 'A'", "SELECT BINARY 'a' = 'A'"},
	} {
		if got := setKeywordValues(tc.in); got != tc.want {
			t.Errorf("setKeywordValues(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
