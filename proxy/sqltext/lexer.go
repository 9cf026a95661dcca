// Package sqltext looks at statement text the way the proxy needs to:
// it normalises a statement into a digest (literals replaced by ?,
// whitespace collapsed, keywords upper-cased) and classifies it for
// routing (read, write, transaction control, session state).
package sqltext

import (
	"strings"

	"github.com/certusdb/certus/internal/execcomment"
)

// tokKind is the kind of a lexical token.
type tokKind int

const (
	tokWord   tokKind = iota // keyword or identifier
	tokQuoted                // `quoted identifier`
	tokString                // 'string' or "string"
	tokNumber                // 123, 1.5e3, 0x1f, x'..', b'..'
	tokVar                   // @user or @@system variable
	tokParam                 // ? placeholder
	tokPunct                 // operator or punctuation
)

// token is one lexical token with its place in the text.
type token struct {
	kind       tokKind
	text       string
	start, end int
}

// upper returns the token's text in upper case (for words).
func (t token) upper() string { return strings.ToUpper(t.text) }

// lex splits q into tokens, skipping whitespace and comments. The text of
// an executable comment the nodes run (execcomment.Runs; not MariaDB's
// /*M! ... */) is read as SQL, as mysqldump writes `/*!40101 SET NAMES
// utf8mb4 */`. It never fails: an unterminated quote or comment runs to
// the end of the text.
func lex(q string) []token {
	var out []token
	i := 0
	n := len(q)
	inExec := false // inside an executable comment, whose */ is skipped
	for i < n {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#' || (c == '-' && i+2 <= n && strings.HasPrefix(q[i:], "--") && (i+2 == n || isSpace(q[i+2]))):
			for i < n && q[i] != '\n' {
				i++
			}
		case inExec && c == '*' && i+1 < n && q[i+1] == '/':
			inExec = false
			i += 2
		case c == '/' && i+2 < n && q[i+1] == '*' && q[i+2] == '!' && !inExec && execcomment.Runs(q[i+3:]):
			inExec = true
			i += 3
			if _, ok := execcomment.Version(q[i:]); ok {
				i += 5
			}
		case c == '/' && i+1 < n && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				i = n
			} else {
				i += end + 4
			}
		case c == '\'' || c == '"':
			j := scanQuoted(q, i, c)
			out = append(out, token{tokString, q[i:j], i, j})
			i = j
		case c == '`':
			j := scanQuoted(q, i, c)
			out = append(out, token{tokQuoted, q[i:j], i, j})
			i = j
		case (c == 'x' || c == 'X' || c == 'b' || c == 'B' || c == 'n' || c == 'N') && i+1 < n && q[i+1] == '\'':
			j := scanQuoted(q, i+1, '\'')
			kind := tokNumber
			if c == 'n' || c == 'N' {
				kind = tokString
			}
			out = append(out, token{kind, q[i:j], i, j})
			i = j
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(q[i+1])):
			j := scanNumber(q, i)
			out = append(out, token{tokNumber, q[i:j], i, j})
			i = j
		case c == '@':
			j := i + 1
			if j < n && q[j] == '@' {
				j++
			}
			if j < n && (q[j] == '`' || q[j] == '\'' || q[j] == '"') {
				j = scanQuoted(q, j, q[j])
			}
			for j < n && (isWordChar(q[j]) || q[j] == '.') {
				j++
			}
			out = append(out, token{tokVar, q[i:j], i, j})
			i = j
		case c == '?':
			out = append(out, token{tokParam, "?", i, i + 1})
			i++
		case isWordStart(c):
			j := i + 1
			for j < n && isWordChar(q[j]) {
				j++
			}
			out = append(out, token{tokWord, q[i:j], i, j})
			i = j
		default:
			j := i + 1
			if j < n && strings.Contains("<>=!|&:", string(c)) && strings.Contains("<>=|&", string(q[j])) {
				j++
				if j < n && c == '<' && q[j-1] == '=' && q[j] == '>' {
					j++
				}
			}
			out = append(out, token{tokPunct, q[i:j], i, j})
			i = j
		}
	}
	return out
}

func scanQuoted(q string, i int, quote byte) int {
	j := i + 1
	for j < len(q) {
		switch q[j] {
		case '\\':
			if quote != '`' {
				j += 2
				continue
			}
		case quote:
			if j+1 < len(q) && q[j+1] == quote {
				j += 2
				continue
			}
			return j + 1
		}
		j++
	}
	return len(q)
}

func scanNumber(q string, i int) int {
	j := i
	if j+1 < len(q) && q[j] == '0' && (q[j+1] == 'x' || q[j+1] == 'X' || q[j+1] == 'b' || q[j+1] == 'B') {
		j += 2
		for j < len(q) && isWordChar(q[j]) {
			j++
		}
		return j
	}
	for j < len(q) && (isDigit(q[j]) || q[j] == '.') {
		j++
	}
	if j < len(q) && (q[j] == 'e' || q[j] == 'E') {
		k := j + 1
		if k < len(q) && (q[k] == '+' || q[k] == '-') {
			k++
		}
		if k < len(q) && isDigit(q[k]) {
			j = k
			for j < len(q) && isDigit(q[j]) {
				j++
			}
		}
	}
	// an identifier that starts with digits (e.g. 1abc) is a word
	if j < len(q) && isWordStart(q[j]) {
		for j < len(q) && isWordChar(q[j]) {
			j++
		}
	}
	return j
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isWordStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}
func isWordChar(c byte) bool { return isWordStart(c) || isDigit(c) }
