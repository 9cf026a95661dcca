package sqlengine

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/certusdb/certus/internal/sqllex"
)

// GROUP BY ... WITH ROLLUP, which go-mysql-server's parser does not know,
// is rewritten in text statements as MySQL computes it: the grouped rows,
// then for each group column from the last one the rows grouped by the
// columns before it with that column and the ones after it NULL, then the
// grand total, each super-aggregate row after the rows it sums up. The
// rewrite is a UNION ALL of one grouped SELECT per level, ordered by each
// group column's rolled-up flag and then its key:
//
//	SELECT a, b, SUM(x) FROM t GROUP BY a, b WITH ROLLUP
//
// becomes (roughly)
//
//	SELECT c1 AS `a`, c2 AS `b`, c3 AS `SUM(x)` FROM (
//	  SELECT a c1, b c2, SUM(x) c3, a k1, 0 r1, b k2, 0 r2 FROM t GROUP BY a, b
//	  UNION ALL SELECT a, NULL, SUM(x), a, 0, NULL, 1 FROM t GROUP BY a
//	  UNION ALL SELECT NULL, NULL, SUM(x), NULL, 1, NULL, 1 FROM t
//	) r ORDER BY r1, k1, r2, k2
//
// A user's ORDER BY and LIMIT apply to the whole result instead. Only a
// single SELECT with ROLLUP at its top level, without HAVING, DISTINCT,
// GROUPING() or locking, is rewritten; anything else keeps
// go-mysql-server's syntax error.

// rollupSelect is the parts of a SELECT ... GROUP BY ... WITH ROLLUP.
type rollupSelect struct {
	items  []rollupItem
	from   string // FROM ... up to GROUP BY
	groups []string
	tail   string // ORDER BY / LIMIT after WITH ROLLUP
}

// rollupItem is one item of the select list.
type rollupItem struct {
	expr, name string
	group      int // index of the group column it is, or -1
}

// asAliasRe matches an item with an alias after AS, bareAliasRe one that
// ends in an alias without AS, columnRefRe a column (qualified or not).
var (
	asAliasRe   = regexp.MustCompile("(?is)^(.*\\S)\\s+AS\\s+(`(?:[^`]|``)+`|[A-Za-z0-9_$]+|'[^']*'|\"[^\"]*\")$")
	columnRefRe = regexp.MustCompile("^(?:(?:`(?:[^`]|``)+`|[A-Za-z0-9_$]+)\\.)?(`(?:[^`]|``)+`|[A-Za-z0-9_$]+)$")
	bareAliasRe = regexp.MustCompile("(?is)^(.*[A-Za-z0-9_$)`])\\s+(`(?:[^`]|``)+`|[A-Za-z_$][A-Za-z0-9_$]*)$")
)

// parseRollup finds the parts of q, or ok is false when q is not a
// SELECT this rewrite handles.
func parseRollup(q string) (r rollupSelect, ok bool) {
	toks := topTokens(q)
	if len(toks) == 0 || toks[0].word != "SELECT" || toks[0].depth != 0 {
		return r, false
	}
	from, groupBy, with, tail := -1, -1, -1, -1
	for i, t := range toks {
		if t.depth != 0 {
			if t.word == "ROLLUP" {
				return r, false // in a subquery
			}
			continue
		}
		switch {
		case t.word == "DISTINCT" || t.word == "DISTINCTROW" || t.word == "HAVING" || t.word == "UNION" || t.word == "INTO" ||
			t.word == "FOR" || t.word == "LOCK" || t.word == "GROUPING" || t.word == "WINDOW" || t.word == "SQL_CALC_FOUND_ROWS":
			return r, false
		case t.word == "FROM" && from < 0:
			from = i
		case t.word == "GROUP" && i+1 < len(toks) && toks[i+1].word == "BY" && groupBy < 0:
			groupBy = i
		case t.word == "WITH" && i+1 < len(toks) && toks[i+1].word == "ROLLUP" && groupBy >= 0:
			with = i
		case (t.word == "ORDER" || t.word == "LIMIT") && with >= 0 && tail < 0:
			tail = i
		}
	}
	if from < 0 || groupBy < from || with < groupBy {
		return r, false
	}
	if with+2 < len(toks) && with+2 != tail {
		return r, false // something else after WITH ROLLUP
	}
	r.from = strings.TrimSpace(q[toks[from].start:toks[groupBy].start])
	r.groups = splitTop(q, toks, toks[groupBy+1].end, toks[with].start)
	if tail >= 0 {
		r.tail = strings.TrimRight(strings.TrimSpace(q[toks[tail].start:]), "; \t\r\n")
	}
	for _, item := range splitTop(q, toks, toks[0].end, toks[from].start) {
		it := rollupItem{expr: item, name: item, group: -1}
		if m := asAliasRe.FindStringSubmatch(item); m != nil {
			it.expr, it.name = m[1], sqllex.Unquote(m[2])
		} else if m := bareAliasRe.FindStringSubmatch(item); m != nil && !isKeyword(m[2]) && !strings.HasSuffix(strings.TrimSpace(m[1]), ".") {
			it.expr, it.name = m[1], sqllex.Unquote(m[2])
		}
		if it.name == it.expr {
			if m := columnRefRe.FindStringSubmatch(it.expr); m != nil { // `t`.`a` is named a
				it.name = sqllex.Unquote(m[1])
			}
		}
		if it.expr == "*" || strings.HasSuffix(it.expr, ".*") {
			return r, false
		}
		r.items = append(r.items, it)
	}
	if len(r.groups) == 0 || len(r.items) == 0 {
		return r, false
	}
	for gi, g := range r.groups {
		if strings.HasSuffix(sqllex.Upper(g), " ASC") || strings.HasSuffix(sqllex.Upper(g), " DESC") {
			return r, false
		}
		if n, err := strconv.Atoi(g); err == nil { // GROUP BY 2
			if n < 1 || n > len(r.items) {
				return r, false
			}
			r.groups[gi] = r.items[n-1].expr
		}
	}
	for i := range r.items {
		for gi, g := range r.groups {
			if sameExpr(r.items[i].expr, g) || sameExpr(r.items[i].name, g) {
				r.items[i].group = gi
				r.groups[gi] = r.items[i].expr // GROUP BY alias
				break
			}
		}
	}
	return r, true
}

