package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/hash"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
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
	return &collatedRows{child: it, sch: n.Child.Schema(ctx), seen: map[uint64]struct{}{}}, nil
}

// collatedRows passes each row whose hash under the schema's collations
// it has not seen.
type collatedRows struct {
	child sql.RowIter
	sch   sql.Schema
	seen  map[uint64]struct{}
}

// Next implements sql.RowIter.
func (d *collatedRows) Next(ctx *sql.Context) (sql.Row, error) {
	for {
		row, err := d.child.Next(ctx)
		if err != nil {
			return nil, err
		}
		h, err := hash.HashOf(ctx, d.sch, row)
		if err != nil {
			return nil, err
		}
		if _, dup := d.seen[h]; dup {
			continue
		}
		d.seen[h] = struct{}{}
		return row, nil
	}
}

// Close implements sql.RowIter.
func (d *collatedRows) Close(ctx *sql.Context) error {
	d.seen = nil
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
	b := &collatedCountBuffer{exprs: make([]sql.Expression, len(args)), sch: make(sql.Schema, len(args)), seen: map[uint64]struct{}{}}
	for i, a := range args {
		e, err := transform.Clone(ctx, a)
		if err != nil {
			return nil, err
		}
		b.exprs[i], b.sch[i] = e, &sql.Column{Type: e.Type(ctx)}
	}
	return b, nil
}

// WithChildren implements sql.Expression.
func (c *collatedCountDistinct) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	return &collatedCountDistinct{aggregation.NewCountDistinct(children...)}, nil
}

// collatedCountBuffer counts the distinct rows of its expressions' values,
// skipping rows with a NULL, as MySQL's COUNT(DISTINCT) does.
type collatedCountBuffer struct {
	exprs []sql.Expression
	sch   sql.Schema
	seen  map[uint64]struct{}
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
	h, err := hash.HashOf(ctx, b.sch, vals)
	if err != nil {
		return err
	}
	b.seen[h] = struct{}{}
	return nil
}

// Eval implements sql.AggregationBuffer.
func (b *collatedCountBuffer) Eval(*sql.Context) (any, error) { return int64(len(b.seen)), nil }

// Dispose implements sql.AggregationBuffer.
func (b *collatedCountBuffer) Dispose(ctx *sql.Context) {
	for _, e := range b.exprs {
		expression.Dispose(ctx, e)
	}
}
