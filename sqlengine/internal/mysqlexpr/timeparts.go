package mysqlexpr

import (
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// HOUR, MINUTE, SECOND, MICROSECOND and TIME_TO_SEC read their argument
// as a TIME in MySQL: HOUR('10:11:12') is 10, TIME_TO_SEC('01:00:00')
// 3600, TIME_TO_SEC('-01:00:00') -3600 and HOUR('100:00:00') 100.
// go-mysql-server read a string argument as a DATETIME only, so every one
// of those was NULL. A DATE, DATETIME or TIMESTAMP argument is left to
// go-mysql-server; any other is read as a TIME here (readTime), a string
// holding a date and time as its time of day.

// timePart is one of those functions: what it takes from a TIME, and its
// result's type.
type timePart struct {
	part func(t types.Timespan) any
	typ  sql.Type
}

// timeParts are the functions by name.
var timeParts = map[string]timePart{
	"hour":        {func(t types.Timespan) any { return int32(abs64(t.AsMicroseconds()) / 3600e6) }, types.Int32},
	"minute":      {func(t types.Timespan) any { return int32(abs64(t.AsMicroseconds()) / 60e6 % 60) }, types.Int32},
	"second":      {func(t types.Timespan) any { return int32(abs64(t.AsMicroseconds()) / 1e6 % 60) }, types.Int32},
	"microsecond": {func(t types.Timespan) any { return uint64(abs64(t.AsMicroseconds()) % 1e6) }, types.Uint64},
	"time_to_sec": {func(t types.Timespan) any { return t.AsMicroseconds() / 1e6 }, types.Int64},
}

// wrapTimeParts reads the timeParts arguments as TIME values.
func wrapTimeParts() {
	wraps := map[string]BuiltInWrap{}
	for name, p := range timeParts {
		wraps[name] = func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
			e, err := inner.NewInstance(ctx, args)
			if err != nil || len(args) != 1 {
				return e, err
			}
			return &timePartCall{Expression: e, timePart: p, name: name}, nil
		}
	}
	WrapBuiltIns(function.BuiltIns, wraps)
}

// timePartCall is a call of a timePart function; its one child is
// go-mysql-server's call, whose one child is the argument.
type timePartCall struct {
	sql.Expression
	timePart
	name string
}

var _ sql.FunctionExpression = (*timePartCall)(nil)

// arg is the function's argument.
func (c *timePartCall) arg() sql.Expression { return c.Expression.Children()[0] }

// readsTime reports whether the argument is read here rather than by
// go-mysql-server (which reads dates and datetimes right).
func (c *timePartCall) readsTime(ctx *sql.Context) bool {
	_, datetime := c.arg().Type(ctx).(sql.DatetimeType)
	return !datetime
}

// Type implements sql.Expression: go-mysql-server's type, but a signed
// TIME_TO_SEC (negative for a negative TIME).
func (c *timePartCall) Type(*sql.Context) sql.Type { return c.typ }

// Eval implements sql.Expression.
func (c *timePartCall) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	if !c.readsTime(ctx) {
		v, err := c.Expression.Eval(ctx, row)
		if n, ok := v.(uint64); ok && err == nil && c.name == "time_to_sec" {
			return int64(n), nil
		}
		return v, err
	}
	v, err := c.arg().Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	t, ok := readTime(ctx, v)
	if !ok {
		ctx.Warn(1292, "Incorrect time value: '%v'", v)
		return nil, nil
	}
	return c.part(t), nil
}

// Children implements sql.Expression.
func (c *timePartCall) Children() []sql.Expression { return []sql.Expression{c.Expression} }

// WithChildren implements sql.Expression.
func (c *timePartCall) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(c, len(children), 1)
	}
	return &timePartCall{Expression: children[0], timePart: c.timePart, name: c.name}, nil
}

// FunctionName implements sql.FunctionExpression.
func (c *timePartCall) FunctionName() string { return c.name }

// Description implements sql.FunctionExpression.
func (c *timePartCall) Description() string {
	if d, ok := c.Expression.(sql.FunctionExpression); ok {
		return d.Description()
	}
	return ""
}

// readTime reads v as MySQL reads a TIME argument: a TIME as itself, a
// date and time (or a string holding one) as its time of day, a number or
// other string as a TIME ('10:11:12', '101112', 101112).
func readTime(ctx *sql.Context, v any) (types.Timespan, bool) {
	switch x := v.(type) {
	case time.Time:
		return timeOfDay(x), true
	case []byte:
		v = string(x)
	}
	if t, err := types.Time.ConvertToTimespan(v); err == nil {
		return t, true
	}
	if s, ok := v.(string); ok {
		if d, _, err := types.DatetimeMaxPrecision.Convert(ctx, s); err == nil {
			if dt, ok := d.(time.Time); ok {
				return timeOfDay(dt), true
			}
		}
	}
	return 0, false
}

// timeOfDay is the TIME of t's clock.
func timeOfDay(t time.Time) types.Timespan {
	h, m, s := t.Clock()
	micros := (int64(h)*3600+int64(m)*60+int64(s))*1e6 + int64(t.Nanosecond()/1e3)
	return types.Time.MicrosecondsToTimespan(micros)
}
