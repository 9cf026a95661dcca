package mysqlexpr

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
)

// Date and time functions of MySQL that go-mysql-server lacks, so that a
// statement using one got 1305 "function not found": SEC_TO_TIME,
// MAKETIME, MAKEDATE, ADDTIME, SUBTIME, PERIOD_ADD, PERIOD_DIFF and
// TO_SECONDS. Each gives NULL for a NULL argument, as MySQL's do. A TIME
// result is go-mysql-server's TIME, which prints six fractional digits
// (as its TIMEDIFF and CAST(... AS TIME) do).

// maxTimeMicros is TIME's bound, 838:59:59, in microseconds.
const maxTimeMicros = 838*3600e6 + 59*60e6 + 59e6

// timeFuncs are the functions, added to go-mysql-server's built-ins.
var timeFuncs = []sql.Function{
	fixedFunc("SEC_TO_TIME", 1, func(*sql.Context, []sql.Expression) sql.Type { return types.Time }, secToTime),
	fixedFunc("MAKETIME", 3, func(*sql.Context, []sql.Expression) sql.Type { return types.Time }, makeTime),
	fixedFunc("MAKEDATE", 2, func(*sql.Context, []sql.Expression) sql.Type { return types.Date }, makeDate),
	fixedFunc("ADDTIME", 2, addTimeType, func(ctx *sql.Context, f *fixedCall, v []any) (any, error) {
		return addTime(ctx, f, v, 1)
	}),
	fixedFunc("SUBTIME", 2, addTimeType, func(ctx *sql.Context, f *fixedCall, v []any) (any, error) {
		return addTime(ctx, f, v, -1)
	}),
	fixedFunc("PERIOD_ADD", 2, func(*sql.Context, []sql.Expression) sql.Type { return types.Int64 }, func(ctx *sql.Context, _ *fixedCall, v []any) (any, error) {
		p, n := toInt64(ctx, v[0]), toInt64(ctx, v[1])
		if p == 0 {
			return int64(0), nil
		}
		m := periodMonths(p) + n
		return m/12*100 + m%12 + 1, nil
	}),
	fixedFunc("PERIOD_DIFF", 2, func(*sql.Context, []sql.Expression) sql.Type { return types.Int64 }, func(ctx *sql.Context, _ *fixedCall, v []any) (any, error) {
		return periodMonths(toInt64(ctx, v[0])) - periodMonths(toInt64(ctx, v[1])), nil
	}),
	optArgFunc("UTC_TIME", 0, 1, func(*sql.Context, []sql.Expression) sql.Type { return types.Time }, utcTime),
	fixedFunc("TO_SECONDS", 1, func(*sql.Context, []sql.Expression) sql.Type { return types.Int64 }, func(ctx *sql.Context, _ *fixedCall, v []any) (any, error) {
		t, ok := toDatetime(ctx, v[0])
		if !ok {
			return nil, nil
		}
		return t.Unix() - yearZero, nil
	}),
}

// utcTime is UTC_TIME([fsp]): the statement's start in UTC as a time of
// day, truncated to fsp fractional digits (0 without an argument).
func utcTime(ctx *sql.Context, _ *fixedCall, v []any) (any, error) {
	fsp := int64(0)
	if len(v) == 1 {
		fsp = toInt64(ctx, v[0])
		if fsp < 0 || fsp > 6 {
			return nil, sql.ErrInvalidArgument.New("UTC_TIME")
		}
	}
	t := ctx.QueryTime().UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	step := time.Duration(math.Pow10(9 - int(fsp)))
	return types.Time.MicrosecondsToTimespan(t.Sub(day).Truncate(step).Microseconds()), nil
}

// yearZero is 0000-01-01 in Unix seconds: TO_SECONDS counts from there.
var yearZero = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// secToTime is SEC_TO_TIME(seconds).
func secToTime(ctx *sql.Context, _ *fixedCall, v []any) (any, error) {
	return clampTime(ctx, math.Round(toFloat64(ctx, v[0])*1e6), v[0]), nil
}

// makeTime is MAKETIME(hour, minute, second): NULL unless minute is 0-59
// and second is in [0, 60).
func makeTime(ctx *sql.Context, _ *fixedCall, v []any) (any, error) {
	h, m, s := toInt64(ctx, v[0]), toInt64(ctx, v[1]), toFloat64(ctx, v[2])
	if m < 0 || m > 59 || s < 0 || s >= 60 {
		return nil, nil
	}
	micros := float64(abs64(h)*3600+m*60)*1e6 + math.Round(s*1e6)
	if h < 0 {
		micros = -micros
	}
	return clampTime(ctx, micros, fmt.Sprintf("%d:%02d:%v", h, m, v[2])), nil
}

