package sqlengine

import (
	"strings"

	"github.com/certusdb/certus/internal/sqllex"
)

// createSelectParens rewrites CREATE TABLE t AS (SELECT ...) and CREATE
// TABLE t (SELECT ...), which MySQL runs and go-mysql-server's parser
// refuses (1064), into CREATE TABLE t AS SELECT ... . Only a query whose
// parentheses close at the end of the statement is rewritten (not
// `(SELECT 1) UNION (SELECT 2)`).
func createSelectParens(q string) string {
	if !mayStartWith(q, "create") {
		return q
	}
	toks := sqllex.Lex(q)
	i := 0
	word := func(w string) bool {
		if i < len(toks) && toks[i].Is(w) {
			i++
			return true
		}
		return false
	}
	name := func() bool {
		if i < len(toks) && (toks[i].Kind == sqllex.Word || toks[i].Kind == sqllex.Ident) {
			i++
			return true
		}
		return false
	}
	if !word("CREATE") {
		return q
	}
	word("TEMPORARY")
	if !word("TABLE") || word("IF") && !(word("NOT") && word("EXISTS")) || !name() {
		return q
	}
	if i < len(toks) && toks[i].Text == "." {
		i++
		if !name() {
			return q
		}
	}
	as := word("AS")
	open := i
	if i >= len(toks) || toks[i].Text != "(" {
		return q
	}
	i++
	if !word("SELECT") && !word("WITH") {
		return q
	}
	end := closingParen(toks, open)
	if end < 0 {
		return q
	}
	for _, t := range toks[end+1:] {
		if t.Text != ";" {
			return q
		}
	}
	head := strings.TrimRight(q[:toks[open].Start], " \t\r\n")
	if !as {
		head += " AS"
	}
	return head + " " + strings.TrimLeft(q[toks[open].End:toks[end].Start], " \t\r\n") + q[toks[end].End:]
}
