package sqlengine

import (
	"runtime/debug"
	"testing"
)

// FuzzRewriteText feeds the text rewrites every text statement goes
// through (rewriteText's chain), the statement classifier and the
// empty-query check with any text. Properties: versionComments only
// blanks bytes; every rewrite keeps the text's length within a linear
// bound of its input's, and all but generatedParens are idempotent; blanks before a statement change
// neither its classification nor whether it is empty.
func FuzzRewriteText(f *testing.F) {
	for _, q := range []string{
		"SELECT c FROM sbtest1 WHERE id=5",
		"/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;",
		"/*M!999999\\- enable the sandbox mode */",
		"/*!99999 SELECT 1 */ SELECT 2",
		"SET GLOBAL wsrep_reject_queries = ALL",
		"/*!40101 set @@character_set_database=binary */",
		"SELECT * FROM t FORCE INDEX (PRIMARY) WHERE id > 1",
		"SELECT * FROM t USE INDEX () IGNORE KEY FOR ORDER BY (k)",
		"SELECT @r := @r + 1 AS rank, name FROM t, (SELECT @r := 0) init ORDER BY score",
		"UPDATE t SET pos = @n := @n + 1 ORDER BY id",
		"CREATE TABLE g (a INT, b INT AS (a + 1) STORED, c INT GENERATED ALWAYS AS (a * 2) VIRTUAL)",
		"FLUSH LOCAL TABLES",
		"FLUSH /*!40101 NO_WRITE_TO_BINLOG */ LOGS",
		"CREATE TABLE t2 AS (SELECT * FROM t1)",
		"CREATE TABLE t3 (SELECT a FROM t1) ",
		"SELECT a, b, SUM(c) FROM t GROUP BY a, b WITH ROLLUP",
		"SELECT a, COUNT(*) FROM t WHERE x > 'WITH ROLLUP' GROUP BY a WITH ROLLUP ORDER BY a DESC LIMIT 3; SELECT 1",
		"SELECT * FROM t FOR UPDATE",
		"SHOW ENGINE INNODB STATUS",
		"  -- comment\n /* c */ ;",
		"# c\n",
		"SELECT 'it''s /*!50000 a */' /* x */, `id`",
	} {
		f.Add(q)
	}
	rewrites := append([]textRewrite(nil), textRewrites...)
	rewrites = append(rewrites, []textRewrite{
		{"rollup", func(q string) string {
			if r, ok := rollupRewrite(q); ok {
				return r
			}
			return q
		}, true},
		{"rewriteText", func(q string) string { r, _ := rewriteText(q, true); return r }, false},
	}...)
	f.Fuzz(func(t *testing.T, q string) {
		// a panic fails this input, not the package's test binary, so
		// sqlengine's other tests still run while a seed here fails
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%q: panic: %v\n%s", q, r, debug.Stack())
			}
		}()
		out, skipped := versionComments(q)
		if len(out) != len(q) || out != q && !skipped {
			t.Fatalf("versionComments(%q) = %q, %v", q, out, skipped)
		}
		for i := range len(q) {
			if out[i] != q[i] && out[i] != ' ' {
				t.Fatalf("versionComments(%q) = %q: byte %d changed to %q", q, out, i, out[i])
			}
		}
		for _, r := range rewrites {
			once := r.fn(q)
			// a ROLLUP repeats the statement once per group column, up to
			// maxRollupText; the other rewrites add a few bytes at most
			rollup := r.name == "rollup" || r.name == "rewriteText"
			if len(once) > 16*len(q)+256 && (!rollup || len(once) > maxRollupText+len(q)) {
				t.Fatalf("%s made %d bytes of %d: %q", r.name, len(once), len(q), q)
			}
			if twice := r.fn(once); r.idempotent && twice != once {
				t.Fatalf("%s is not idempotent:\n%q\n-> %q\n-> %q", r.name, q, once, twice)
			}
		}
		blanked := " \n\t" + q
		if a, b := describe(inspect(q)), describe(inspect(blanked)); a != b {
			t.Fatalf("inspect(%q) = %s, with blanks before it %s", q, a, b)
		}
		if isEmptyQuery(q) != isEmptyQuery(blanked) || isEmptyQuery(q) && !isEmptyQuery(q+";\n") {
			t.Fatalf("isEmptyQuery(%q) changes with blanks or a semicolon around it", q)
		}
	})
}
