package sqllex

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestLex runs testdata/lex: each case's input is one statement, and the
// output lists its tokens, one per line, as kind, text and (for a quote
// that never closes) "unterminated".
//
//	lex      all the tokens
//	words    what Word returns, in turn
//	comments the block comments BlockComments reports
//	unquote  Unquote of each line of the input
func TestLex(t *testing.T) {
	kinds := map[Kind]string{Word: "word", Ident: "ident", String: "string", Number: "number", Var: "var", Param: "param", Punct: "punct"}
	datadriven.RunTest(t, "testdata/lex", func(t *testing.T, d *datadriven.TestData) string {
		var b strings.Builder
		switch d.Cmd {
		case "lex":
			for _, tok := range Lex(d.Input) {
				if d.Input[tok.Start:tok.End] != tok.Text {
					t.Fatalf("%q at %d..%d", tok.Text, tok.Start, tok.End)
				}
				fmt.Fprintf(&b, "%s %s", kinds[tok.Kind], tok.Text)
				if tok.Unterminated() {
					b.WriteString(" unterminated")
				}
				b.WriteByte('\n')
			}
		case "words":
			s := NewScanner(d.Input)
			for w := s.Word(); w != ""; w = s.Word() {
				fmt.Fprintf(&b, "%s at %d\n", w, s.Pos())
			}
		case "comments":
			BlockComments(d.Input, func(start, end int) {
				fmt.Fprintf(&b, "%d..%d %s\n", start, end, d.Input[start:end])
			})
		case "unquote":
			for _, line := range strings.Split(d.Input, "\n") {
				fmt.Fprintf(&b, "%q\n", Unquote(line))
			}
		default:
			t.Fatalf("unknown command %s", d.Cmd)
		}
		return b.String()
	})
}

// FuzzLex checks that any text lexes without a panic, into tokens that
// follow one another inside it.
func FuzzLex(f *testing.F) {
	for _, s := range []string{"SELECT 1", "/*!40101 SET x=1*/", "'a\\", "`a``b`", "@@global.x:=1", "-- c\n#d\nx<=>y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		end := 0
		for _, tok := range Lex(q) {
			if tok.Start < end || tok.End <= tok.Start || tok.End > len(q) || q[tok.Start:tok.End] != tok.Text {
				t.Fatalf("token %+v after %d in %q", tok, end, q)
			}
			end = tok.End
		}
	})
}
