package mysqlexpr

import (
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
)

// The DATETIME functions below are typed as MySQL types them, with the
// fractional seconds precision (fsp) MySQL gives their result:
// UTC_TIMESTAMP() has the precision asked (0 without an argument),
// FROM_UNIXTIME(n) 0 for an integer n (its decimals for a DECIMAL),
// CONVERT_TZ(dt, ...) that of dt, DATE_ADD and its kin that of their
// date (dateArithFsp). go-mysql-server typed them DATETIME(6),
// so `SELECT FROM_UNIXTIME(ts)` printed `2023-11-14 22:13:20.000000` and
// UTC_TIMESTAMP() its microseconds. The value is truncated to the
// precision, as MySQL's is.

// fspFuncs are the functions wrapped, by name, with the rule for their
// precision (-1: keep go-mysql-server's type).
// NOW() and CURRENT_TIMESTAMP are left alone: the planner accepts them
// unparenthesized as a column default only as go-mysql-server's own type.
var fspFuncs = map[string]func(ctx *sql.Context, args []sql.Expression) int{
	"utc_timestamp": askedFsp,
	"from_unixtime": fromUnixtimeFsp,
	"convert_tz":    convertTzFsp,
	"date_add":      dateArithFsp,
	"date_sub":      dateArithFsp,
	"adddate":       dateArithFsp,
	"subdate":       dateArithFsp,
}

// askedFsp is the precision given as the only argument, 0 without one.
func askedFsp(ctx *sql.Context, args []sql.Expression) int {
	if len(args) == 0 {
		return 0
	}
	if len(args) == 1 {
		if lit, ok := args[0].(*expression.Literal); ok {
			if n, ok := sqlvalue.AsInt(lit.Value()); ok && n >= 0 && n <= 6 {
				return int(n)
			}
		}
	}
	return -1
}

// fromUnixtimeFsp is FROM_UNIXTIME(n)'s precision: 0 for an integer n,
// its scale for a DECIMAL (at most 6).
func fromUnixtimeFsp(ctx *sql.Context, args []sql.Expression) int {
	if len(args) != 1 {
		return -1 // with a format it is a string
	}
	t := args[0].Type(ctx)
	switch {
	case types.IsInteger(t):
		return 0
	case types.IsDecimal(t):
		if d, ok := t.(sql.DecimalType); ok {
			return min(int(d.Scale()), 6)
		}
	}
	return -1
}

// convertTzFsp is CONVERT_TZ(dt, from, to)'s precision: dt's.
func convertTzFsp(ctx *sql.Context, args []sql.Expression) int {
	if len(args) != 3 {
		return -1
	}
	if dt, ok := args[0].Type(ctx).(sql.DatetimeType); ok {
		return dt.Precision()
	}
	if lit, ok := args[0].(*expression.Literal); ok {
		if s, ok := lit.Value().(string); ok {
			if i := strings.LastIndexByte(s, '.'); i >= 0 && strings.Contains(s, ":") {
				return min(len(s)-i-1, 6)
			}
			return 0
		}
	}
	return -1
}

// fspWraps wraps the built-in functions of fspFuncs (see WrapBuiltIns).
func fspWraps() map[string]BuiltInWrap {
	wraps := map[string]BuiltInWrap{}
	for name, rule := range fspFuncs {
		wraps[name] = func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
			e, err := inner.NewInstance(ctx, args)
			if err != nil {
				return nil, err
			}
			return &fspFunc{Expression: e, fsp: rule(ctx, args), name: name}, nil
		}
	}
	return wraps
}

// dateText is the type of a date function's string result, as MySQL
// types it: a VARCHAR as long as a DATETIME(6)'s text, not go-mysql-server's
// LONGTEXT.
var dateText = types.MustCreateString(sqltypes.VarChar, 29, sql.Collation_Default)

// fspFunc is a go-mysql-server DATETIME function typed with MySQL's
// precision fsp (-1: its own type). Its one child is the function it
// wraps, so that go-mysql-server's rules looking for DATE_ADD (such as the
// check that an INTERVAL is only used in one) still find it.
type fspFunc struct {
	sql.Expression
	fsp  int
	name string
}

var (
	_ sql.FunctionExpression         = (*fspFunc)(nil)
	_ sql.NonDeterministicExpression = (*fspFunc)(nil)
)

// Type implements sql.Expression.
func (f *fspFunc) Type(ctx *sql.Context) sql.Type {
	t := f.Expression.Type(ctx)
	if types.IsText(t) {
		return dateText // DATE_ADD of a string
	}
	if f.fsp < 0 || !types.IsDatetimeType(t) {
		return t
	}
	return types.MustCreateDatetimeType(sqltypes.Datetime, f.fsp)
}

// Eval implements sql.Expression.
func (f *fspFunc) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	warnings := warningCount(ctx)
	v, err := f.Expression.Eval(ctx, row)
	if err == nil && dateArithOverflow(ctx, f.Expression, row, v, warningCount(ctx) != warnings) {
		warnDatetimeOverflow(ctx)
		return nil, nil
	}
	if t, ok := v.(time.Time); ok && err == nil && f.fsp >= 0 {
		unit := time.Second
		for i := 0; i < f.fsp; i++ {
			unit /= 10
		}
		return t.Truncate(unit), nil
	}
	return v, err
}

// Children implements sql.Expression.
func (f *fspFunc) Children() []sql.Expression { return []sql.Expression{f.Expression} }

// WithChildren implements sql.Expression.
func (f *fspFunc) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(f, len(children), 1)
	}
	e, fsp := children[0], f.fsp
	if args := e.Children(); len(args) > 0 { // UTC_TIMESTAMP(n) shows none: n stays
		fsp = fspFuncs[f.name](ctx, args)
	}
	return &fspFunc{Expression: e, fsp: fsp, name: f.name}, nil
}

// FunctionName implements sql.FunctionExpression.
func (f *fspFunc) FunctionName() string { return f.name }

// Description implements sql.FunctionExpression.
func (f *fspFunc) Description() string {
	if d, ok := f.Expression.(sql.FunctionExpression); ok {
		return d.Description()
	}
	return ""
}

// IsNonDeterministic implements sql.NonDeterministicExpression:
// UTC_TIMESTAMP() is still read at each execution.
func (f *fspFunc) IsNonDeterministic() bool {
	nd, ok := f.Expression.(sql.NonDeterministicExpression)
	return ok && nd.IsNonDeterministic()
}

// CollationCoercibility implements sql.CollationCoercible.
func (f *fspFunc) CollationCoercibility(ctx *sql.Context) (sql.CollationID, byte) {
	if c, ok := f.Expression.(sql.CollationCoercible); ok {
		return c.CollationCoercibility(ctx)
	}
	return sql.Collation_binary, 5
}
