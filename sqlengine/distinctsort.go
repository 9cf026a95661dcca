package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
)

// ORDER BY over SELECT DISTINCT. go-mysql-server sorts the DISTINCT's rows
// with the ORDER BY's expressions as written against the table: `SELECT
// DISTINCT v+1 FROM t ORDER BY 1` failed with 1105 "unable to find field
// with index 2 in row of 1 columns", and `SELECT DISTINCT id % 2, 'x' FROM
// t ORDER BY 1` came back unsorted (the expression read the wrong column
// of the DISTINCT's row). A sort expression that is one of the selected
// expressions is a reference to that column of the DISTINCT's row, as
// MySQL evaluates it.

// sortOverDistinct returns n (a Sort or TopN) with its fields rewritten
// to read the columns of the DISTINCT below it, or nil when nothing needs
// rewriting.
func sortOverDistinct(ctx *sql.Context, n sql.Node) sql.Node {
	var fields sql.SortFields
	var child sql.Node
	switch n := n.(type) {
	case *plan.Sort:
		fields, child = n.SortFields, n.Child
	case *plan.TopN:
		fields, child = n.Fields, n.Child
	default:
		return nil
	}
	d, ok := child.(*plan.Distinct)
	if !ok {
		return nil
	}
	p, ok := d.Child.(*plan.Project)
	if !ok {
		return nil
	}
	sch := d.Schema(ctx)
	var out sql.SortFields
	for i, f := range fields {
		if _, column := f.Column.(*expression.GetField); column {
			continue // go-mysql-server resolves plain columns by name
		}
		key := unaliased(f.Column).String()
		for j, pe := range p.Projections {
			if j >= len(sch) || unaliased(pe).String() != key {
				continue
			}
			if out == nil {
				out = append(sql.SortFields(nil), fields...)
			}
			out[i].Column = expression.NewGetField(j, sch[j].Type, sch[j].Name, sch[j].Nullable)
			break
		}
	}
	if out == nil {
		return nil
	}
	if t, ok := n.(*plan.TopN); ok {
		m := plan.NewTopN(out, t.Limit, t.Child)
		m.CalcFoundRows = t.CalcFoundRows
		return m
	}
	return plan.NewSort(out, child)
}

// unaliased is e without an alias around it.
func unaliased(e sql.Expression) sql.Expression {
	if a, ok := e.(*expression.Alias); ok {
		return a.Child
	}
	return e
}
