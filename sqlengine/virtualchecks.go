package sqlengine

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"
	"github.com/dolthub/go-mysql-server/sql/transform"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// withHiddenChecks gives an INSERT, UPDATE or SHOW CREATE TABLE of a
// table with a virtual generated column the table's CHECK constraints. go-mysql-server wraps
// such a table (plan.VirtualColumnTable) before it loads the checks, and
// the wrapper hides them, so the statement enforced none. Each check is
// built against the table and its columns are numbered as the rows the
// statement checks lay them out: the table's schema. ok is false when n
// needs none.
func withHiddenChecks(ctx *sql.Context, cat sql.Catalog, n sql.Node) (out sql.Node, ok bool, err error) {
	var node sql.CheckConstraintNode
	var dest sql.Node
	switch n := n.(type) {
	case *plan.InsertInto:
		node, dest = n, n.Destination
	case *plan.Update:
		if _, ok := n.Child.(*plan.UpdateSource); !ok {
			return nil, false, nil // UPDATE ... JOIN: rows of several tables
		}
		node, dest = n, n.Child
	case *plan.ShowCreateTable:
		if n.IsView {
			return nil, false, nil
		}
		node, dest = n, n.Child
	default:
		return nil, false, nil
	}
	if len(node.Checks()) > 0 {
		return nil, false, nil
	}
	db, table, ok := hiddenChecks(ctx, dest)
	if !ok {
		return nil, false, nil
	}
	checks, err := buildChecks(ctx, cat, db, table)
	if err != nil || len(checks) == 0 {
		return nil, false, err
	}
	return node.WithChecks(checks), true, nil
}

// hiddenChecks finds the table a statement writes under dest when it is
// wrapped as a VirtualColumnTable and has CHECK constraints.
func hiddenChecks(ctx *sql.Context, dest sql.Node) (db string, table sql.Table, ok bool) {
	var t sql.Table
	transform.Inspect(dest, func(n sql.Node) bool {
		if t != nil {
			return false
		}
		switch n := n.(type) {
		case *plan.ResolvedTable:
			db, t = n.Database().Name(), n.Table
		case *plan.IndexedTableAccess:
			if rt, isRT := n.TableNode.(*plan.ResolvedTable); isRT {
				db, t = rt.Database().Name(), rt.Table
			}
		}
		return t == nil // the first table reached is the one written
	})
	for t != nil {
		if vt, isVT := t.(*plan.VirtualColumnTable); isVT {
			ct, isCT := vt.Underlying().(sql.CheckTable)
			if !isCT {
				return "", nil, false
			}
			defs, err := ct.GetChecks(ctx)
			return db, vt.Underlying(), err == nil && len(defs) > 0
		}
		w, isW := t.(sql.TableWrapper)
		if !isW {
			break
		}
		t = w.Underlying()
	}
	return "", nil, false
}

// buildChecks builds the enforced CHECK constraints of table, with their
// columns numbered by the table's schema.
func buildChecks(ctx *sql.Context, cat sql.Catalog, db string, table sql.Table) (out sql.CheckConstraints, err error) {
	defs, err := table.(sql.CheckTable).GetChecks(ctx)
	if err != nil {
		return nil, err
	}
	sch := table.Schema(ctx)
	defer func() {
		if r := recover(); r != nil { // the planbuilder reports by panicking
			out, err = nil, fmt.Errorf("check constraint of %s: %v", table.Name(), r)
		}
	}()
	for _, def := range defs {
		if !def.Enforced {
			continue
		}
		q := fmt.Sprintf("SELECT %s FROM `%s`.`%s`", def.CheckExpression, db, table.Name())
		stmt, err := ast.Parse(q)
		if err != nil {
			return nil, err
		}
		sel, ok := stmt.(*ast.Select)
		if !ok || len(sel.SelectExprs) != 1 || len(sel.From) != 1 {
			return nil, fmt.Errorf("check constraint %s: unexpected expression %s", def.Name, def.CheckExpression)
		}
		ae, ok := sel.SelectExprs[0].(*ast.AliasedExpr)
		if !ok {
			return nil, fmt.Errorf("check constraint %s: unexpected expression %s", def.Name, def.CheckExpression)
		}
		b := planbuilder.New(ctx, cat, nil)
		b.DisableAuth()
		e := b.BuildScalarWithTable(ae.Expr, sel.From[0])
		e, _, err = transform.Expr(ctx, e, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			gf, ok := e.(*expression.GetField)
			if !ok {
				return e, transform.SameTree, nil
			}
			for i, c := range sch {
				if strings.EqualFold(c.Name, gf.Name()) {
					return gf.WithIndex(i), transform.NewTree, nil
				}
			}
			return nil, transform.SameTree, fmt.Errorf("check constraint %s: unknown column %s", def.Name, gf.Name())
		})
		if err != nil {
			return nil, err
		}
		out = append(out, &sql.CheckConstraint{Name: def.Name, Expr: storedCheck{e, def.CheckExpression}, Enforced: true})
	}
	return out, nil
}

// storedCheck is a built check that prints as its table stores it (SHOW
// CREATE TABLE prints the expression).
type storedCheck struct {
	sql.Expression
	text string
}

// String implements sql.Expression.
func (c storedCheck) String() string { return c.text }
