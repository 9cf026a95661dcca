package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
)

// priorityBuilder is go-mysql-server's exec builder's priority builder:
// it builds the few nodes whose answers Certus gives as MySQL does
// (EXPLAIN, SHOW INDEX), has base build a node whose expressions compare
// a date with an integer with the integer read as a date (numericdate.go),
// and leaves every other node to go-mysql-server (a nil iterator).
type priorityBuilder struct {
	base sql.NodeExecBuilder
}

// Build implements sql.NodeExecBuilder.
func (b *priorityBuilder) Build(ctx *sql.Context, n sql.Node, row sql.Row) (sql.RowIter, error) {
	switch n := n.(type) {
	case *plan.DescribeQuery:
		if it, ok := explain(ctx, n); ok {
			return it, nil
		}
	case *plan.ShowIndexes:
		return showIndexes(ctx, n)
	case sql.Expressioner:
		exprs := n.Expressions()
		var out []sql.Expression
		for i, e := range exprs {
			d, same, err := numericDates(ctx, e)
			if err != nil || same {
				continue
			}
			if out == nil {
				out = append([]sql.Expression(nil), exprs...)
			}
			out[i] = d
		}
		if out != nil {
			m, err := n.WithExpressions(ctx, out...)
			if err != nil {
				return nil, err
			}
			return b.base.Build(ctx, m, row)
		}
	}
	return nil, nil
}
