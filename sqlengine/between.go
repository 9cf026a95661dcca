package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"

	"github.com/certusdb/certus/sqlengine/internal/mysqlexpr"
)

// betweenAsRange is the analyzer's walker of filters when it chooses an
// index scan: it shows `x BETWEEN a AND b` as `x >= a AND x <= b`, which
// is its definition. go-mysql-server's index costing knows only the
// comparisons; its SELECTs get BETWEEN rewritten by an earlier rule that
// the short rule lists of single-table UPDATE and DELETE skip. Without
// this, `UPDATE t ... WHERE id BETWEEN 5 AND 10` scanned, and locked,
// every row of t.
type betweenAsRange struct{}

// Next implements sql.ExpressionTreeFilter. It also shows an integer
// compared with a date as the date it stands for (mysqlexpr.NumericDates), and a
// date past its month's end as MySQL compares it (mysqlexpr.ComparesPastMonthEnd), so the
// index ranges hold the rows the filter keeps.
func (betweenAsRange) Next(e sql.Expression) sql.Expression {
	if b, ok := e.(*expression.Between); ok {
		e = expression.NewAnd(
			expression.NewGreaterThanOrEqual(b.Val, b.Lower),
			expression.NewLessThanOrEqual(b.Val, b.Upper))
	}
	if mysqlexpr.ComparesIntLiteral(e) || mysqlexpr.ComparesPastMonthEnd(e) {
		if d, same, err := mysqlexpr.NumericDates(sql.NewEmptyContext(), e); err == nil && !same {
			return d
		}
	}
	return e
}
