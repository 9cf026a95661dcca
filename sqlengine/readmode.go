package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/txn"
)

// readMode decides how the statement reads tables. go-mysql-server passes
// no flag for DML or locking reads, so the statement text decides, as InnoDB
// would: UPDATE, DELETE and SELECT ... FOR UPDATE read the latest committed
// rows under exclusive locks; INSERT/REPLACE ... SELECT and SELECT ... FOR
// SHARE / LOCK IN SHARE MODE under shared locks; everything else reads the
// transaction's snapshot.
func readMode(ctx *sql.Context) txn.ReadMode {
	q := ctx.Query()
	if s, ok := ctx.Session.(*Session); ok {
		if s.modeQuery == q && len(q) > 0 {
			return s.mode
		}
		m := classify(q)
		s.modeQuery, s.mode = q, m
		return m
	}
	return classify(q)
}

// classify inspects a statement's leading keyword and locking clause.
func classify(q string) txn.ReadMode {
	lx := lexer{s: q}
	first := lx.word()
	switch first {
	case "UPDATE", "DELETE":
		return txn.CurrentExclusive
	case "INSERT", "REPLACE":
		return txn.CurrentShared
	case "SELECT", "WITH":
	default:
		return txn.Snapshot
	}
	mode := txn.Snapshot
	prev := ""
	for {
		w := lx.word()
		if w == "" {
			return mode
		}
		switch {
		case prev == "FOR" && w == "UPDATE":
			return txn.CurrentExclusive
		case prev == "FOR" && w == "SHARE", prev == "SHARE" && w == "MODE":
			mode = txn.CurrentShared
		}
		prev = w
	}
}

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

func (l *lexer) skipQuoted(q byte) {
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
			return
		}
	}
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
