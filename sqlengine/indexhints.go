package sqlengine

import (
	"regexp"
	"strings"

	"github.com/certusdb/certus/internal/sqllex"
)

// Index hints go-mysql-server's parser refuses and MySQL accepts: the
// bare keyword PRIMARY in the list (FORCE INDEX (PRIMARY); only
// `PRIMARY` in backquotes parsed), KEY for INDEX (FORCE KEY (k)), the
// empty list of USE INDEX (), which asks for no index and is dropped, and
// FOR JOIN / ORDER BY / GROUP BY, dropped so the hint covers the whole
// statement (the rows are the same either way; only the plan may
// differ). indexHints rewrites
// them into what it parses; other text, string literals included, is
// left as it is. Text statements only: vitess parses a statement to
// prepare (COM_STMT_PREPARE) before Certus sees it.

// hintRe is an index hint with its list.
var hintRe = regexp.MustCompile(`(?i)\b(USE|FORCE|IGNORE)\s+(INDEX|KEY)((?:\s+FOR\s+(?:JOIN|ORDER\s+BY|GROUP\s+BY))?)\s*\(([^()]*)\)`)

// barePrimaryRe is the keyword PRIMARY outside backquotes.
var barePrimaryRe = regexp.MustCompile("(?i)(^|[^`\\w])(PRIMARY)([^`\\w]|$)")

// indexHints returns q with its index hints in the form the parser takes.
func indexHints(q string) string {
	if !sqllex.ContainsFold(q, "INDEX") && !sqllex.ContainsFold(q, "KEY") {
		return q
	}
	plain := stripLiterals(q) // matches inside string literals are not hints
	locs := hintRe.FindAllStringSubmatchIndex(plain, -1)
	if locs == nil {
		return q
	}
	var b strings.Builder
	last := 0
	for _, m := range locs {
		verb, list := q[m[2]:m[3]], q[m[8]:m[9]]
		b.WriteString(q[last:m[0]])
		last = m[1]
		if strings.TrimSpace(list) == "" {
			if strings.EqualFold(verb, "USE") {
				continue // USE INDEX (): no hint
			}
			b.WriteString(q[m[0]:m[1]])
			continue
		}
		b.WriteString(verb + " INDEX (" + barePrimaryRe.ReplaceAllString(list, "$1`$2`$3") + ")")
	}
	b.WriteString(q[last:])
	return b.String()
}
