package mysqlexpr

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
)

// CAST('2024-02-30' AS DATE) is NULL in MySQL, with warning 1292
// "Incorrect datetime value: '2024-02-30'". go-mysql-server, finding no
// valid date in the string, tried ever shorter prefixes of it and took
// '2024-02-3' for the 3rd of February. checkedDateCast answers NULL for a
// string whose day is past the end of its month, as MySQL does; any other
// value is go-mysql-server's conversion (which refuses a month past 12
// itself). CAST('2024-01-31 10:11:12' AS TIME) was NULL too: a string
// holding a date and time is cast to its time of day. Blanks around a
// string are skipped, as MySQL skips them.

// checkedDateCast is a CAST or CONVERT to DATE, DATETIME or TIME.
type checkedDateCast struct{ *expression.Convert }

// checkDateCasts wraps the casts to DATE, DATETIME and TIME in e.
func checkDateCasts(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	return transform.Expr(ctx, e, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		c, ok := e.(*expression.Convert)
		if !ok {
			return e, transform.SameTree, nil
		}
		switch t := c.Type(ctx).(type) {
		case sql.DatetimeType:
			if t.Type() == sqltypes.Timestamp {
				return e, transform.SameTree, nil
			}
		default:
			if !types.IsTimespan(t) {
				return e, transform.SameTree, nil
			}
		}
		return checkedDateCast{c}, transform.NewTree, nil
	})
}

// Eval implements sql.Expression.
func (c checkedDateCast) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := c.Child.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	var s string
	switch x := v.(type) {
	case string:
		// MySQL reads a temporal value past blanks around it
		// (CAST('01:02:03 ' AS TIME) is 01:02:03, not NULL)
		s = strings.TrimSpace(x)
		v = s
	case []byte:
		s = string(x)
	default:
		return c.Convert.Eval(ctx, row)
	}
	toTime := types.IsTimespan(c.Type(ctx))
	if !toTime && isPastMonthEnd(s) {
		ctx.Warn(1292, "Incorrect datetime value: '%s'", s)
		return nil, nil
	}
	lit, err := c.Convert.WithChildren(ctx, expression.NewLiteral(v, c.Child.Type(ctx)))
	if err != nil {
		return nil, err
	}
	r, err := lit.Eval(ctx, row)
	if r == nil && err == nil && toTime {
		// a date and time: its time of day, to the second
		if t, ok := readTime(ctx, s); ok {
			return types.Time.MicrosecondsToTimespan(t.AsMicroseconds() / 1e6 * 1e6), nil
		}
	}
	return r, err
}

// WithChildren implements sql.Expression.
func (c checkedDateCast) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	n, err := c.Convert.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	if cv, ok := n.(*expression.Convert); ok {
		return checkedDateCast{cv}, nil
	}
	return n, nil
}

// isPastMonthEnd reports whether s is a date whose day does not exist in
// its month (see pastMonthEnd).
func isPastMonthEnd(s string) bool {
	_, past := pastMonthEnd(strings.TrimSpace(s))
	return past
}
