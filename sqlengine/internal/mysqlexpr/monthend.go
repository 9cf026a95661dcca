package mysqlexpr

import (
	"fmt"
	"strconv"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// A date constant whose day is past its month's end ('2024-02-31', the
// habit of writing "the end of the month" as day 31) compares in MySQL as
// a point after the month's last day and before the next month's first:
// `created <= '2024-02-31'` keeps all of February, `d = '2024-02-30'`
// nothing. go-mysql-server reads such a string as its longest valid
// prefix, '2024-02-3', and those queries kept the rows of February 3rd.
// The comparison is rewritten against the next month's first day, in the
// filters the index costing sees and in every node the executor builds
// (see NumericDates).

// pastMonthEnd reports whether s is a date (YYYY-MM-DD, with or without a
// time) whose day does not exist in its month, and gives the first day of
// the month after.
func pastMonthEnd(s string) (next string, ok bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' || len(s) > 10 && s[10] != ' ' && s[10] != 'T' {
		return "", false
	}
	y, err1 := strconv.Atoi(s[:4])
	m, err2 := strconv.Atoi(s[5:7])
	d, err3 := strconv.Atoi(s[8:10])
	if err1 != nil || err2 != nil || err3 != nil || m < 1 || m > 12 || d > 31 {
		return "", false
	}
	if d <= time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day() {
		return "", false
	}
	if m++; m > 12 {
		y, m = y+1, 1
	}
	return fmt.Sprintf("%04d-%02d-01", y, m), true
}

// pastMonthEndLiteral gives the next month's first day of a string
// constant past its month's end.
func pastMonthEndLiteral(e sql.Expression) (sql.Expression, bool) {
	lit, ok := e.(*expression.Literal)
	if !ok {
		return nil, false
	}
	s, ok := lit.Value().(string)
	if !ok {
		return nil, false
	}
	next, ok := pastMonthEnd(s)
	if !ok {
		return nil, false
	}
	return expression.NewLiteral(next, types.LongText), true
}

// ComparesPastMonthEnd reports, without a context, whether e is a
// comparison with a string constant past its month's end.
func ComparesPastMonthEnd(e sql.Expression) bool {
	if _, in := e.(*expression.InTuple); in || !isComparison(e) {
		return false
	}
	for _, c := range e.Children() {
		if _, ok := pastMonthEndLiteral(c); ok {
			return true
		}
	}
	return false
}

// monthEndCompare rewrites e, a comparison of a date with a constant past
// its month's end, against the next month's first day; ok is false for
// any other expression.
func monthEndCompare(ctx *sql.Context, e sql.Expression) (sql.Expression, bool) {
	if b, ok := e.(*expression.Between); ok {
		if !isDatetime(ctx, b.Val) {
			return nil, false
		}
		lo, loPast := pastMonthEndLiteral(b.Lower)
		hi, hiPast := pastMonthEndLiteral(b.Upper)
		if !loPast && !hiPast {
			return nil, false
		}
		lower := sql.Expression(expression.NewGreaterThanOrEqual(b.Val, b.Lower))
		if loPast {
			lower = expression.NewGreaterThanOrEqual(b.Val, lo)
		}
		upper := sql.Expression(expression.NewLessThanOrEqual(b.Val, b.Upper))
		if hiPast {
			upper = expression.NewLessThan(b.Val, hi)
		}
		return expression.NewAnd(lower, upper), true
	}
	children := e.Children()
	if len(children) != 2 {
		return nil, false
	}
	col, next, flipped := children[0], sql.Expression(nil), false
	if n, ok := pastMonthEndLiteral(children[1]); ok && isDatetime(ctx, children[0]) {
		next = n
	} else if n, ok := pastMonthEndLiteral(children[0]); ok && isDatetime(ctx, children[1]) {
		col, next, flipped = children[1], n, true
	} else {
		return nil, false
	}
	switch e.(type) {
	case *expression.Equals: // never equal; NULL stays NULL
		return expression.NewAnd(expression.NewLessThan(col, next), expression.NewGreaterThanOrEqual(col, next)), true
	case *expression.NullSafeEquals:
		return expression.NewLiteral(false, types.Boolean), true
	case *expression.GreaterThan, *expression.GreaterThanOrEqual:
		if flipped { // X > col: col < X
			return expression.NewLessThan(col, next), true
		}
		return expression.NewGreaterThanOrEqual(col, next), true
	case *expression.LessThan, *expression.LessThanOrEqual:
		if flipped { // X < col: col > X
			return expression.NewGreaterThanOrEqual(col, next), true
		}
		return expression.NewLessThan(col, next), true
	}
	return nil, false
}
