// Package sqllex is the one tokenizer of SQL text in Certus: the node's
// statement rewrites and classifiers, the fast path's recogniser and the
// proxy's classifier and digest all read statements through it, so that
// they agree on where a string, a comment or an executable comment ends.
//
// It never fails: an unterminated quote or comment runs to the end of the
// text. The text of an executable comment a node runs (/*! ... */, or
// /*!NNNNN ... */ up to execcomment.VersionID; not MariaDB's /*M! ... */)
// is read as SQL, as the nodes execute it.
package sqllex

import (
	"strings"

	"github.com/certusdb/certus/internal/execcomment"
)

// Kind is the kind of a token.
type Kind uint8

const (
	EOF    Kind = iota // the end of the text
	Word               // keyword or identifier (1abc is one too)
	Ident              // `quoted identifier`
	String             // 'string', "string", N'string'
	Number             // 123, 1.5e3, .5, 0x1f, X'1f', b'01'
	Var                // @user or @@system variable (@@global.x, @`a b`)
	Param              // ? placeholder
	Punct              // operator or punctuation; := <= >= <> != <=> || && << >> are one token
)

// Token is one token and its bytes in the text.
type Token struct {
	Kind       Kind
	Text       string
	Start, End int
}

// Upper is the token's text in upper case.
func (t Token) Upper() string { return Upper(t.Text) }

// Is reports whether the token is the word w (w in upper case).
func (t Token) Is(w string) bool { return t.Kind == Word && strings.EqualFold(t.Text, w) }

// IsPunct reports whether the token is the punctuation p.
func (t Token) IsPunct(p string) bool { return t.Kind == Punct && t.Text == p }

// Unterminated reports whether the token is a quoted string, identifier
// or variable name that the text never closes.
func (t Token) Unterminated() bool {
	i := strings.IndexAny(t.Text, "'\"`")
	if i < 0 || t.Kind != String && t.Kind != Ident && t.Kind != Var && t.Kind != Number {
		return false
	}
	end, closed := scanQuoted(t.Text, i, t.Text[i])
	return !closed || end != len(t.Text)
}

// Scanner reads the tokens of a text one at a time, without allocating.
type Scanner struct {
	src    string
	pos    int
	inExec bool // inside an executable comment, whose */ is skipped
	// onComment, if set, is told of each block comment skipped
	onComment func(start, end int)
}

// NewScanner returns a scanner at the start of q.
func NewScanner(q string) Scanner { return Scanner{src: q} }

// Pos is the offset just after the last token read.
func (s *Scanner) Pos() int { return s.pos }

// Next returns the next token, or one of Kind EOF at the end.
func (s *Scanner) Next() Token {
	q, n := s.src, len(s.src)
	for s.pos < n {
		i := s.pos
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			s.pos++
		case c == '#' || c == '-' && i+1 < n && q[i+1] == '-' && (i+2 == n || isSpace(q[i+2])):
			for s.pos < n && q[s.pos] != '\n' {
				s.pos++
			}
		case s.inExec && c == '*' && i+1 < n && q[i+1] == '/':
			s.inExec = false
			s.pos += 2
		case c == '/' && i+2 < n && q[i+1] == '*' && q[i+2] == '!' && !s.inExec && execcomment.Runs(q[i+3:]):
			s.inExec = true
			s.pos += 3
			if _, ok := execcomment.Version(q[s.pos:]); ok {
				s.pos += 5
			}
		case c == '/' && i+1 < n && q[i+1] == '*':
			if end := strings.Index(q[i+2:], "*/"); end < 0 {
				s.pos = n
			} else {
				s.pos = i + end + 4
			}
			if s.onComment != nil {
				s.onComment(i, s.pos)
			}
		default:
			kind, end := scanToken(q, i)
			s.pos = end
			return Token{kind, q[i:end], i, end}
		}
	}
	return Token{Kind: EOF, Start: n, End: n}
}

// Word returns the next word in upper case, skipping every other token;
// "" at the end.
func (s *Scanner) Word() string {
	for {
		switch t := s.Next(); t.Kind {
		case Word:
			return t.Upper()
		case EOF:
			return ""
		}
	}
}

// BlockComments calls fn with the bytes of each /* ... */ comment of q,
// in order, that is skipped as a comment: an executable comment the nodes
// run is SQL, not a comment.
func BlockComments(q string, fn func(start, end int)) {
	s := Scanner{src: q, onComment: fn}
	for s.Next().Kind != EOF {
	}
}

// Lex returns all the tokens of q.
func Lex(q string) []Token {
	var out []Token
	s := Scanner{src: q}
	for t := s.Next(); t.Kind != EOF; t = s.Next() {
		out = append(out, t)
	}
	return out
}

