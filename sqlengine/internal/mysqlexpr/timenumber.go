package mysqlexpr

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/shopspring/decimal"
)

// DATE, DATETIME and TIMESTAMP values read as numbers, in casts to numbers
// and arithmetic: wrapTimeArgs (timetext.go) wraps them where readsNumber
// says so, on the analyzer's path and the exec builder's.

// readsNumber reports whether e reads its arguments as numbers: a cast to
// a number, or arithmetic (not with an INTERVAL: that is DATE_ADD).
func readsNumber(ctx *sql.Context, e sql.Expression) bool {
	switch e := e.(type) {
	case *expression.Convert:
		return types.IsNumber(e.Type(ctx))
	case *expression.Arithmetic:
		for _, c := range e.Children() {
			if _, ok := c.(*expression.Interval); ok {
				return false
			}
		}
		return true
	case *expression.Div, *expression.IntDiv, *expression.Mod:
		return true
	}
	return false
}

// numberArgs returns args with every DATE, DATETIME and TIMESTAMP one read
// as its number (timeNumber); wrapped reports whether there was one.
func numberArgs(ctx *sql.Context, args []sql.Expression) (out []sql.Expression, wrapped bool) {
	return wrapArgs(ctx, args, func(a sql.Expression, t sql.Type) sql.Expression {
		typ, ok := t.(sql.DatetimeType)
		if !ok {
			return nil
		}
		return &timeNumber{UnaryExpressionStub: expression.UnaryExpressionStub{Child: a}, typ: typ}
	})
}

// timeNumber is a DATE, DATETIME or TIMESTAMP read as a number, as MySQL
// reads it: 20240105 for a DATE, 20240105101112 for a DATETIME, with its
// fraction digits when it has them (a DECIMAL then). go-mysql-server made
// CAST(d AS SIGNED) the Unix time (1704412800) and d + 0 of a DATE
// 20240105000000.
type timeNumber struct {
	expression.UnaryExpressionStub
	typ sql.DatetimeType
}

var _ sql.Expression = (*timeNumber)(nil)

// Type implements sql.Expression.
func (t *timeNumber) Type(*sql.Context) sql.Type {
	if p := t.typ.Precision(); p > 0 && t.typ.Type() != sqltypes.Date {
		return types.MustCreateDecimalType(uint8(14+p), uint8(p))
	}
	return types.Int64
}

// Eval implements sql.Expression.
func (t *timeNumber) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := t.Child.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	tm, err := t.typ.ConvertWithoutRangeCheck(ctx, v)
	if err != nil {
		return nil, err
	}
	day := int64(tm.Year())*10000 + int64(tm.Month())*100 + int64(tm.Day())
	if t.typ.Type() == sqltypes.Date {
		return day, nil
	}
	n := day*1000000 + int64(tm.Hour())*10000 + int64(tm.Minute())*100 + int64(tm.Second())
	p := t.typ.Precision()
	if p == 0 {
		return n, nil
	}
	frac := decimal.New(int64(tm.Nanosecond()/1000), -6).Truncate(int32(p))
	return decimal.New(n, 0).Add(frac), nil
}

// String implements sql.Expression.
func (t *timeNumber) String() string { return t.Child.String() }

// WithChildren implements sql.Expression.
func (t *timeNumber) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(t, len(children), 1)
	}
	return &timeNumber{UnaryExpressionStub: expression.UnaryExpressionStub{Child: children[0]}, typ: t.typ}, nil
}
