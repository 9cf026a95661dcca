package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
)

// exprsWithSubqueries applies f to every expression of n and, through the
// plan.Subquery expressions, of the queries they hold: what Certus's
// analyzer rules rewrite must be rewritten inside subqueries too, which
// transform.NodeExprsWithOpaque does not enter.
func exprsWithSubqueries(ctx *sql.Context, n sql.Node, f transform.ExprFunc) (sql.Node, transform.TreeIdentity, error) {
	return transform.NodeExprsWithOpaque(ctx, n, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if sq, ok := e.(*plan.Subquery); ok {
			q, same, err := exprsWithSubqueries(ctx, sq.Query, f)
			if err != nil || same {
				return e, transform.SameTree, err
			}
			return sq.WithQuery(q), transform.NewTree, nil
		}
		return f(ctx, e)
	})
}