// scanToken reads the token that starts at q[i] (not a blank or comment).
func scanToken(q string, i int) (Kind, int) {
	n := len(q)
	c := q[i]
	switch {
	case c == '\'' || c == '"':
		end, _ := scanQuoted(q, i, c)
		return String, end
	case c == '`':
		end, _ := scanQuoted(q, i, c)
		return Ident, end
	case (c == 'x' || c == 'X' || c == 'b' || c == 'B' || c == 'n' || c == 'N') && i+1 < n && q[i+1] == '\'':
		end, _ := scanQuoted(q, i+1, '\'')
		if c == 'n' || c == 'N' {
			return String, end
		}
		return Number, end
	case IsDigit(c) || c == '.' && i+1 < n && IsDigit(q[i+1]):
		return scanNumber(q, i)
	case c == '@':
		j := i + 1
		if j < n && q[j] == '@' {
			j++
		}
		if j < n && (q[j] == '`' || q[j] == '\'' || q[j] == '"') {
			j, _ = scanQuoted(q, j, q[j])
		}
		for j < n && (IsWordChar(q[j]) || q[j] == '.') {
			j++
		}
		return Var, j
	case c == '?':
		return Param, i + 1
	case IsWordStart(c):
		j := i + 1
		for j < n && IsWordChar(q[j]) {
			j++
		}
		return Word, j
	}
	j := i + 1
	if j < n && strings.IndexByte("<>=!|&:", c) >= 0 && strings.IndexByte("<>=|&", q[j]) >= 0 {
		j++
		if j < n && c == '<' && q[j-1] == '=' && q[j] == '>' {
			j++
		}
	}
	return Punct, j
}

// scanQuoted returns the end of the quoted text that starts at q[i] with
// the quote quote (a backslash escapes in strings, not in identifiers; a
// doubled quote stands for itself), and whether the text closes.
func scanQuoted(q string, i int, quote byte) (end int, closed bool) {
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
			return j + 1, true
		}
		j++
	}
	return len(q), false
}

// scanNumber reads the number that starts at q[i]; digits followed by
// letters are a word, as MySQL reads 1abc as an identifier.
func scanNumber(q string, i int) (Kind, int) {
	j := i
	if j+1 < len(q) && q[j] == '0' && (q[j+1] == 'x' || q[j+1] == 'X' || q[j+1] == 'b' || q[j+1] == 'B') {
		j += 2
		for j < len(q) && IsWordChar(q[j]) {
			j++
		}
		return Number, j
	}
	dot := false
	for j < len(q) && (IsDigit(q[j]) || q[j] == '.') {
		dot = dot || q[j] == '.'
		j++
	}
	if j < len(q) && (q[j] == 'e' || q[j] == 'E') {
		k := j + 1
		if k < len(q) && (q[k] == '+' || q[k] == '-') {
			k++
		}
		if k < len(q) && IsDigit(q[k]) {
			for j = k; j < len(q) && IsDigit(q[j]); j++ {
			}
			return Number, j
		}
	}
	if j < len(q) && IsWordStart(q[j]) {
		for j < len(q) && IsWordChar(q[j]) {
			j++
		}
		if !dot {
			return Word, j
		}
	}
	return Number, j
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// IsDigit reports whether c is an ASCII digit.
func IsDigit(c byte) bool { return c >= '0' && c <= '9' }

// IsWordStart reports whether a word may start with c (a byte of a UTF-8
// letter included).
func IsWordStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// IsWordChar reports whether c may continue a word.
func IsWordChar(c byte) bool { return IsWordStart(c) || IsDigit(c) }

// Upper returns s with its ASCII letters in upper case, without
// allocating when there are none in lower case.
func Upper(s string) string {
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

// Unquote returns a quoted string's or identifier's value: a backquoted
// identifier without its quotes and doubled backquotes, a string literal
// with its escapes and doubled quotes undone as MySQL does (\% and \_ stay
// as written, for LIKE). Other text, and text whose quote does not
// close, is returned as it is.
func Unquote(s string) string {
	if len(s) < 2 || s[len(s)-1] != s[0] {
		return s
	}
	switch q := s[0]; q {
	case '`':
		return strings.ReplaceAll(s[1:len(s)-1], "``", "`")
	case '\'', '"':
		return unescape(s[1:len(s)-1], q)
	}
	return s
}

// unescape undoes a string literal's escapes and doubled quotes q.
func unescape(s string, q byte) string {
	if strings.IndexByte(s, '\\') < 0 && strings.IndexByte(s, q) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			case '0':
				b.WriteByte(0)
			case 'Z':
				b.WriteByte(0x1a)
			case '%', '_':
				b.WriteByte('\\')
				b.WriteByte(e)
			default:
				b.WriteByte(e)
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

// ContainsFold reports whether s contains the ASCII word w in any case,
// without allocating (it runs on every text statement).
func ContainsFold(s, w string) bool { return IndexFold(s, w) >= 0 }

// IndexFold is the index of the first ASCII word w in s, in any case, or
// -1.
func IndexFold(s, w string) int {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i]|0x20 == w[0]|0x20 && strings.EqualFold(s[i:i+len(w)], w) {
			return i
		}
	}
	return -1
}
