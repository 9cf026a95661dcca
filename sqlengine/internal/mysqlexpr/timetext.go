package mysqlexpr

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/certusdb/certus/sqlengine/internal/treewalk"
)

// A TIME value read as a string is its text, 'hh:mm:ss[.ffffff]', in
// MySQL. go-mysql-server has no conversion of its TIME values to strings:
// CONCAT(t, ...), LENGTH, UPPER, SUBSTRING, LIKE and the rest failed with
// 1105 "incompatible conversion to SQL type: '10:00:00'->longtext", and
// CAST(t AS CHAR) silently gave NULL. The functions and operators that
// read their arguments as strings get a TIME argument's text instead
// (TimeAsTextRule), as timedisplay.go prints it: a zero fraction left out.
//
// DATE, DATETIME, TIMESTAMP and YEAR values read as strings had the same
// trouble in other forms: go-mysql-server converts the time.Time of a DATE
// column as a DATETIME, so CONCAT(d, ''), LENGTH(d), CAST(d AS CHAR) and
// `d LIKE '2024-01-05'` saw '2024-01-05 00:00:00' (LIKE was false), and
// SUBSTRING(d, 1, 4), MID and REVERSE, typed as their argument, failed
// with 1105 "Incorrect datetime value: '2024'". They get their text as
// MySQL writes it too: 'YYYY-MM-DD', the column's own number of fraction
// digits for DATETIME and TIMESTAMP. The string functions get it when
// they are built (textArgs), so a function typed as its argument is typed
// as text, whatever path the query takes.

// textFuncs are the functions that read their arguments as strings.
var textFuncs = map[string]bool{
	"concat": true, "concat_ws": true, "length": true, "char_length": true, "character_length": true,
	"octet_length": true, "bit_length": true, "upper": true, "ucase": true, "lower": true, "lcase": true,
	"substring": true, "substr": true, "mid": true, "substring_index": true, "left": true, "right": true,
	"replace": true, "trim": true, "ltrim": true, "rtrim": true, "lpad": true, "rpad": true,
	"instr": true, "locate": true, "position": true, "reverse": true, "repeat": true, "insert": true,
	"strcmp": true, "field": true, "find_in_set": true, "ascii": true, "ord": true, "hex": true,
	"md5": true, "sha": true, "sha1": true, "sha2": true, "crc32": true, "to_base64": true,
	"quote": true, "soundex": true, "group_concat": true, "elt": true,
	"regexp_like": true, "regexp_instr": true, "regexp_replace": true, "regexp_substr": true,
}

// readsText reports whether e reads its arguments as strings.
func readsText(ctx *sql.Context, e sql.Expression) bool {
	switch e := e.(type) {
	case *expression.Like:
		return true
	case *expression.Convert:
		t := e.Type(ctx)
		return (types.IsText(t) || types.IsBinaryType(t)) && !types.IsJSON(t)
	case sql.FunctionExpression:
		return textFuncs[e.FunctionName()]
	}
	return false
}

// TimeAsTextRule is the analyzer rule applying wrapTimeArgs to every
// expression of the plan, subqueries included. It runs after analysis,
// when the result's schema is derived from the expressions, so a
// SUBSTRING(t, 1, 2) is typed as the string it gives (not as t's TIME).
// go-mysql-server skips the rules after analysis for a single-table
// SELECT without subqueries; the exec builder applies timeAsText to what it
// builds instead (ExprRewrites). It cannot retype the result there, which
// the string functions do not need: they read the text from the moment
// they are built (textArgs). What is left here is what the parser builds
// itself: LIKE, CAST and TRIM.
func TimeAsTextRule(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	return treewalk.Exprs(ctx, n, wrapTimeArgs)
}

// timeAsText applies wrapTimeArgs to e and everything in it, except to
// an expression typed TIME itself (see TimeAsTextRule) other than TRIM:
// the parser builds TRIM itself, so textArgs does not see it, and
// go-mysql-server's panics on a TIME; its text trimmed reads as a TIME.
func timeAsText(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	return transform.Expr(ctx, e, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if _, trim := e.(*function.Trim); !trim && types.IsTimespan(e.Type(ctx)) {
			return e, transform.SameTree, nil
		}
		return wrapTimeArgs(ctx, e)
	})
}

