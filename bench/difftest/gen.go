// Package difftest runs the same generated SQL on Certus and on a
// reference server (the anchors' plain MariaDB) and compares what each
// answers: result values, column types, error codes, warnings and
// affected rows. A seed reproduces a run; a difference is reduced to a
// smaller statement that still differs (minimize.go). See DESIGN.md.
package difftest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// expr is a generated SQL expression: a literal (kids nil, text the
// literal) or an operator applied to kids, rendered by form.
type expr struct {
	text string
	form func(kids []string) string
	kids []*expr
}

func (e *expr) String() string {
	if e.form == nil {
		return e.text
	}
	k := make([]string, len(e.kids))
	for i, c := range e.kids {
		k[i] = c.String()
	}
	return e.form(k)
}

// literals are the edge values applications meet: NULL, zero, signs,
// limits of the integer types, fractions, strings that are numbers only
// in part, zero and invalid dates, times with blanks, binary strings.
var literals = []string{
	"NULL", "0", "1", "-1", "2", "10", "255", "-128", "127", "65535",
	"2147483647", "-2147483648", "4294967295", "9223372036854775807", "-9223372036854775808",
	"18446744073709551615", "18446744073709551616", "0.5", "-0.5", "1.5", "2.5", "-2.5",
	"3.14159", "1e3", "1.5e-3", "-0.0", "0.1", "123456789.123456789",
	"''", "' '", "'a'", "'abc'", "'ABC'", "'1x'", "'x1'", "' 12 '", "'1e2'", "'-0.1'", "'0x10'",
	"'2012-00-00'", "'2012-02-30'", "'0000-00-00'", "'2024-02-29'", "'1999-12-31 23:59:59'",
	"'2038-01-19 03:14:07'", "'9999-12-31 23:59:59'", "'01:02:03 '", "'838:59:59'", "'-01:00:00'",
	"'12:61:00'", "20000318160952", "19971020", "X'41'", "X''", "b'101'", "'%'", "'_a%'",
	"'héllo'", "'ß'", "TRUE", "FALSE",
}

// function is a built-in function and how many arguments it takes.
type function struct {
	name     string
	min, max int
}

// functions are MySQL's built-ins that MySQL 8.0 and MariaDB 10.11 both
// have, with the same meaning.
var functions = []function{
	{"ABS", 1, 1}, {"CEIL", 1, 1}, {"FLOOR", 1, 1}, {"ROUND", 1, 2}, {"TRUNCATE", 2, 2},
	{"MOD", 2, 2}, {"SIGN", 1, 1}, {"SQRT", 1, 1}, {"POW", 2, 2}, {"LN", 1, 1}, {"LOG10", 1, 1},
	{"EXP", 1, 1}, {"GREATEST", 2, 3}, {"LEAST", 2, 3}, {"CONV", 3, 3}, {"BIN", 1, 1},
	{"OCT", 1, 1}, {"HEX", 1, 1}, {"UNHEX", 1, 1},
	{"CONCAT", 1, 3}, {"CONCAT_WS", 2, 4}, {"LENGTH", 1, 1}, {"CHAR_LENGTH", 1, 1},
	{"UPPER", 1, 1}, {"LOWER", 1, 1}, {"SUBSTRING", 2, 3}, {"LEFT", 2, 2}, {"RIGHT", 2, 2},
	{"TRIM", 1, 1}, {"LTRIM", 1, 1}, {"RTRIM", 1, 1}, {"LPAD", 3, 3}, {"RPAD", 3, 3},
	{"REPLACE", 3, 3}, {"REVERSE", 1, 1}, {"LOCATE", 2, 3}, {"INSTR", 2, 2}, {"REPEAT", 2, 2},
	{"SPACE", 1, 1}, {"ASCII", 1, 1}, {"ORD", 1, 1}, {"STRCMP", 2, 2}, {"FIELD", 2, 4},
	{"ELT", 2, 4}, {"FIND_IN_SET", 2, 2}, {"QUOTE", 1, 1},
	{"IF", 3, 3}, {"IFNULL", 2, 2}, {"NULLIF", 2, 2}, {"COALESCE", 1, 3}, {"ISNULL", 1, 1},
	{"DATEDIFF", 2, 2}, {"YEAR", 1, 1}, {"MONTH", 1, 1}, {"DAY", 1, 1}, {"DAYOFWEEK", 1, 1},
	{"DAYOFYEAR", 1, 1}, {"HOUR", 1, 1}, {"MINUTE", 1, 1}, {"SECOND", 1, 1}, {"LAST_DAY", 1, 1},
	{"TO_DAYS", 1, 1}, {"FROM_DAYS", 1, 1}, {"DATE", 1, 1}, {"TIME", 1, 1}, {"TIMESTAMP", 1, 1},
	{"ADDTIME", 2, 2}, {"SUBTIME", 2, 2}, {"TIMEDIFF", 2, 2}, {"TIME_TO_SEC", 1, 1},
	{"SEC_TO_TIME", 1, 1}, {"MAKEDATE", 2, 2}, {"WEEKDAY", 1, 1}, {"QUARTER", 1, 1},
}

// binaryOps are MySQL's binary operators.
var binaryOps = []string{"+", "-", "*", "/", "DIV", "%", "=", "<>", "<", "<=", ">", ">=", "<=>",
	"AND", "OR", "XOR", "&", "|", "^", "<<", ">>", "LIKE", "REGEXP"}

