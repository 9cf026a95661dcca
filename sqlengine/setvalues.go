package sqlengine

import (
	"regexp"
	"strings"
)

// bareKeywordRE is an assignment of a bare keyword that MySQL takes as a
// value: ALL, or BINARY where no operand follows it (a value, not the cast
// operator of `SET @x = BINARY 'a'`).
var bareKeywordRE = regexp.MustCompile(`(?i)((?::=|=)\s*)(?:(ALL)\b|(BINARY)(\s*(?:,|;|\*/|$)))`)

// setKeywordValues quotes the bare keywords assigned in a SET statement
// (also one in an executable comment) that go-mysql-server's parser
// refuses (1064) and MySQL and MariaDB take as values: ALL (SET GLOBAL
// wsrep_reject_queries = ALL) and BINARY (`/*!40101 set
// @@character_set_database=binary */`, which mysqlimport sends first).
func setKeywordValues(q string) string {
	t := strings.TrimLeft(q, " \t\r\n")
	if strings.HasPrefix(t, "/*!") { // an executable comment: /*!40101 SET ... */
		t = strings.TrimLeft(strings.TrimLeft(t[3:], "0123456789"), " \t\r\n")
	}
	if len(t) < 4 || !strings.EqualFold(t[:4], "SET ") {
		return q
	}
	if u := strings.ToUpper(t); !strings.Contains(u, "ALL") && !strings.Contains(u, "BINARY") {
		return q
	}
	return bareKeywordRE.ReplaceAllString(q, "${1}'${2}${3}'${4}")
}