// makeDate is MAKEDATE(year, dayofyear): NULL for a day below 1 or a
// result past year 9999; years 0-69 are 2000-2069 and 70-99 1970-1999.
func makeDate(ctx *sql.Context, _ *fixedCall, v []any) (any, error) {
	y, d := toInt64(ctx, v[0]), toInt64(ctx, v[1])
	if d <= 0 || y < 0 || y > 9999 || d > 366*10000 {
		return nil, nil
	}
	switch {
	case y < 70:
		y += 2000
	case y < 100:
		y += 1900
	}
	t := time.Date(int(y), 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, int(d-1))
	if t.Year() > 9999 {
		return nil, nil
	}
	return t, nil
}

// addTimeType is ADDTIME's and SUBTIME's type: a DATETIME for a date or
// datetime (with the argument's fractional digits), a TIME for a TIME, and
// otherwise (a string) a string holding whichever the value reads as, as
// in MySQL.
func addTimeType(ctx *sql.Context, args []sql.Expression) sql.Type {
	t := args[0].Type(ctx)
	switch {
	case types.IsTime(t):
		if dt, ok := t.(sql.DatetimeType); ok {
			return types.MustCreateDatetimeType(sqltypes.Datetime, dt.Precision())
		}
		return types.DatetimeMaxPrecision
	case types.IsTimespan(t):
		return types.Time
	}
	return types.LongText
}

// addTime is ADDTIME(expr, time) (sign 1) and SUBTIME (sign -1).
func addTime(ctx *sql.Context, f *fixedCall, v []any, sign int64) (any, error) {
	d, err := types.Time.ConvertToTimespan(v[1])
	if err != nil {
		ctx.Warn(1292, "Truncated incorrect time value: '%v'", v[1])
		return nil, nil
	}
	delta := time.Duration(sign*d.AsMicroseconds()) * time.Microsecond
	asText := types.IsText(f.Type(ctx))
	if t, ok := v[0].(time.Time); ok {
		return datetimeResult(ctx, t.Add(delta), asText), nil
	}
	if s, ok := v[0].(string); ok && strings.Contains(s, "-") {
		t, ok := toDatetime(ctx, s)
		if !ok {
			return nil, nil
		}
		return datetimeResult(ctx, t.Add(delta), true), nil
	}
	base, err := types.Time.ConvertToTimespan(v[0])
	if err != nil {
		ctx.Warn(1292, "Truncated incorrect time value: '%v'", v[0])
		return nil, nil
	}
	ts := clampTime(ctx, float64(base.AsMicroseconds())+float64(sign*d.AsMicroseconds()), v[0])
	if !asText {
		return ts, nil
	}
	s := ts.String()
	return strings.TrimSuffix(s, ".000000"), nil
}

// datetimeResult is t as ADDTIME gives it: the value, or for a string
// argument MySQL's text (fractional digits only when there are any); NULL
// with MySQL's warning 1441 past DATETIME's range (years 0 to 9999).
func datetimeResult(ctx *sql.Context, t time.Time, asText bool) any {
	if outsideDatetime(t) {
		warnDatetimeOverflow(ctx)
		return nil
	}
	if !asText {
		return t
	}
	if t.Nanosecond() != 0 {
		return t.Format("2006-01-02 15:04:05.000000")
	}
	return t.Format("2006-01-02 15:04:05")
}

// outsideDatetime reports whether t is outside DATETIME's range (years 0
// to 9999), where MySQL's date arithmetic answers NULL with warning 1441
// (warnDatetimeOverflow).
func outsideDatetime(t time.Time) bool { return t.Year() < 0 || t.Year() > 9999 }

func warnDatetimeOverflow(ctx *sql.Context) {
	ctx.Warn(1441, "Datetime function: datetime field overflow")
}

// clampTime is micros as a TIME, held to ±838:59:59 with MySQL's warning
// naming the original value.
func clampTime(ctx *sql.Context, micros float64, orig any) types.Timespan {
	if micros > maxTimeMicros || micros < -maxTimeMicros {
		ctx.Warn(1292, "Truncated incorrect time value: '%v'", orig)
		micros = math.Copysign(maxTimeMicros, micros)
	}
	return types.Time.MicrosecondsToTimespan(int64(micros))
}

