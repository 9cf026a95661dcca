package sqlengine

import (
	"strings"

	"github.com/certusdb/certus/internal/sqllex"
)

// The SQL text helpers the text rewrites and classifiers of this package
// share; they read statements through internal/sqllex, the project's one
// tokenizer.

// sqlToken is a word, number or punctuation of a statement at parenthesis
// depth depth; quoted strings and identifiers, variables and comments are
// skipped.
type sqlToken struct {
	word       string // upper-cased word, a number, or "," / "(" / ")"
	start, end int
	depth      int
}

// topTokens lists the words, numbers, commas and parentheses of q with
// their depth.
func topTokens(q string) []sqlToken {
	var out []sqlToken
	depth := 0
	s := sqllex.NewScanner(q)
	for t := s.Next(); t.Kind != sqllex.EOF; t = s.Next() {
		switch {
		case t.Kind == sqllex.Word || t.Kind == sqllex.Number:
			out = append(out, sqlToken{word: t.Upper(), start: t.Start, end: t.End, depth: depth})
		case t.Text == "(":
			out = append(out, sqlToken{word: "(", start: t.Start, end: t.End, depth: depth})
			depth++
		case t.Text == ")":
			depth--
			out = append(out, sqlToken{word: ")", start: t.Start, end: t.End, depth: depth})
		case t.Text == ",":
			out = append(out, sqlToken{word: ",", start: t.Start, end: t.End, depth: depth})
		}
	}
	return out
}

// mayStartWith reports whether statement q may begin with the word w (in
// any case): it does, or it begins with a comment, or it holds w
// somewhere. It is a cheap test for the rewrites that run on every text
// statement and apply to one kind.
func mayStartWith(q, w string) bool {
	t := strings.TrimLeft(q, " \t\r\n")
	if len(t) >= len(w) && strings.EqualFold(t[:len(w)], w) {
		return true
	}
	if strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "--") || strings.HasPrefix(t, "(") {
		return sqllex.ContainsFold(q, w)
	}
	return false
}

// escapeString escapes s for a single-quoted literal that the mysql
// client and the server read back byte for byte.
func escapeString(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 0:
			b.WriteString(`\0`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case 0x1a:
			b.WriteString(`\Z`)
		case '\'', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// backquote quotes an identifier with backquotes.
func backquote(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
