package sqlengine

import "strings"

// createSelectParens rewrites CREATE TABLE t AS (SELECT ...) and CREATE
// TABLE t (SELECT ...), which MySQL runs and go-mysql-server's parser
// refuses (1064), into CREATE TABLE t AS SELECT ... . Only a query whose
// parentheses close at the end of the statement is rewritten (not
// `(SELECT 1) UNION (SELECT 2)`).
func createSelectParens(q string) string {
	if !mayStartWith(q, "create") {
		return q
	}
	toks := lexTokens(q)
	i := 0
	word := func(w string) bool {
		if i < len(toks) && toks[i].kind == 'w' && strings.EqualFold(toks[i].text, w) {
			i++
			return true
		}
		return false
	}
	name := func() bool {
		if i < len(toks) && (toks[i].kind == 'w' || toks[i].kind == 'q' && toks[i].text[0] == '`') {
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
	if i < len(toks) && toks[i].text == "." {
		i++
		if !name() {
			return q
		}
	}
	as := word("AS")
	open := i
	if i >= len(toks) || toks[i].text != "(" {
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
		if t.text != ";" {
			return q
		}
	}
	head := strings.TrimRight(q[:toks[open].start], " \t\r\n")
	if !as {
		head += " AS"
	}
	return head + " " + strings.TrimLeft(q[toks[open].end:toks[end].start], " \t\r\n") + q[toks[end].end:]
}