// periodMonths is a period (YYMM or YYYYMM) as a count of months.
func periodMonths(p int64) int64 {
	y, m := p/100, p%100
	switch {
	case y < 70:
		y += 2000
	case y < 100:
		y += 1900
	}
	return y*12 + m - 1
}

// toFloat64 and toInt64 read a numeric argument as MySQL does (a string by
// its leading number, with go-mysql-server's warning for the rest).
func toFloat64(ctx *sql.Context, v any) float64 {
	f, _, err := types.Float64.Convert(ctx, v)
	if err != nil {
		return 0
	}
	x, _ := f.(float64)
	return x
}

func toInt64(ctx *sql.Context, v any) int64 {
	return int64(math.Round(toFloat64(ctx, v)))
}

// toDatetime reads a date or datetime argument, or warns (1292) and
// reports false.
func toDatetime(ctx *sql.Context, v any) (time.Time, bool) {
	if types.IsInteger(types.ApproximateTypeFromValue(v)) {
		v = fmt.Sprint(v) // 20240101 is a date, as in MySQL
	}
	t, _, err := types.DatetimeMaxPrecision.Convert(ctx, v)
	if tt, ok := t.(time.Time); err == nil && ok {
		return tt, true
	}
	ctx.Warn(1292, "Incorrect datetime value: '%v'", v)
	return time.Time{}, false
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// fixedFunc registers a function of n arguments whose value is eval of
// the arguments' values, NULL if any is NULL.
func fixedFunc(name string, n int, typ func(*sql.Context, []sql.Expression) sql.Type, eval func(*sql.Context, *fixedCall, []any) (any, error)) sql.Function {
	return optArgFunc(name, n, n, typ, eval)
}

// optArgFunc is fixedFunc for a function of min to max arguments.
func optArgFunc(name string, min, max int, typ func(*sql.Context, []sql.Expression) sql.Type, eval func(*sql.Context, *fixedCall, []any) (any, error)) sql.Function {
	return sql.FunctionN{Name: strings.ToLower(name), Fn: func(_ *sql.Context, args ...sql.Expression) (sql.Expression, error) {
		if len(args) < min || len(args) > max {
			want := fmt.Sprint(min)
			if max > min {
				want = fmt.Sprintf("%d to %d", min, max)
			}
			return nil, sql.ErrInvalidArgumentNumber.New(name, want, len(args))
		}
		return &fixedCall{name: name, args: args, typ: typ, eval: eval}, nil
	}}
}

// fixedCall is a call of a fixedFunc.
type fixedCall struct {
	name string
	args []sql.Expression
	typ  func(*sql.Context, []sql.Expression) sql.Type
	eval func(*sql.Context, *fixedCall, []any) (any, error)
}

var _ sql.FunctionExpression = (*fixedCall)(nil)

// Resolved implements sql.Expression.
func (f *fixedCall) Resolved() bool {
	for _, a := range f.args {
		if !a.Resolved() {
			return false
		}
	}
	return true
}

// String implements sql.Expression.
func (f *fixedCall) String() string {
	parts := make([]string, len(f.args))
	for i, a := range f.args {
		parts[i] = a.String()
	}
	return f.name + "(" + strings.Join(parts, ",") + ")"
}

// Type implements sql.Expression.
func (f *fixedCall) Type(ctx *sql.Context) sql.Type { return f.typ(ctx, f.args) }

// IsNullable implements sql.Expression.
func (f *fixedCall) IsNullable(*sql.Context) bool { return true }

// Children implements sql.Expression.
func (f *fixedCall) Children() []sql.Expression { return f.args }

// FunctionName implements sql.FunctionExpression.
func (f *fixedCall) FunctionName() string { return strings.ToLower(f.name) }

// Description implements sql.FunctionExpression.
func (f *fixedCall) Description() string { return "MySQL's " + f.name }

// WithChildren implements sql.Expression.
func (f *fixedCall) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != len(f.args) {
		return nil, sql.ErrInvalidChildrenNumber.New(f, len(children), len(f.args))
	}
	c := *f
	c.args = children
	return &c, nil
}

// Eval implements sql.Expression.
func (f *fixedCall) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	vals := make([]any, len(f.args))
	for i, a := range f.args {
		v, err := a.Eval(ctx, row)
		if err != nil || v == nil {
			return nil, err
		}
		vals[i] = v
	}
	return f.eval(ctx, f, vals)
}