// wrapTimeArgs wraps the temporal arguments of e, if e is one of the
// string functions and operators (see above) or a CASE typed as a string
// (caseAsText), or its DATE, DATETIME and TIMESTAMP arguments if e reads
// its arguments as numbers (timeNumber).
func wrapTimeArgs(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	if c, ok := e.(*expression.Case); ok {
		return caseAsText(ctx, c)
	}
	var out []sql.Expression
	var wrapped bool
	switch {
	case readsText(ctx, e):
		out, wrapped = textArgs(ctx, e.Children())
	case readsNumber(ctx, e):
		out, wrapped = numberArgs(ctx, e.Children())
	}
	if !wrapped {
		return e, transform.SameTree, nil
	}
	n, err := e.WithChildren(ctx, out...)
	if err != nil {
		return nil, transform.SameTree, err
	}
	return n, transform.NewTree, nil
}

// textArgs returns args with every temporal one read as its text
// (timeText); wrapped reports whether there was one.
func textArgs(ctx *sql.Context, args []sql.Expression) (out []sql.Expression, wrapped bool) {
	return wrapArgs(ctx, args, func(a sql.Expression, t sql.Type) sql.Expression {
		if !hasText(t) { // HEX(*) is an error later
			return nil
		}
		return &timeText{UnaryExpressionStub: expression.UnaryExpressionStub{Child: a}, typ: t}
	})
}

// wrapArgs returns args with each resolved one that wrap (given it and its
// type) wraps replaced by the wrapper, and args itself when wrap wraps
// none (wrapped false).
func wrapArgs(ctx *sql.Context, args []sql.Expression, wrap func(sql.Expression, sql.Type) sql.Expression) (out []sql.Expression, wrapped bool) {
	out = args
	for i, a := range args {
		if !a.Resolved() {
			continue
		}
		w := wrap(a, a.Type(ctx))
		if w == nil {
			continue
		}
		if !wrapped {
			out, wrapped = append([]sql.Expression(nil), args...), true
		}
		out[i] = w
	}
	return out, wrapped
}

// hasText reports whether values of t are read as strings through
// timeText: TIME, DATE, DATETIME, TIMESTAMP and YEAR.
func hasText(t sql.Type) bool {
	_, datetime := t.(sql.DatetimeType)
	return datetime || types.IsTimespan(t) || types.IsYear(t)
}

// wrapTextFuncs reads temporal arguments of string functions as text.
func wrapTextFuncs() {
	// the string functions read their temporal arguments as text from the
	// moment they are built (see above)
	wraps := map[string]BuiltInWrap{}
	for name := range textFuncs {
		wraps[name] = func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
			out, _ := textArgs(ctx, args)
			return inner.NewInstance(ctx, out)
		}
	}
	// IFNULL(d, 'none'), COALESCE and IF of a temporal value and a string
	// are strings: their temporal arguments are read as text too (not
	// IF's condition)
	for _, name := range []string{"ifnull", "coalesce", "if"} {
		from := 0
		if name == "if" {
			from = 1
		}
		wraps[name] = func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
			e, err := inner.NewInstance(ctx, args)
			if err != nil || !e.Resolved() || len(args) <= from {
				return e, err
			}
			if r := ownPrecision(ctx, e, args[from:]); r != e || !types.IsText(e.Type(ctx)) {
				return r, nil
			}
			out, wrapped := textArgs(ctx, args[from:])
			if !wrapped {
				return e, nil
			}
			return inner.NewInstance(ctx, append(slices.Clone(args[:from]), out...))
		}
	}
	// GREATEST and LEAST of temporal values and strings compare strings
	// (MySQL: "if any argument is a nonbinary string, the arguments are
	// compared as nonbinary strings"); go-mysql-server typed the mix as
	// a number and answered 0 for GREATEST(d, '2024-01-01')
	for _, name := range []string{"greatest", "least"} {
		wraps[name] = func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
			if stringsAndTimes(ctx, args) {
				args, _ = textArgs(ctx, args)
			}
			e, err := inner.NewInstance(ctx, args)
			if err != nil || !e.Resolved() {
				return e, err
			}
			return ownPrecision(ctx, e, args), nil
		}
	}
	WrapBuiltIns(function.BuiltIns, wraps)
}

// ownPrecision retypes e, one of args (IFNULL, COALESCE, IF, GREATEST,
// LEAST), as MySQL types a mix of DATE, DATETIME and TIMESTAMP values: a
// DATETIME of the arguments' largest fraction. go-mysql-server typed it
// DATETIME(6) (IFNULL(d, dt) printed '2024-01-05 00:00:00.000000') or as
// a string (COALESCE(d, dt) printed a DATE). Other mixes are left alone.
func ownPrecision(ctx *sql.Context, e sql.Expression, args []sql.Expression) sql.Expression {
	var first sql.Type
	mixed, p := false, 0
	for _, a := range args {
		t := a.Type(ctx)
		if t == types.Null {
			continue
		}
		at, ok := t.(sql.DatetimeType)
		if !ok {
			return e
		}
		if first == nil {
			first = t
		} else if !t.Equals(first) {
			mixed = true
		}
		if at.Type() != sqltypes.Date {
			p = max(p, at.Precision())
		}
	}
	want := types.MustCreateDatetimeType(sqltypes.Datetime, p)
	if !mixed || e.Type(ctx).Equals(want) {
		return e
	}
	return &retyped{UnaryExpressionStub: expression.UnaryExpressionStub{Child: e}, typ: want}
}