// castTypes are the targets of CAST.
var castTypes = []string{"SIGNED", "UNSIGNED", "DECIMAL(10,2)", "DECIMAL(5,0)", "CHAR", "CHAR(3)",
	"BINARY", "DATE", "DATETIME", "TIME", "DOUBLE"}

// gen generates statements from a seed.
type gen struct {
	r *rand.Rand
}

func newGen(seed uint64) *gen { return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g *gen) pick(list []string) string { return list[g.r.IntN(len(list))] }

func lit(s string) *expr { return &expr{text: s} }

// expr returns an expression at most depth operators deep.
func (g *gen) expr(depth int) *expr {
	if depth == 0 || g.r.IntN(4) == 0 {
		return lit(g.pick(literals))
	}
	d := depth - 1
	switch g.r.IntN(10) {
	case 0, 1, 2, 3:
		f := functions[g.r.IntN(len(functions))]
		n := f.min + g.r.IntN(f.max-f.min+1)
		kids := make([]*expr, n)
		for i := range kids {
			kids[i] = g.expr(d)
		}
		return &expr{form: func(k []string) string { return f.name + "(" + strings.Join(k, ", ") + ")" }, kids: kids}
	case 4, 5, 6:
		op := g.pick(binaryOps)
		return &expr{form: func(k []string) string { return "(" + k[0] + " " + op + " " + k[1] + ")" }, kids: []*expr{g.expr(d), g.expr(d)}}
	case 7:
		t := g.pick(castTypes)
		return &expr{form: func(k []string) string { return "CAST(" + k[0] + " AS " + t + ")" }, kids: []*expr{g.expr(d)}}
	case 8:
		switch g.r.IntN(4) {
		case 0:
			return &expr{form: func(k []string) string { return "(" + k[0] + " BETWEEN " + k[1] + " AND " + k[2] + ")" }, kids: []*expr{g.expr(d), g.expr(d), g.expr(d)}}
		case 1:
			return &expr{form: func(k []string) string { return "(" + k[0] + " IN (" + k[1] + ", " + k[2] + "))" }, kids: []*expr{g.expr(d), g.expr(d), g.expr(d)}}
		case 2:
			return &expr{form: func(k []string) string { return "(" + k[0] + " IS NULL)" }, kids: []*expr{g.expr(d)}}
		default:
			return &expr{form: func(k []string) string { return "(NOT " + k[0] + ")" }, kids: []*expr{g.expr(d)}}
		}
	default:
		unit := g.pick([]string{"DAY", "MONTH", "YEAR", "HOUR", "MINUTE", "SECOND"})
		return &expr{form: func(k []string) string { return "DATE_ADD(" + k[0] + ", INTERVAL " + k[1] + " " + unit + ")" }, kids: []*expr{g.expr(d), g.expr(d)}}
	}
}

// column types of the values class, each with the sql_modes it runs in.
var columnTypes = []string{
	"TINYINT", "TINYINT UNSIGNED", "SMALLINT", "INT", "INT UNSIGNED", "BIGINT", "BIGINT UNSIGNED",
	"DECIMAL(5,2)", "DECIMAL(20,0)", "FLOAT", "DOUBLE", "BIT(2)", "CHAR(3)", "VARCHAR(5)",
	"BINARY(3)", "VARBINARY(5)", "TEXT", "DATE", "DATETIME", "TIMESTAMP NULL", "TIME", "YEAR",
	"ENUM('a','b')", "SET('a','b')",
}

// sqlModes are the modes statements run in: MySQL 8.0's default, strict
// without the zero-date rules, and not strict.
var sqlModes = []string{
	"STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION",
	"STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION",
	"NO_ENGINE_SUBSTITUTION",
}

// Case is one generated test: statements run in order on a fresh
// session (in sql_mode Mode) whose answers are compared, after Setup,
// whose answers are not.
type Case struct {
	Class string
	Mode  string
	Setup []string
	Stmts []string
	// root is the expression the statements were made from, for the
	// minimizer (nil: the case is not reduced)
	root *expr
	make func(*expr) []string
}

// Classes are the generated classes, by name.
var Classes = []string{"expr", "values"}

// next generates the class's next case.
func (g *gen) next(class string) Case {
	mode := g.pick(sqlModes)
	switch class {
	case "expr":
		e := g.expr(1 + g.r.IntN(3))
		mk := func(e *expr) []string { return []string{"SELECT " + e.String()} }
		return Case{Class: class, Mode: mode, Stmts: mk(e), root: e, make: mk}
	case "values":
		typ := g.pick(columnTypes)
		e := g.expr(g.r.IntN(2))
		mk := func(e *expr) []string {
			return []string{
				"INSERT INTO t (v) VALUES (" + e.String() + ")",
				"UPDATE t SET v = " + e.String() + " WHERE id = 1",
				"SELECT v FROM t ORDER BY id",
			}
		}
		return Case{Class: class, Mode: mode,
			Setup: []string{"DROP TABLE IF EXISTS t", fmt.Sprintf("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v %s)", typ), "INSERT INTO t (v) VALUES (NULL)"},
			Stmts: mk(e), root: e, make: mk}
	}
	panic("difftest: no class " + class)
}
