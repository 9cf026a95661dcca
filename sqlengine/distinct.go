package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"

	"github.com/certusdb/certus/sqlengine/internal/collate"
)

// SELECT DISTINCT (and UNION, which is a DISTINCT over UNION ALL) compares
// rows by their columns' collations, as GROUP BY already did:
// go-mysql-server hashed the raw values, so with the default
// utf8mb4_0900_ai_ci 'Apple' and 'apple' were two rows where MySQL
// returns one.

// collatedDistinct builds n (a DISTINCT without DISTINCT ON) over its
// child's rows, built by base.
func collatedDistinct(ctx *sql.Context, base sql.NodeExecBuilder, n *plan.Distinct, row sql.Row) (sql.RowIter, error) {
	it, err := base.Build(ctx, n.Child, row)
	if err != nil {
		return nil, err
	}
	return &collatedRows{child: it, set: collate.NewSetOf(n.Child.Schema(ctx))}, nil
}

// collatedRows passes each row its set has not seen.
type collatedRows struct {
	child sql.RowIter
	set   *collate.Set
}

// Next implements sql.RowIter.
func (d *collatedRows) Next(ctx *sql.Context) (sql.Row, error) {
	for {
		row, err := d.child.Next(ctx)
		if err != nil {
			return nil, err
		}
		if fresh, err := d.set.Add(ctx, row); err != nil || fresh {
			return row, err
		}
	}
}

// Close implements sql.RowIter.
func (d *collatedRows) Close(ctx *sql.Context) error {
	d.set = nil
	return d.child.Close(ctx)
}

// COUNT(DISTINCT ...) counts values that compare equal under their
// collation once, as MySQL does: go-mysql-server's buffer hashed each
// value's text, so 'Apple' and 'apple' counted twice under the default
// utf8mb4_0900_ai_ci. Its aggregation is built by the planner, so the
// priority builder swaps it in the expressions it builds.

// collatedCounts replaces every COUNT(DISTINCT ...) of e (not one over a
// window) with collatedCountDistinct.
func collatedCounts(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	return transform.Expr(ctx, e, func(_ *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if cd, ok := e.(*aggregation.CountDistinct); ok && cd.Window() == nil {
			return &collatedCountDistinct{cd}, transform.NewTree, nil
		}
		return e, transform.SameTree, nil
	})
}

// collatedCountDistinct is go-mysql-server's COUNT(DISTINCT ...) with a
// buffer that hashes the values under their types' collations.
type collatedCountDistinct struct {
	*aggregation.CountDistinct
}

// NewBuffer implements sql.Aggregation.
func (c *collatedCountDistinct) NewBuffer(ctx *sql.Context) (sql.AggregationBuffer, error) {
	args := c.Children()
	exprs, types := make([]sql.Expression, len(args)), make([]sql.Type, len(args))
	for i, a := range args {
		e, err := transform.Clone(ctx, a)
		if err != nil {
			return nil, err
		}
		exprs[i], types[i] = e, e.Type(ctx)
	}
	return &collatedCountBuffer{exprs: exprs, set: collate.NewSet(types)}, nil
}

// WithChildren implements sql.Expression.
func (c *collatedCountDistinct) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	return &collatedCountDistinct{aggregation.NewCountDistinct(children...)}, nil
}

// collatedCountBuffer counts the distinct rows of its expressions' values,
// skipping rows with a NULL, as MySQL's COUNT(DISTINCT) does.
type collatedCountBuffer struct {
	exprs []sql.Expression
	set   *collate.Set
}

// Update implements sql.AggregationBuffer.
func (b *collatedCountBuffer) Update(ctx *sql.Context, row sql.Row) error {
	vals := make(sql.Row, len(b.exprs))
	for i, e := range b.exprs {
		v, err := e.Eval(ctx, row)
		if err != nil || v == nil {
			return err
		}
		vals[i] = v
	}
	_, err := b.set.Add(ctx, vals)
	return err
}

// Eval implements sql.AggregationBuffer.
func (b *collatedCountBuffer) Eval(*sql.Context) (any, error) { return int64(b.set.Len()), nil }

// Dispose implements sql.AggregationBuffer.
func (b *collatedCountBuffer) Dispose(ctx *sql.Context) {
	for _, e := range b.exprs {
		expression.Dispose(ctx, e)
	}
}

// collatedUnion returns n, a UNION DISTINCT, as the same UNION ALL under a
// DISTINCT (which the priority builder builds with the columns'
// collations), then n's ORDER BY, OFFSET and LIMIT in that order; nil for
// any other node. go-mysql-server's UNION hashed the raw values: `SELECT s
// FROM t UNION SELECT UPPER(s) FROM t` returned 'a' and 'A' under the
// default case-insensitive collation. It also skipped the OFFSET's rows
// before it sorted, so `... ORDER BY 1 DESC LIMIT 1 OFFSET 1` did not give
// the second row.
func collatedUnion(n sql.Node) sql.Node {
	s, ok := n.(*plan.SetOp)
	if !ok || s.SetOpType != plan.UnionType || !s.Distinct {
		return nil
	}
	all := *s
	all.Distinct, all.Limit, all.Offset, all.SortFields = false, nil, nil, nil
	var out sql.Node = plan.NewDistinct(&all)
	if len(s.SortFields) > 0 {
		out = plan.NewSort(s.SortFields, out)
	}
	if s.Offset != nil {
		out = plan.NewOffset(s.Offset, out)
	}
	if s.Limit != nil {
		out = plan.NewLimit(s.Limit, out)
	}
	return out
}
