package sqlengine

import (
	"regexp"
	"strings"
)

// createSelectRE is the head of CREATE TABLE name [AS] ( SELECT|WITH: the
// parenthesized query MySQL takes as a table's contents.
var createSelectRE = regexp.MustCompile("(?is)^\\s*CREATE\\s+(?:TEMPORARY\\s+)?TABLE\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?" +
	"(?:`[^`]+`|[\\w$]+)(?:\\s*\\.\\s*(?:`[^`]+`|[\\w$]+))?\\s*(?:AS\\s*)?\\(\\s*(?:SELECT|WITH)\\b")

// createSelectParens rewrites CREATE TABLE t AS (SELECT ...) and CREATE
// TABLE t (SELECT ...), which MySQL runs and go-mysql-server's parser
// refuses (1064), into CREATE TABLE t AS SELECT ... . Only a query whose
// parentheses close at the end of the statement is rewritten (not
// `(SELECT 1) UNION (SELECT 2)`).
func createSelectParens(q string) string {
	if !mayStartWith(q, "create") {
		return q
	}
	m := createSelectRE.FindStringIndex(q)
	if m == nil {
		return q
	}
	open := strings.LastIndexByte(q[:m[1]], '(')
	end := strings.TrimRight(q, " \t\r\n;")
	closing := matchingParen(q, open)
	if closing != len(end)-1 {
		return q
	}
	head := strings.TrimRight(q[:open], " \t\r\n")
	if !strings.EqualFold(head[max(0, len(head)-2):], "AS") || len(head) > 2 && isWordByte(head[len(head)-3]) {
		head += " AS"
	}
	return head + " " + strings.TrimLeft(q[open+1:closing], " \t\r\n") + q[closing+1:]
}

// matchingParen returns the index of the parenthesis that closes the one
// at open, skipping quoted strings and identifiers, or -1.
func matchingParen(q string, open int) int {
	depth := 0
	for i := open; i < len(q); i++ {
		switch c := q[i]; c {
		case '\'', '"', '`':
			for i++; i < len(q) && q[i] != c; i++ {
				if q[i] == '\\' && c != '`' {
					i++
				}
			}
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}
