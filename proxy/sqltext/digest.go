package sqltext

import (
	"strings"

	"github.com/certusdb/certus/internal/sqllex"
)

// keywords are the words a digest writes in upper case; other words
// (identifiers) keep their case.
var keywords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`ADD ALL ALTER AND ANY AS ASC BEGIN BETWEEN BINARY BY CALL CASE CAST
	CHARACTER CHARSET COLLATE COLUMN COMMIT COUNT CREATE CROSS DATABASE DEFAULT DELAYED DELETE DESC
	DESCRIBE DISTINCT DIV DO DROP DUAL DUPLICATE ELSE END ESCAPE EXISTS EXPLAIN FALSE FOR FORCE FROM
	FULL GLOBAL GROUP HAVING HIGH_PRIORITY IF IGNORE IN INDEX INNER INSERT INTERVAL INTO IS ISOLATION
	JOIN KEY KILL LEFT LEVEL LIKE LIMIT LOCAL LOCK MODE NAMES NATURAL NOT NULL OFFSET ON OR ORDER OUTER
	PRIMARY READ REGEXP RELEASE REPLACE RIGHT ROLLBACK SAVEPOINT SELECT SESSION SET SHARE SHOW START
	STRAIGHT_JOIN TABLE TABLES TEMPORARY THEN TO TRANSACTION TRUE TRUNCATE UNION UNIQUE UNLOCK UPDATE
	USE USING VALUES VIEW WHEN WHERE WITH WORK WRITE XOR SUM MIN MAX AVG`) {
		keywords[w] = true
	}
}

// Digest normalises a statement: comments dropped, literals (strings,
// numbers, hex/bit values, NULL is kept) replaced by ?, lists of ? in
// parentheses collapsed to "?,...", whitespace collapsed to one space
// and keywords upper-cased. Statements that differ only in their
// literals have the same digest.
func Digest(q string) string {
	toks := sqllex.Lex(q)
	var parts []string
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		var s string
		switch t.Kind {
		case sqllex.String, sqllex.Number, sqllex.Param:
			s = "?"
			// a sign right before a number is part of the literal
			if t.Kind == sqllex.Number && len(parts) > 0 && (parts[len(parts)-1] == "-" || parts[len(parts)-1] == "+") && signPosition(parts) {
				parts = parts[:len(parts)-1]
			}
		case sqllex.Word:
			if u := t.Upper(); keywords[u] {
				s = u
			} else {
				s = t.Text
			}
		case sqllex.Var:
			s = strings.ToLower(t.Text)
		default:
			s = t.Text
		}
		parts = append(parts, s)
	}
	parts = collapseLists(parts)
	var b strings.Builder
	for i, p := range parts {
		glued := p == "(" && i > 0 && isCall(parts[i-1])
		if i > 0 && !glued && p != "," && p != ")" && p != "." && p != ";" && parts[i-1] != "(" && parts[i-1] != "." {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

// funcKeywords are keywords that are also function names: a digest
// writes them against their parenthesis like other function calls.
var funcKeywords = map[string]bool{"COUNT": true, "SUM": true, "MIN": true, "MAX": true, "AVG": true, "CAST": true, "IF": true}

// isCall reports whether a "(" after part p opens a function's arguments.
func isCall(p string) bool {
	if p == "" || !sqllex.IsWordStart(p[0]) {
		return false
	}
	return !keywords[p] || funcKeywords[p]
}

// signPosition reports whether a trailing "-" or "+" in parts is a sign
// (it follows an operator, a comma, an opening parenthesis or a keyword)
// rather than a binary operator.
func signPosition(parts []string) bool {
	if len(parts) < 2 {
		return true
	}
	prev := parts[len(parts)-2]
	switch prev {
	case "?", ")":
		return false
	}
	if keywords[prev] {
		return true
	}
	c := prev[0]
	return !(sqllex.IsWordChar(c) || c == '`' || c == '@')
}

// collapseLists turns "( ? , ? , ? )" into "( ?,... )".
func collapseLists(parts []string) []string {
	out := parts[:0:0]
	for i := 0; i < len(parts); i++ {
		if parts[i] == "?" && i+2 < len(parts) && parts[i+1] == "," && parts[i+2] == "?" {
			j := i + 2
			for j+2 < len(parts) && parts[j+1] == "," && parts[j+2] == "?" {
				j += 2
			}
			out = append(out, "?,...")
			i = j
			continue
		}
		out = append(out, parts[i])
	}
	return out
}