// retyped is an expression with another type, its values converted to it.
type retyped struct {
	expression.UnaryExpressionStub
	typ sql.Type
}

var _ sql.Expression = (*retyped)(nil)

// Type implements sql.Expression.
func (r *retyped) Type(*sql.Context) sql.Type { return r.typ }

// Eval implements sql.Expression.
func (r *retyped) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := r.Child.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	v, _, err = r.typ.Convert(ctx, v)
	return v, err
}

// String implements sql.Expression.
func (r *retyped) String() string { return r.Child.String() }

// WithChildren implements sql.Expression.
func (r *retyped) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(r, len(children), 1)
	}
	return &retyped{UnaryExpressionStub: expression.UnaryExpressionStub{Child: children[0]}, typ: r.typ}, nil
}

// stringsAndTimes reports whether args are strings and temporal values,
// at least one of each.
func stringsAndTimes(ctx *sql.Context, args []sql.Expression) bool {
	text, times := false, false
	for _, a := range args {
		if !a.Resolved() {
			return false
		}
		switch t := a.Type(ctx); {
		case types.IsText(t):
			text = true
		case hasText(t):
			times = true
		default:
			return false
		}
	}
	return text && times
}

// caseAsText reads the temporal results of a CASE typed as a string (a
// DATE in one branch, a string in another) as their text, as IFNULL's:
// go-mysql-server wrote a DATE as '2024-01-05 00:00:00'. The conditions
// are left alone.
func caseAsText(ctx *sql.Context, c *expression.Case) (sql.Expression, transform.TreeIdentity, error) {
	if !c.Resolved() || !types.IsText(c.Type(ctx)) {
		return c, transform.SameTree, nil
	}
	values := make([]sql.Expression, 0, len(c.Branches)+1)
	for _, b := range c.Branches {
		values = append(values, b.Value)
	}
	if c.Else != nil {
		values = append(values, c.Else)
	}
	out, wrapped := textArgs(ctx, values)
	if !wrapped {
		return c, transform.SameTree, nil
	}
	branches := make([]expression.CaseBranch, len(c.Branches))
	for i, b := range c.Branches {
		branches[i] = expression.CaseBranch{Cond: b.Cond, Value: out[i]}
	}
	var elseExpr sql.Expression
	if c.Else != nil {
		elseExpr = out[len(out)-1]
	}
	return expression.NewCase(c.Expr, branches, elseExpr), transform.NewTree, nil
}

// timeText is the text of a temporal expression, as MySQL writes it.
type timeText struct {
	expression.UnaryExpressionStub
	typ sql.Type // the expression's type
}

var _ sql.Expression = (*timeText)(nil)

// Type implements sql.Expression.
func (t *timeText) Type(*sql.Context) sql.Type { return types.LongText }

// Eval implements sql.Expression.
func (t *timeText) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := t.Child.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	switch typ := t.typ.(type) {
	case sql.DatetimeType:
		tm, err := typ.ConvertWithoutRangeCheck(ctx, v)
		if err != nil {
			return nil, err
		}
		return datetimeText(tm, typ), nil
	}
	if types.IsYear(t.typ) {
		return fmt.Sprint(v), nil
	}
	ts, err := types.Time.ConvertToTimespan(v)
	if err != nil {
		return nil, err
	}
	return ts.String(), nil
}

// datetimeText is tm as MySQL writes a value of typ: a DATE's day, a
// DATETIME's or TIMESTAMP's day and time with the type's fraction digits.
func datetimeText(tm time.Time, typ sql.DatetimeType) string {
	if typ.Type() == sqltypes.Date {
		return tm.Format("2006-01-02")
	}
	s := tm.Format("2006-01-02 15:04:05.000000")
	if p := typ.Precision(); p < 6 {
		s = s[:len(s)-6+p]
	}
	return strings.TrimSuffix(s, ".")
}

// String implements sql.Expression.
func (t *timeText) String() string { return t.Child.String() }

// WithChildren implements sql.Expression.
func (t *timeText) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(t, len(children), 1)
	}
	return &timeText{UnaryExpressionStub: expression.UnaryExpressionStub{Child: children[0]}, typ: t.typ}, nil
}
