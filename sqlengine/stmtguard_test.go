package sqlengine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// codeOf is the MySQL code of err (0 for nil or another error).
func codeOf(err error) int {
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return se.Number()
	}
	return 0
}

func TestNestsDeeper(t *testing.T) {
	for _, tc := range []struct {
		q    string
		deep bool
	}{
		{"SELECT 1" + strings.Repeat("+1", maxExprDepth), true},
		{"SELECT 1" + strings.Repeat("+1", maxExprDepth-20), false},
		{"SELECT * FROM t WHERE " + strings.Repeat("NOT ", maxExprDepth) + "a", true},
		{"SELECT * FROM t WHERE a IN (1" + strings.Repeat(",1", 20*maxExprDepth) + ")", false},
	} {
		st, err := ast.Parse(tc.q)
		if err != nil {
			t.Fatalf("%.40s: %v", tc.q, err)
		}
		if got := nestsDeeper(st, maxExprDepth); got != tc.deep {
			t.Errorf("%.40s... (%d bytes): nestsDeeper = %v", tc.q, len(tc.q), got)
		}
	}
	// the guard refuses it before planning, with 1436
	deep := "SELECT 1" + strings.Repeat("+1", 100_000)
	st, err := ast.Parse(deep)
	if err != nil {
		t.Fatal(err)
	}
	var g stmtGuard
	if got := codeOf(g.check(nil, deep, st)); got != erStackOverrun {
		t.Fatalf("check of a deep statement: code %d", got)
	}
}

func TestInvalidIdentifier(t *testing.T) {
	for q, want := range map[string]int{
		"SELECT `a\xff` FROM t":     mysql.ERInvalidCharacterString,
		"SELECT a FROM `t\xc3\x28`": mysql.ERInvalidCharacterString,
		"SELECT '\xff' FROM t":      0, // a literal may hold any bytes
		"SELECT `café` FROM t":      0,
	} {
		st, err := ast.Parse(q)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if got := codeOf(invalidIdentifier(st)); got != want {
			t.Errorf("%q: code %d, want %d", q, got, want)
		}
	}
	if got := hexPrefix("ab\xff\xfe"); got != "FFFE" {
		t.Errorf("hexPrefix = %q", got)
	}
}

func TestMaxExecutionTimeHint(t *testing.T) {
	for q, want := range map[string]int64{
		"SELECT /*+ MAX_EXECUTION_TIME(1000) */ * FROM t":             1000,
		"select /*+ BKA(t) max_execution_time ( 5 ) */ 1":             5,
		"SELECT 1 /*+ MAX_EXECUTION_TIME(1000) */":                    -1, // not right after SELECT
		"SELECT * FROM t WHERE c = '/*+ MAX_EXECUTION_TIME(1000) */'": -1,
		"SELECT /*+ MAX_EXECUTION_TIME(x) */ 1":                       -1,
	} {
		got, ok := maxExecutionTimeHint(q)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("%q: %d, want %d", q, got, want)
		}
	}
}

func TestEmbeddedSQLError(t *testing.T) {
	inner := mysql.NewSQLError(1045, "28000", "Access denied for user 'u'@'%%' (using password: YES)")
	se := fixState(mysql.NewSQLError(mysql.ERUnknownError, mysql.SSUnknownSQLState, "%s", inner.Error()))
	if se.Number() != 1045 || se.SQLState() != "28000" || se.Message != inner.Message {
		t.Fatalf("recovered %d %s %q", se.Number(), se.SQLState(), se.Message)
	}
	for msg, code := range map[string]int{"context canceled": mysql.ERQueryInterrupted, "context deadline exceeded": mysql.ERQueryTimeout} {
		if got := fixState(mysql.NewSQLError(mysql.ERUnknownError, mysql.SSUnknownSQLState, "%s", msg)).Number(); got != code {
			t.Errorf("%s: %d, want %d", msg, got, code)
		}
	}
}

func TestFileAccess(t *testing.T) {
	root := t.TempDir()
	data, files := filepath.Join(root, "data"), filepath.Join(root, "data", "files")
	if err := os.MkdirAll(files, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := NewFileAccess(data, data); err == nil {
		t.Fatal("secure_file_priv may be the data directory")
	}
	if _, err := NewFileAccess(root, data); err == nil {
		t.Fatal("secure_file_priv may hold the data directory")
	}
	fa, err := NewFileAccess(files, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"in.txt", "sub/in.txt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(files, name)), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(files, name), []byte("x"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(data, "LOCK"), filepath.Join(files, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "LOCK"), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		create bool
		code   int // 0: allowed
	}{
		{"in.txt", false, 0},
		{filepath.Join(files, "sub", "in.txt"), false, 0},
		{"../LOCK", false, mysql.EROptionPreventsStatement},
		{filepath.Join(data, "LOCK"), false, mysql.EROptionPreventsStatement},
		{"out", false, mysql.EROptionPreventsStatement}, // a link out
		{"/etc/passwd", false, mysql.EROptionPreventsStatement},
		{".", false, mysql.EROptionPreventsStatement},
		{"new.txt", true, 0},
		{"in.txt", true, mysql.ERFileExists},
		{"../new.txt", true, mysql.EROptionPreventsStatement},
		{"missing/new.txt", true, mysql.EROptionPreventsStatement},
	} {
		_, err := fa.resolve(tc.name, tc.create)
		if got := codeOf(err); got != tc.code {
			t.Errorf("resolve(%q, %v): code %d (%v), want %d", tc.name, tc.create, got, err, tc.code)
		}
	}
	var none *FileAccess
	if _, err := none.resolve("in.txt", false); codeOf(err) != mysql.EROptionPreventsStatement {
		t.Error("no secure_file_priv let a file be read")
	}
}
