package mysqlexpr

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
)

// String functions whose result can be far longer than their arguments
// (REPEAT, SPACE, LPAD, RPAD, REPLACE, CONCAT, CONCAT_WS) answer NULL with
// warning 1301 when it would be longer than max_allowed_packet, as in
// MySQL. go-mysql-server built whatever was asked: REPEAT('a', 4294967295)
// allocated 2 GiB, stalled the node's raft loop for seconds and then
// panicked, and nested calls could ask for more than any memory.
//
// The wrapped call evaluates the arguments, computes the result's length
// from their values, and only then runs go-mysql-server's function, on
// the values as literals (so an argument is evaluated once, and a
// nondeterministic one cannot differ between the check and the call).

// resultBytes returns the length in bytes of a function's result from its
// arguments' values (none NULL), as MySQL bounds it: LPAD and RPAD count
// the widest character of utf8mb4.
type resultBytes func(ctx *sql.Context, vals []any) int64

var boundedStringFuncs = map[string]resultBytes{
	"repeat": func(ctx *sql.Context, v []any) int64 {
		return mulBytes(textLen(ctx, v[0]), countArg(ctx, v[1]))
	},
	"space": func(ctx *sql.Context, v []any) int64 { return countArg(ctx, v[0]) },
	"lpad":  func(ctx *sql.Context, v []any) int64 { return mulBytes(countArg(ctx, v[1]), 4) },
	"rpad":  func(ctx *sql.Context, v []any) int64 { return mulBytes(countArg(ctx, v[1]), 4) },
	"replace": func(ctx *sql.Context, v []any) int64 {
		s, from, to := textOf(ctx, v[0]), textOf(ctx, v[1]), textOf(ctx, v[2])
		if from == "" || len(to) <= len(from) {
			return int64(len(s))
		}
		return int64(len(s)) + mulBytes(int64(strings.Count(s, from)), int64(len(to)-len(from)))
	},
	"concat": sumBytes,
	"concat_ws": func(ctx *sql.Context, v []any) int64 {
		return sumBytes(ctx, v) + mulBytes(textLen(ctx, v[0]), int64(len(v)))
	},
}

// wrapBoundedStrings bounds the results of boundedStringFuncs by
// max_allowed_packet.
func wrapBoundedStrings() {
	wraps := map[string]BuiltInWrap{}
	for name, length := range boundedStringFuncs {
		wraps[name] = func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
			e, err := inner.NewInstance(ctx, args)
			if err != nil {
				return nil, err
			}
			be, ok := e.(boundedExpr)
			if !ok {
				return e, nil
			}
			return &boundedCall{boundedExpr: be, ctor: inner, args: args, length: length}, nil
		}
	}
	WrapBuiltIns(function.BuiltIns, wraps)
}

// boundedExpr is what go-mysql-server's calls of boundedStringFuncs are.
type boundedExpr interface {
	sql.FunctionExpression
	sql.CollationCoercible
}

// boundedCall is a call of one of boundedStringFuncs.
type boundedCall struct {
	boundedExpr
	ctor   sql.Function
	args   []sql.Expression
	length resultBytes
}

// Eval implements sql.Expression.
func (b *boundedCall) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	vals := make([]any, len(b.args))
	lits := make([]sql.Expression, len(b.args))
	null := false
	for i, a := range b.args {
		v, err := a.Eval(ctx, row)
		if err != nil {
			return nil, err
		}
		vals[i], lits[i] = v, expression.NewLiteral(v, a.Type(ctx))
		null = null || v == nil
	}
	// CONCAT_WS skips NULL values and is NULL only for a NULL separator
	if !null || b.FunctionName() == "concat_ws" && vals[0] != nil {
		if limit := b.limit(ctx); b.length(ctx, vals) > limit {
			ctx.Warn(1301, "Result of %s() was larger than max_allowed_packet (%d) - truncated", b.FunctionName(), limit)
			return nil, nil
		}
	}
	e, err := b.ctor.NewInstance(ctx, lits)
	if err != nil {
		return nil, err
	}
	return e.Eval(ctx, nil)
}

// limit is the session's max_allowed_packet.
func (b *boundedCall) limit(ctx *sql.Context) int64 {
	return int64(sqlvalue.MaxPacket(ctx.Session))
}

// Children implements sql.Expression.
func (b *boundedCall) Children() []sql.Expression { return b.args }

// WithChildren implements sql.Expression.
func (b *boundedCall) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := b.ctor.NewInstance(ctx, children)
	if err != nil {
		return nil, err
	}
	be, ok := e.(boundedExpr)
	if !ok {
		return e, nil
	}
	return &boundedCall{boundedExpr: be, ctor: b.ctor, args: children, length: b.length}, nil
}

// DebugString implements sql.DebugStringer (plans print the call's).
func (b *boundedCall) DebugString(ctx *sql.Context) string {
	return sql.DebugString(ctx, b.boundedExpr)
}

// textOf is v as a string, as a string function reads it.
func textOf(ctx *sql.Context, v any) string {
	if v == nil {
		return ""
	}
	s, _, err := types.LongText.Convert(ctx, v)
	if err != nil {
		return ""
	}
	str, _ := s.(string)
	return str
}

func textLen(ctx *sql.Context, v any) int64 { return int64(len(textOf(ctx, v))) }

// countArg is a count argument's value as an integer (0 when it is not a
// number; negative counts make empty results).
func countArg(ctx *sql.Context, v any) int64 {
	if n, ok := sqlvalue.AsInt(v); ok {
		return max(n, 0)
	}
	if u, ok := v.(uint64); ok && u > 0 {
		return 1 << 62
	}
	n, _, err := types.Int64.Convert(ctx, v)
	if err != nil {
		return 0
	}
	i, _ := n.(int64)
	return max(i, 0)
}

// mulBytes is a*b, saturating instead of overflowing.
func mulBytes(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}

// sumBytes is the total length of the non-NULL values.
func sumBytes(ctx *sql.Context, vals []any) int64 {
	var n int64
	for _, v := range vals {
		n += textLen(ctx, v)
	}
	return n
}

// LEFT, RIGHT, INSTR and REVERSE read a number as its text, as MySQL
// does (LEFT(123, 2) is '12'); go-mysql-server answered 1105 "invalid
// type: int8" for the first three and REVERSE(123) was 127, its text
// '321' put back into the argument's TINYINT. Their text arguments get a
// CONVERT(... , CHAR) when they are numbers.
var numberAsText = map[string][]int{"left": {0}, "right": {0}, "instr": {0, 1}, "reverse": {0}}

// wrapNumbersAsText reads the numberAsText arguments as text.
func wrapNumbersAsText() {
	wraps := map[string]BuiltInWrap{}
	for name, positions := range numberAsText {
		wraps[name] = func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
			args = append([]sql.Expression(nil), args...)
			for _, i := range positions {
				if i < len(args) && args[i].Resolved() && types.IsNumber(args[i].Type(ctx)) {
					args[i] = expression.NewConvert(args[i], expression.ConvertToChar)
				}
			}
			return inner.NewInstance(ctx, args)
		}
	}
	WrapBuiltIns(function.BuiltIns, wraps)
}
