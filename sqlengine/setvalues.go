package sqlengine

import (
	"regexp"
	"strings"
)

// bareAllRE is an assignment of the bare keyword ALL.
var bareAllRE = regexp.MustCompile(`(?i)((?::=|=)\s*)(ALL)\b`)

// setKeywordValues quotes the bare keyword ALL assigned in a SET statement
// (SET GLOBAL wsrep_reject_queries = ALL), which MariaDB's grammar takes
// as a value and go-mysql-server's parser refuses (1064).
func setKeywordValues(q string) string {
	t := strings.TrimLeft(q, " \t\r\n")
	if len(t) < 4 || !strings.EqualFold(t[:4], "SET ") || !strings.Contains(strings.ToUpper(q), "ALL") {
		return q
	}
	return bareAllRE.ReplaceAllString(q, "${1}'${2}'")
}
