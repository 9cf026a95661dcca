package sqlengine

import "strings"

// The SQL text helpers every text rewrite and classifier of this package
// shares: a word lexer, a token lexer, tokens with their parenthesis depth,
// and case-insensitive search.

// lexer returns upper-cased words of a statement, skipping quoted strings,
// quoted identifiers, comments, numbers and punctuation.
type lexer struct {
	s string
	i int
}

// word returns the next word, upper-cased, skipping quoted strings,
// comments (but reading executable ones), numbers and punctuation; ""
// at the end.
func (l *lexer) word() string { return l.next(false) }

// token is word, but a comma or a semicolon is a token of its own.
func (l *lexer) token() string { return l.next(true) }

func (l *lexer) next(punct bool) string {
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			l.skipQuoted(c)
		case c == '-' && l.i+1 < len(l.s) && l.s[l.i+1] == '-', c == '#':
			for l.i < len(l.s) && l.s[l.i] != '\n' {
				l.i++
			}
		case c == '/' && l.i+1 < len(l.s) && l.s[l.i+1] == '*':
			if l.i+2 < len(l.s) && l.s[l.i+2] == '!' {
				// executable comment /*! ... */: read its contents as SQL
				l.i += 3
				for l.i < len(l.s) && l.s[l.i] >= '0' && l.s[l.i] <= '9' {
					l.i++
				}
				continue
			}
			end := indexFrom(l.s, "*/", l.i+2)
			if end < 0 {
				l.i = len(l.s)
			} else {
				l.i = end + 2
			}
		case isWordByte(c):
			start := l.i
			for l.i < len(l.s) && isWordByte(l.s[l.i]) {
				l.i++
			}
			if c >= '0' && c <= '9' {
				continue
			}
			return upper(l.s[start:l.i])
		case punct && (c == ',' || c == ';'):
			l.i++
			return l.s[l.i-1 : l.i]
		default:
			l.i++
		}
	}
	return ""
}

// skipQuoted moves past the quoted text that starts at l.i with quote q
// and reports whether the text closes.
func (l *lexer) skipQuoted(q byte) (closed bool) {
	l.i++
	for l.i < len(l.s) {
		c := l.s[l.i]
		if c == '\\' && q != '`' {
			l.i = min(l.i+2, len(l.s)) // a backslash may end the text
			continue
		}
		l.i++
		if c == q {
			if l.i < len(l.s) && l.s[l.i] == q {
				l.i++
				continue
			}
			return true
		}
	}
	return false
}

// unterminated reports whether toks (of lexTokens) end in a quoted text
// that the statement never closes.
func unterminated(toks []lexToken) bool {
	if len(toks) == 0 || toks[len(toks)-1].kind != 'q' {
		return false
	}
	t := toks[len(toks)-1].text
	l := lexer{s: t}
	return !l.skipQuoted(t[0])
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '$'
}

func upper(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'a' && s[i] <= 'z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'a' && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func indexFrom(s, sub string, from int) int {
	for i := from; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// lexToken is a token of a statement: a word, a @variable, a quoted string
// or identifier, or punctuation (":=" is one token).
type lexToken struct {
	kind       byte // 'w' word, 'v' variable, 'q' quoted, 'p' punctuation
	text       string
	start, end int // its bytes in the statement
}

// lexTokens splits q into tokens, skipping white space and comments.
func lexTokens(q string) []lexToken {
	var toks []lexToken
	for i := 0; i < len(q); {
		c := q[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '#' || c == '-' && i+1 < len(q) && q[i+1] == '-' && (i+2 == len(q) || q[i+2] <= ' '):
			for i < len(q) && q[i] != '\n' {
				i++
			}
			continue
		case strings.HasPrefix(q[i:], "/*"):
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				i = len(q)
			} else {
				i += end + 4
			}
			continue
		case c == '\'' || c == '"' || c == '`':
			l := lexer{s: q, i: i}
			l.skipQuoted(c)
			i = l.i
			toks = append(toks, lexToken{'q', q[start:i], start, i})
		case c == '@':
			i++
			if i < len(q) && q[i] == '@' {
				i++
			}
			for i < len(q) && (isWordByte(q[i]) || q[i] == '.') {
				i++
			}
			toks = append(toks, lexToken{'v', q[start:i], start, i})
		case isWordByte(c):
			for i < len(q) && isWordByte(q[i]) {
				i++
			}
			toks = append(toks, lexToken{'w', q[start:i], start, i})
		case c == ':' && i+1 < len(q) && q[i+1] == '=':
			i += 2
			toks = append(toks, lexToken{'p', ":=", start, i})
		default:
			i++
			toks = append(toks, lexToken{'p', q[start:i], start, i})
		}
	}
	return toks
}

// sqlToken is a word or punctuation of a statement at parenthesis depth
// depth; quoted strings and identifiers and comments are skipped.
type sqlToken struct {
	word       string // upper-cased word, or "," / "(" / ")"
	start, end int
	depth      int
}

// topTokens lists the words, commas and parentheses of q with their depth.
func topTokens(q string) []sqlToken {
	var out []sqlToken
	depth := 0
	for _, t := range lexTokens(q) {
		switch {
		case t.kind == 'w':
			out = append(out, sqlToken{word: upper(t.text), start: t.start, end: t.end, depth: depth})
		case t.text == "(":
			out = append(out, sqlToken{word: "(", start: t.start, end: t.end, depth: depth})
			depth++
		case t.text == ")":
			depth--
			out = append(out, sqlToken{word: ")", start: t.start, end: t.end, depth: depth})
		case t.text == ",":
			out = append(out, sqlToken{word: ",", start: t.start, end: t.end, depth: depth})
		}
	}
	return out
}

// containsFold reports whether s contains the ASCII word w in any case,
// without allocating (it runs on every text statement).
func containsFold(s, w string) bool { return indexFold(s, w) >= 0 }

// indexFold is the index of the first ASCII word w in s, in any case, or
// -1.
func indexFold(s, w string) int {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i]|0x20 == w[0]|0x20 && strings.EqualFold(s[i:i+len(w)], w) {
			return i
		}
	}
	return -1
}

// unquoteName is a name as written in a statement (an alias, a user or a
// host), without its quotes: backquoted, or a string literal with its
// escapes and doubled quotes undone.
func unquoteName(s string) string {
	if len(s) < 2 {
		return s
	}
	switch q := s[0]; q {
	case '`':
		return strings.ReplaceAll(s[1:len(s)-1], "``", "`")
	case '\'', '"':
		return unescapeString(s[1:len(s)-1], q)
	}
	return s
}

// unescapeString undoes a string literal's escapes and doubled quotes q.
func unescapeString(s string, q byte) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case '0':
				b.WriteByte(0)
			case 'Z':
				b.WriteByte(0x1a)
			default:
				b.WriteByte(s[i])
			}
		case s[i] == q && i+1 < len(s) && s[i+1] == q:
			i++
			b.WriteByte(q)
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
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