// splitTop splits q[from:to] at its top-level commas.
func splitTop(q string, toks []sqlToken, from, to int) []string {
	var out []string
	start := from
	for _, t := range toks {
		if t.start < from || t.start >= to || t.word != "," || t.depth != 0 {
			continue
		}
		out = append(out, strings.TrimSpace(q[start:t.start]))
		start = t.end
	}
	if last := strings.TrimSpace(q[start:to]); last != "" {
		out = append(out, last)
	}
	for _, s := range out {
		if s == "" {
			return nil
		}
	}
	return out
}

// sameExpr reports whether two expressions are written alike, ignoring
// case, blanks and identifier quotes.
func sameExpr(a, b string) bool {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("`", "", " ", "", "\t", "", "\n", "", "\r", "").Replace(s))
	}
	return norm(a) == norm(b)
}

// isKeyword reports whether the last word of an item is a keyword that
// ends an expression rather than an alias.
func isKeyword(w string) bool {
	switch sqllex.Upper(w) {
	case "END", "NULL", "TRUE", "FALSE", "ASC", "DESC", "UNKNOWN":
		return true
	}
	return false
}

// rollupRewrite returns q with its WITH ROLLUP computed as described
// above, or ok false when q is not such a SELECT.
// maxRollupText bounds the rewritten statement: it repeats the FROM
// clause and every column once per group column, so a statement of a few
// kilobytes became megabytes, and one of max_allowed_packet gigabytes. Past
// the bound the statement keeps go-mysql-server's syntax error.
const maxRollupText = 4 << 20

func rollupRewrite(q string) (string, bool) {
	r, ok := parseRollup(q)
	if !ok {
		return "", false
	}
	n := len(r.groups)
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, it := range r.items {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "`__rc%d` AS %s", i, quoteName(it.name))
	}
	b.WriteString(" FROM (")
	for level := n; level >= 0; level-- { // grouped by the first level columns
		if level < n {
			b.WriteString(" UNION ALL ")
		}
		b.WriteString("SELECT ")
		for i, it := range r.items {
			if i > 0 {
				b.WriteString(", ")
			}
			if it.group >= level {
				fmt.Fprintf(&b, "%s AS `__rc%d`", rolledUp(it.expr), i)
			} else {
				fmt.Fprintf(&b, "%s AS `__rc%d`", it.expr, i)
			}
		}
		for gi, g := range r.groups {
			if gi >= level {
				fmt.Fprintf(&b, ", %s AS `__rk%d`, 1 AS `__rr%d`", rolledUp(g), gi, gi)
			} else {
				fmt.Fprintf(&b, ", %s AS `__rk%d`, 0 AS `__rr%d`", g, gi, gi)
			}
		}
		b.WriteString(" ")
		b.WriteString(r.from)
		if level > 0 {
			b.WriteString(" GROUP BY ")
			b.WriteString(strings.Join(r.groups[:level], ", "))
		}
		if b.Len() > maxRollupText {
			return "", false
		}
	}
	b.WriteString(") AS `__rollup`")
	if !strings.HasPrefix(sqllex.Upper(r.tail), "ORDER") {
		// each group's rows in key order, its super-aggregate after them
		b.WriteString(" ORDER BY ")
		for gi := range r.groups {
			if gi > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "`__rr%d`, `__rk%d`", gi, gi)
		}
	}
	if r.tail != "" {
		b.WriteString(" ")
		b.WriteString(r.tail)
	}
	return b.String(), true
}

// rolledUp is the NULL a super-aggregate row has for the group column
// expr, typed as expr is: go-mysql-server's UNION converts every column
// when one differs in type between its parts, and a DECIMAL lost its
// scale on the way.
func rolledUp(expr string) string {
	return "IF(FALSE, MIN(" + expr + "), NULL)"
}

// quoteName quotes a column name as an identifier.
func quoteName(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
