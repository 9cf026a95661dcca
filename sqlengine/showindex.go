package sqlengine

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/certusdb/certus/internal/sqllex"
)

// showIndexes answers SHOW INDEX as MySQL does where go-mysql-server
// leaves columns empty: Collation A (every key is ascending), Sub_part the
// length of a prefix key part, Cardinality the table's estimated row count
// at the last part of a unique key (NULL where Certus keeps no estimate,
// as MySQL shows for a table without statistics), Index_comment the
// index's comment (go-mysql-server put it under Comment).
func showIndexes(ctx *sql.Context, cat sql.Catalog, n *plan.ShowIndexes) (sql.RowIter, error) {
	rt, ok := n.Child.(*plan.ResolvedTable)
	if !ok {
		return nil, nil // go-mysql-server's own answer
	}
	cond, err := showIndexWhere(ctx, cat, n, rt.Name())
	if err != nil {
		return nil, err
	}
	var rows uint64
	if st, ok := rt.UnderlyingTable().(sql.StatisticsTable); ok {
		rows, _, _ = st.RowCount(ctx)
	}
	var out []sql.Row
	for _, idx := range n.IndexesToShow {
		exprs := idx.Expressions()
		prefixes := idx.PrefixLengths()
		nonUnique := 1
		if idx.IsUnique() {
			nonUnique = 0
		}
		for pos, e := range exprs {
			var column, expr any = nil, e
			null := ""
			if col := plan.GetColumnFromIndexExpr(ctx, e, rt); col != nil {
				column, expr = col.Name, nil
				if col.Nullable {
					null = "YES"
				}
			}
			var cardinality, subPart any
			if idx.IsUnique() && pos == len(exprs)-1 {
				cardinality = int64(rows)
			}
			if pos < len(prefixes) && prefixes[pos] > 0 {
				subPart = int64(prefixes[pos])
			}
			row := sql.NewRow(idx.Table(), nonUnique, idx.ID(), pos+1, column, "A",
				cardinality, subPart, nil, null, idx.IndexType(), "", idx.Comment(), "YES", expr)
			if cond != nil {
				if ok, err := sql.EvaluateCondition(ctx, cond, row); err != nil {
					return nil, err
				} else if !sql.IsTrue(ok) {
					continue
				}
			}
			out = append(out, row)
		}
	}
	return sql.RowsToRowIter(out...), nil
}

// showIndexWhere returns SHOW INDEX's WHERE condition, built against n's
// columns, or nil when the statement has none. go-mysql-server's planner
// drops the condition (plan.ShowIndexes has no place for it), so every
// index was listed whatever it asked: a migration that checks
// `SHOW INDEX FROM t WHERE Key_name = 'idx'` before creating idx never
// created it. The condition is read again from the statement's text.
func showIndexWhere(ctx *sql.Context, cat sql.Catalog, n *plan.ShowIndexes, table string) (cond sql.Expression, err error) {
	where := showIndexCondition(ctx.Query(), table)
	if where == nil {
		return nil, nil
	}
	sch := n.Schema(ctx)
	// the columns a condition may name, as a derived table to build it on
	var cols []string
	for _, c := range sch {
		zero := "''"
		if types.IsNumber(c.Type) {
			zero = "0"
		}
		cols = append(cols, fmt.Sprintf("%s AS `%s`", zero, c.Name))
	}
	stmt, err := ast.Parse("SELECT 1 FROM (SELECT " + strings.Join(cols, ", ") + ") AS show_index")
	if err != nil {
		return nil, err
	}
	var unknown string
	subquery := false
	_ = ast.Walk(func(node ast.SQLNode) (bool, error) {
		switch node := node.(type) {
		case *ast.Subquery:
			subquery = true
			return false, nil
		case *ast.ColName:
			if unknown == "" && sch.IndexOfColName(node.Name.String()) < 0 {
				unknown = node.Name.String()
			}
		}
		return true, nil
	}, where)
	if unknown != "" {
		return nil, sql.ErrColumnNotFound.New(unknown)
	}
	if subquery { // the condition is evaluated row by row, unanalyzed
		return nil, mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of MySQL doesn't yet support 'subqueries in SHOW INDEX ... WHERE'")
	}
	defer func() {
		if r := recover(); r != nil { // the planbuilder reports by panicking
			cond, err = nil, fmt.Errorf("SHOW INDEX ... WHERE: %v", r)
		}
	}()
	b := planbuilder.New(ctx, cat, nil)
	b.DisableAuth()
	cond = b.BuildScalarWithTable(where, stmt.(*ast.Select).From[0])
	cond, _, err = transform.Expr(ctx, cond, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if gf, ok := e.(*expression.GetField); ok {
			return gf.WithIndex(sch.IndexOfColName(gf.Name())), transform.NewTree, nil
		}
		return e, transform.SameTree, nil
	})
	return cond, err
}

// showIndexCondition finds, among the statements of query, the SHOW
// INDEX of table and returns its WHERE condition (nil if it has none).
func showIndexCondition(query, table string) ast.Expr {
	if !sqllex.ContainsFold(query, "where") {
		return nil
	}
	pieces, err := ast.SplitStatementToPieces(query)
	if err != nil {
		return nil
	}
	for _, p := range pieces {
		stmt, err := ast.Parse(p)
		if err != nil {
			continue
		}
		if s, ok := stmt.(*ast.Show); ok && s.ShowIndexFilterOpt != nil && strings.EqualFold(s.Table.Name.String(), table) {
			return s.ShowIndexFilterOpt
		}
	}
	return nil
}
