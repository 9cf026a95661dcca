package sqlengine

import (
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"

	"github.com/certusdb/certus/sqlengine/internal/mysqlexpr"
)

// priorityBuilder is go-mysql-server's exec builder's priority builder:
// it refuses foreign keys with SET DEFAULT (refuseSetDefault), builds the
// few nodes whose answers Certus gives as MySQL does
// (EXPLAIN, SHOW INDEX), corrects go-mysql-server's rows of SHOW COLUMNS
// and SHOW TABLE STATUS (showcolumns.go), has base build a node whose expressions compare
// a date with an integer with the integer read as a date (mysqlexpr.NumericDates)
// and INSERTs and UPDATEs with the strings they store into numeric
// columns checked (strictnum.go) and the CHECK constraints that a table
// with virtual columns hid (virtualchecks.go), raises the note of a CREATE
// TABLE IF NOT EXISTS that creates nothing (diagnostics.go), builds DISTINCT,
// UNION and COUNT(DISTINCT) with the columns' collations (distinct.go) and an
// ORDER BY over a DISTINCT on its columns (distinctsort.go), and
// leaves every other node to go-mysql-server (a nil iterator).
type priorityBuilder struct {
	base sql.NodeExecBuilder
	cat  sql.Catalog
	// building are the copies of nodes go-mysql-server is building for
	// this builder to correct their rows (see copyToCorrect)
	building sync.Map
}

// copyToCorrect returns a copy of n for go-mysql-server to build (see
// baseBuild), so that this builder can correct the rows it gives; ok is
// false when n is such a copy already.
func (b *priorityBuilder) copyToCorrect(n sql.Node) (cp sql.Node, ok bool) {
	if _, building := b.building.Load(n); building {
		return nil, false
	}
	switch n := n.(type) {
	case *plan.ShowColumns:
		c := *n
		return &c, true
	case *plan.ShowTableStatus:
		c := *n
		return &c, true
	}
	return nil, false
}

// baseBuild has go-mysql-server build cp, a copy from copyToCorrect.
func (b *priorityBuilder) baseBuild(ctx *sql.Context, cp sql.Node, row sql.Row) (sql.RowIter, error) {
	b.building.Store(cp, true)
	defer b.building.Delete(cp)
	return b.base.Build(ctx, cp, row)
}

// Build implements sql.NodeExecBuilder.
func (b *priorityBuilder) Build(ctx *sql.Context, n sql.Node, row sql.Row) (sql.RowIter, error) {
	if err := refuseSetDefault(n); err != nil {
		return nil, err
	}
	if err := cycle(ctx, n); err != nil {
		return nil, err
	}
	switch n := n.(type) {
	case *plan.Call:
		if it, handled, err := b.buildCall(ctx, n, row); handled {
			return it, err
		}
	case *plan.RecursiveCte:
		countCycles(ctx, n)
	case *plan.Truncate:
		if err := truncatesTable(ctx, n); err != nil {
			return nil, err
		}
	}
	emitDeferred(ctx)
	if m, ok, err := withHiddenChecks(ctx, b.cat, n); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return b.base.Build(ctx, m, row)
	}
	if ct, ok := n.(*plan.CreateTable); ok {
		noteTableExists(ctx, ct)
	}
	if d, ok := n.(*plan.Distinct); ok && len(d.DistinctOn()) == 0 {
		return collatedDistinct(ctx, b.base, d, row)
	}
	if m := sortOverDistinct(ctx, n); m != nil {
		return b.base.Build(ctx, m, row)
	}
	if m := collatedUnion(n); m != nil {
		return b.base.Build(ctx, m, row)
	}
	switch n := n.(type) {
	case *plan.DescribeQuery:
		if it, ok := explain(ctx, n); ok {
			return it, nil
		}
	case *plan.ShowIndexes:
		return showIndexes(ctx, b.cat, n)
	case *plan.ShowColumns:
		if cp, ok := b.copyToCorrect(n); ok {
			cp := cp.(*plan.ShowColumns)
			it, err := b.baseBuild(ctx, cp, row)
			if err != nil {
				return nil, err
			}
			return showColumns(n, it), nil
		}
	case *plan.ShowTableStatus:
		if cp, ok := b.copyToCorrect(n); ok {
			it, err := b.baseBuild(ctx, cp, row)
			if err != nil {
				return nil, err
			}
			return showTableStatus(n, it), nil
		}
	case *plan.InsertInto:
		if ii := checkedInsert(ctx, n); ii != nil {
			return b.base.Build(ctx, ii, row)
		}
	case *strictInsertSource:
		src, err := b.base.Build(ctx, n.Child, row)
		if err != nil {
			return nil, err
		}
		return checkRows(ctx, n, src), nil
	case sql.Expressioner:
		exprs := n.Expressions()
		var out []sql.Expression
		for i, e := range exprs {
			d, same, err := mysqlexpr.NumericDates(ctx, e)
			if err != nil {
				continue
			}
			for _, rewrite := range mysqlexpr.ExprRewrites {
				if r, rs, err := rewrite(ctx, d); err == nil && !rs {
					d, same = r, false
				}
			}
			if _, grouped := n.(*plan.GroupBy); grouped { // where COUNT(DISTINCT) is aggregated
				if c, cs, err := collatedCounts(ctx, d); err == nil && !cs {
					d, same = c, cs
				}
			}
			if same {
				continue
			}
			if out == nil {
				out = append([]sql.Expression(nil), exprs...)
			}
			out[i] = d
		}
		var counted *int64
		if u, ok := n.(*plan.UpdateSource); ok {
			assigned := exprs
			if out != nil {
				assigned = out
			}
			counted = new(int64)
			if checked := checkedAssignments(ctx, u, assigned, counted); checked != nil {
				out = checked
			} else {
				counted = nil
			}
		}
		if out != nil {
			m, err := n.WithExpressions(ctx, out...)
			if err != nil {
				return nil, err
			}
			it, err := b.base.Build(ctx, m, row)
			if counted != nil && err == nil {
				it = &countedRows{RowIter: it, row: counted}
			}
			return it, err
		}
	}
	return nil, nil
}
