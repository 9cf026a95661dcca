package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
)

// priorityBuilder is go-mysql-server's exec builder's priority builder:
// it builds the few nodes whose answers Certus gives as MySQL does
// (EXPLAIN, SHOW INDEX) and leaves every other node to go-mysql-server
// (a nil iterator).
type priorityBuilder struct{}

// Build implements sql.NodeExecBuilder.
func (priorityBuilder) Build(ctx *sql.Context, n sql.Node, _ sql.Row) (sql.RowIter, error) {
	switch n := n.(type) {
	case *plan.DescribeQuery:
		if it, ok := explain(ctx, n); ok {
			return it, nil
		}
	case *plan.ShowIndexes:
		return showIndexes(ctx, n)
	}
	return nil, nil
}
