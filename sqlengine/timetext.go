package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// A TIME value read as a string is its text, 'hh:mm:ss[.ffffff]', in
// MySQL. go-mysql-server has no conversion of its TIME values to strings:
// CONCAT(t, ...), LENGTH, UPPER, SUBSTRING, LIKE and the rest failed with
// 1105 "incompatible conversion to SQL type: '10:00:00'->longtext", and
// CAST(t AS CHAR) silently gave NULL. The functions and operators that
// read their arguments as strings get a TIME argument's text instead
// (timeAsTextRule), as timedisplay.go prints it: a zero fraction left out.

// textFuncs are the functions that read their arguments as strings.
var textFuncs = map[string]bool{
	"concat": true, "concat_ws": true, "length": true, "char_length": true, "character_length": true,
	"octet_length": true, "bit_length": true, "upper": true, "ucase": true, "lower": true, "lcase": true,
	"substring": true, "substr": true, "mid": true, "substring_index": true, "left": true, "right": true,
	"replace": true, "trim": true, "ltrim": true, "rtrim": true, "lpad": true, "rpad": true,
	"instr": true, "locate": true, "position": true, "reverse": true, "repeat": true, "insert": true,
	"strcmp": true, "field": true, "find_in_set": true, "ascii": true, "ord": true, "hex": true,
	"md5": true, "sha": true, "sha1": true, "sha2": true, "crc32": true, "to_base64": true,
	"quote": true, "soundex": true, "group_concat": true,
	"regexp_like": true, "regexp_instr": true, "regexp_replace": true, "regexp_substr": true,
}

// readsText reports whether e reads its arguments as strings.
func readsText(ctx *sql.Context, e sql.Expression) bool {
	switch e := e.(type) {
	case *expression.Like:
		return true
	case *expression.Convert:
		t := e.Type(ctx)
		return types.IsText(t) || types.IsBinaryType(t)
	case sql.FunctionExpression:
		return textFuncs[e.FunctionName()]
	}
	return false
}

// timeAsTextRule is the analyzer rule applying wrapTimeArgs to every
// expression of the plan, subqueries included. It runs after analysis,
// when the result's schema is derived from the expressions, so a
// SUBSTRING(t, 1, 2) is typed as the string it gives (not as t's TIME).
// go-mysql-server skips the rules after analysis for a single-table
// SELECT without subqueries; the exec builder applies timeAsText to what it
// builds instead (exprRewrites). It cannot retype the result there, so it
// leaves alone the functions typed as their argument (SUBSTRING, MID and
// REVERSE of a TIME), which still fail with 1105 rather than print their
// text as a TIME.
func timeAsTextRule(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	return exprsWithSubqueries(ctx, n, wrapTimeArgs)
}

// timeAsText applies wrapTimeArgs to e and everything in it, except to
// an expression typed TIME itself (see timeAsTextRule).
func timeAsText(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	return transform.Expr(ctx, e, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if types.IsTimespan(e.Type(ctx)) {
			return e, transform.SameTree, nil
		}
		return wrapTimeArgs(ctx, e)
	})
}

// wrapTimeArgs wraps the TIME arguments of e, if e is one of the string
// functions and operators (see above).
func wrapTimeArgs(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	if !readsText(ctx, e) {
		return e, transform.SameTree, nil
	}
	children := e.Children()
	var out []sql.Expression
	for i, c := range children {
		if !types.IsTimespan(c.Type(ctx)) {
			continue
		}
		if out == nil {
			out = append([]sql.Expression(nil), children...)
		}
		out[i] = &timeText{expression.UnaryExpressionStub{Child: c}}
	}
	if out == nil {
		return e, transform.SameTree, nil
	}
	n, err := e.WithChildren(ctx, out...)
	if err != nil {
		return nil, transform.SameTree, err
	}
	return n, transform.NewTree, nil
}

// timeText is the text of a TIME expression.
type timeText struct {
	expression.UnaryExpressionStub
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
	ts, err := types.Time.ConvertToTimespan(v)
	if err != nil {
		return nil, err
	}
	return ts.String(), nil
}

// String implements sql.Expression.
func (t *timeText) String() string { return t.Child.String() }

// WithChildren implements sql.Expression.
func (t *timeText) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(t, len(children), 1)
	}
	return &timeText{expression.UnaryExpressionStub{Child: children[0]}}, nil
}
