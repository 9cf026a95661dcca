package mysqlexpr

import (
	"fmt"
	"strconv"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// Comparisons of a DATE, DATETIME or TIMESTAMP with an integer constant,
// as MySQL makes them: the number is a date (YYYYMMDD, YYMMDD,
// YYYYMMDDhhmmss, YYMMDDhhmmss; 0 is the zero date), so `WHERE d > 0`
// (the old idiom for "has a date") and `d BETWEEN 20240101 AND 20241231`
// find their rows. go-mysql-server converts such a number to NULL, and the
// comparison found nothing, silently. The constant is rewritten as the
// date string it stands for, which go-mysql-server compares as a date:
// in the filters the index costing sees (betweenAsRange) and in the
// expressions of every node the executor builds (priorityBuilder).

// ComparesIntLiteral reports, without a context, whether e is a
// comparison one of whose operands is an integer constant: the only kind
// NumericDates may rewrite (the index costing asks for every filter).
func ComparesIntLiteral(e sql.Expression) bool {
	if !isComparison(e) {
		return false
	}
	for _, c := range e.Children() {
		if tuple, ok := c.(expression.Tuple); ok {
			for _, item := range tuple {
				if isIntLiteral(item) {
					return true
				}
			}
		}
		if isIntLiteral(c) {
			return true
		}
	}
	return false
}

// isComparison reports whether e compares values: =, <=>, <, <=, >, >=,
// BETWEEN or IN.
func isComparison(e sql.Expression) bool {
	switch e.(type) {
	case *expression.Equals, *expression.NullSafeEquals, *expression.GreaterThan, *expression.GreaterThanOrEqual,
		*expression.LessThan, *expression.LessThanOrEqual, *expression.Between, *expression.InTuple:
		return true
	}
	return false
}

func isIntLiteral(e sql.Expression) bool {
	lit, ok := e.(*expression.Literal)
	return ok && types.IsInteger(lit.Type(nil))
}

// NumericDates rewrites the integer constants compared with a date or
// time in e, and the comparisons with a date past its month's end
// (monthend.go).
func NumericDates(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	return transform.Expr(ctx, e, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if ComparesPastMonthEnd(e) {
			if m, ok := monthEndCompare(ctx, e); ok {
				return m, transform.NewTree, nil
			}
			return e, transform.SameTree, nil
		}
		if !ComparesIntLiteral(e) {
			return e, transform.SameTree, nil
		}
		children := e.Children()
		if !isDatetime(ctx, children[0]) {
			// a constant on the left: 0 < d
			if len(children) != 2 || !isDatetime(ctx, children[1]) {
				return e, transform.SameTree, nil
			}
			if d, ok := dateLiteral(children[0]); ok {
				return withChild(ctx, e, 0, d)
			}
			return e, transform.SameTree, nil
		}
		out := append([]sql.Expression(nil), children...)
		changed := false
		for i := 1; i < len(out); i++ {
			if d, ok := dateLiteral(out[i]); ok {
				out[i], changed = d, true
				continue
			}
			if tuple, ok := out[i].(expression.Tuple); ok { // IN (...)
				items := append([]sql.Expression(nil), tuple...)
				for j, item := range items {
					if d, ok := dateLiteral(item); ok {
						items[j], changed = d, true
					}
				}
				out[i] = expression.NewTuple(items...)
			}
		}
		if !changed {
			return e, transform.SameTree, nil
		}
		n, err := e.WithChildren(ctx, out...)
		if err == nil && ComparesPastMonthEnd(n) { // 20240231
			if m, ok := monthEndCompare(ctx, n); ok {
				return m, transform.NewTree, nil
			}
		}
		return n, transform.NewTree, err
	})
}

func withChild(ctx *sql.Context, e sql.Expression, i int, c sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	children := append([]sql.Expression(nil), e.Children()...)
	children[i] = c
	n, err := e.WithChildren(ctx, children...)
	return n, transform.NewTree, err
}

// isDatetime reports whether e is a DATE, DATETIME or TIMESTAMP.
func isDatetime(ctx *sql.Context, e sql.Expression) bool {
	return types.IsTime(e.Type(ctx))
}

// dateLiteral is the date string literal an integer constant e stands
// for in a date context; ok is false for anything else.
func dateLiteral(e sql.Expression) (sql.Expression, bool) {
	if !isIntLiteral(e) {
		return nil, false
	}
	var s string
	lit := e.(*expression.Literal)
	switch v := lit.Value().(type) {
	case int8, int16, int32, int64, uint8, uint16, uint32, uint64:
		s = fmt.Sprint(v)
	default:
		return nil, false
	}
	d, ok := numberAsDate(s)
	if !ok {
		return nil, false
	}
	return expression.NewLiteral(d, types.LongText), true
}

// numberAsDate reads the digits of a non-negative integer as MySQL reads a
// number in a date context.
func numberAsDate(digits string) (string, bool) {
	if digits == "0" {
		return "0000-00-00", true
	}
	var y, mo, d, h, mi, sec int
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	year2 := func(s string) int { // 70-99: 19xx, 00-69: 20xx
		if v := n(s); v >= 70 {
			return 1900 + v
		}
		return 2000 + n(s)
	}
	switch len(digits) {
	case 6:
		y, mo, d = year2(digits[:2]), n(digits[2:4]), n(digits[4:6])
	case 8:
		y, mo, d = n(digits[:4]), n(digits[4:6]), n(digits[6:8])
	case 12:
		y, mo, d, h, mi, sec = year2(digits[:2]), n(digits[2:4]), n(digits[4:6]), n(digits[6:8]), n(digits[8:10]), n(digits[10:12])
	case 14:
		y, mo, d, h, mi, sec = n(digits[:4]), n(digits[4:6]), n(digits[6:8]), n(digits[8:10]), n(digits[10:12]), n(digits[12:14])
	default:
		return "", false
	}
	if mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59 {
		return "", false
	}
	if len(digits) <= 8 {
		return fmt.Sprintf("%04d-%02d-%02d", y, mo, d), true
	}
	return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", y, mo, d, h, mi, sec), true
}
