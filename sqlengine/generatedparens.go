package sqlengine

import (
	"strings"

	"github.com/certusdb/certus/internal/sqllex"
)

// go-mysql-server's grammar takes a generated column's expression
// `AS (expr)` only where expr is not a bare condition: `b BOOL AS (a > 100)`,
// `AS (s = 'x')`, `AS (a IS NULL)`, `AS (a IN (1, 2))` were 1064, although
// MySQL and MariaDB take them, and MariaDB's SHOW CREATE TABLE (so its
// dumps) writes them so. With a second pair of parentheses, as MySQL's own
// SHOW CREATE TABLE writes them, the grammar takes any expression.

// generatedParens returns a CREATE TABLE or ALTER TABLE statement with every
// `AS (expr)` written `AS ((expr))`, except a query's (`AS (SELECT ...)`)
// and one already doubled; any other statement is returned as it is.
func generatedParens(q string) string {
	lx := sqllex.NewScanner(q)
	if w := lx.Word(); (w != "CREATE" && w != "ALTER") || !sqllex.ContainsFold(q, "as") {
		return q
	}
	if lx.Word() != "TABLE" && lx.Word() != "TABLE" { // CREATE TEMPORARY TABLE, ALTER IGNORE TABLE
		return q
	}
	toks := sqllex.Lex(q)
	var b strings.Builder
	last := 0
	for i := 0; i+2 < len(toks); i++ {
		if !toks[i].Is("AS") || toks[i+1].Text != "(" {
			continue
		}
		end := closingParen(toks, i+1)
		if end < 0 {
			return q // unbalanced: the parser says what is wrong
		}
		inner := toks[i+2]
		if end == i+2 || (inner.Kind == sqllex.Word && queryWords[strings.ToUpper(inner.Text)]) ||
			(inner.Text == "(" && closingParen(toks, i+2) == end-1) {
			continue
		}
		b.WriteString(q[last:toks[i+1].Start])
		b.WriteString("((")
		b.WriteString(q[toks[i+1].End:toks[end].Start])
		b.WriteString("))")
		last = toks[end].End
		i = end
	}
	if last == 0 {
		return q
	}
	b.WriteString(q[last:])
	return b.String()
}

// queryWords start a query in parentheses (CREATE TABLE ... AS (SELECT ...)).
var queryWords = map[string]bool{"SELECT": true, "WITH": true, "VALUES": true, "TABLE": true}

// closingParen returns the index of the token closing the parenthesis
// toks[open], or -1.
func closingParen(toks []sqllex.Token, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		switch toks[j].Text {
		case "(":
			depth++
		case ")":
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return -1
}
