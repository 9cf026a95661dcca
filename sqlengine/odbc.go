package sqlengine

import (
	"strings"

	"github.com/certusdb/certus/internal/sqllex"
)

// odbcEscapes rewrites ODBC's escape sequences, which MySQL's parser takes
// and go-mysql-server's refuses (1064), into what they stand for:
//
//	{fn f(...)}              f(...)
//	{d 'yyyy-mm-dd'}         DATE 'yyyy-mm-dd'
//	{t 'hh:mm:ss'}           TIME 'hh:mm:ss'
//	{ts 'yyyy-mm-dd ...'}    TIMESTAMP 'yyyy-mm-dd ...'
//	{oj t LEFT JOIN u ON c}  t LEFT JOIN u ON c
//
// They nest ({fn UCASE({fn LTRIM(s)})}); other braces are left alone.
func odbcEscapes(q string) string {
	// it runs on every statement: braces are rare outside strings
	if strings.IndexByte(q, '{') < 0 {
		return q
	}
	toks := sqllex.Lex(q)
	var b strings.Builder
	last := 0
	cut := func(from, to int, with string) {
		b.WriteString(q[last:from])
		b.WriteString(with)
		last = to
	}
	var open []bool // the braces open, innermost last: whether each is an escape
	for i, t := range toks {
		switch {
		case t.IsPunct("{"):
			if i+2 < len(toks) {
				if with, ok := odbcEscape(toks[i+1], toks[i+2]); ok {
					cut(t.Start, toks[i+2].Start, with)
					open = append(open, true)
					continue
				}
			}
			open = append(open, false)
		case t.IsPunct("}") && len(open) > 0:
			if open[len(open)-1] {
				cut(t.Start, t.End, "")
			}
			open = open[:len(open)-1]
		}
	}
	if last == 0 {
		return q
	}
	b.WriteString(q[last:])
	return b.String()
}

// odbcEscape is what the start of an escape, "{" then kw, becomes when
// next follows kw; ok is false when they start no escape.
func odbcEscape(kw, next sqllex.Token) (string, bool) {
	if kw.Kind != sqllex.Word {
		return "", false
	}
	switch kw.Upper() {
	case "FN", "OJ":
		return "", true
	case "D":
		return "DATE ", next.Kind == sqllex.String
	case "T":
		return "TIME ", next.Kind == sqllex.String
	case "TS":
		return "TIMESTAMP ", next.Kind == sqllex.String
	}
	return "", false
}
