package mysqlexpr

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	gmsjson "github.com/dolthub/go-mysql-server/sql/expression/function/json"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
)

// TestJSONExtractPaths runs the cases of testdata/jsonpath.txt through
// jsonExtract, the document given as text.
func TestJSONExtractPaths(t *testing.T) {
	f, err := os.Open("testdata/jsonpath.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := sql.NewEmptyContext()
	s := bufio.NewScanner(f)
	for line := 0; s.Scan(); {
		line++
		text := strings.TrimSpace(s.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		call, want, ok := strings.Cut(text, " => ")
		doc, paths, ok2 := strings.Cut(call, " ")
		if !ok || !ok2 {
			t.Fatalf("jsonpath.txt:%d: want `doc path[ | path...] => result`", line)
		}
		args := []sql.Expression{expression.NewLiteral(doc, types.LongText)}
		for _, p := range strings.Split(paths, " | ") {
			args = append(args, expression.NewLiteral(p, types.LongText))
		}
		inner, err := gmsjson.NewJSONExtract(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		v, err := (&jsonExtract{inner.(*gmsjson.JSONExtract)}).Eval(ctx, nil)
		var got string
		switch {
		case err != nil:
			got = err.Error()
			if se, ok := err.(*mysql.SQLError); ok {
				if se.Num != 3143 || se.State != "42000" {
					t.Errorf("jsonpath.txt:%d: %s: error %d (%s), want 3143 (42000)", line, call, se.Num, se.State)
				}
				got = se.Message
			}
		case v == nil:
			got = "NULL"
		default:
			got = v.(types.JSONDocument).String()
		}
		if got != want {
			t.Errorf("jsonpath.txt:%d: JSON_EXTRACT(%s, %s) = %s, want %s", line, doc, paths, got, want)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}
