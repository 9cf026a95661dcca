package sqlengine

import (
	"strings"

	"github.com/certusdb/certus/internal/sqllex"
)

// synonyms rewrites the spellings MySQL accepts and go-mysql-server's
// parser refuses (1064) into the ones it takes:
//
//	LOCK TABLE t READ        LOCK TABLES t READ
//	ALTER SCHEMA d ...       ALTER DATABASE d ...
//	x IS [NOT] UNKNOWN       x IS [NOT] NULL (a boolean's UNKNOWN is NULL)
//	ENGINE [=] 'InnoDB'      ENGINE [=] InnoDB (a quoted engine name)
func synonyms(q string) string {
	// it runs on every statement: most have none of the words
	if !sqllex.ContainsFold(q, "LOCK") && !sqllex.ContainsFold(q, "SCHEMA") && !sqllex.ContainsFold(q, "UNKNOWN") && !sqllex.ContainsFold(q, "ENGINE") {
		return q
	}
	toks := sqllex.Lex(q)
	var b strings.Builder
	last := 0
	replace := func(t sqllex.Token, with string) {
		b.WriteString(q[last:t.Start])
		b.WriteString(with)
		last = t.End
	}
	for i, t := range toks {
		switch {
		case i == 1 && t.Is("TABLE") && toks[0].Is("LOCK"):
			replace(t, "TABLES")
		case i == 1 && t.Is("SCHEMA") && toks[0].Is("ALTER"):
			replace(t, "DATABASE")
		case t.Is("UNKNOWN") && i > 0 && (toks[i-1].Is("IS") || i > 1 && toks[i-1].Is("NOT") && toks[i-2].Is("IS")):
			replace(t, "NULL")
		case t.Kind == sqllex.String && i > 0 && (toks[i-1].Is("ENGINE") || i > 1 && toks[i-1].IsPunct("=") && toks[i-2].Is("ENGINE")):
			if name := sqllex.Unquote(t.Text); isWord(name) {
				replace(t, name)
			}
		}
	}
	if last == 0 {
		return q
	}
	b.WriteString(q[last:])
	return b.String()
}

// isWord reports whether s is a bare word (an engine name to unquote).
func isWord(s string) bool {
	if s == "" || !sqllex.IsWordStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !sqllex.IsWordChar(s[i]) {
			return false
		}
	}
	return true
}
