package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
)

// showIndexes answers SHOW INDEX as MySQL does where go-mysql-server
// leaves columns empty: Collation A (every key is ascending), Sub_part the
// length of a prefix key part, Cardinality the table's estimated row count
// at the last part of a unique key (NULL where Certus keeps no estimate,
// as MySQL shows for a table without statistics), Index_comment the
// index's comment (go-mysql-server put it under Comment).
func showIndexes(ctx *sql.Context, n *plan.ShowIndexes) (sql.RowIter, error) {
	rt, ok := n.Child.(*plan.ResolvedTable)
	if !ok {
		return nil, nil // go-mysql-server's own answer
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
			var column, expression any = nil, e
			null := ""
			if col := plan.GetColumnFromIndexExpr(ctx, e, rt); col != nil {
				column, expression = col.Name, nil
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
			out = append(out, sql.NewRow(idx.Table(), nonUnique, idx.ID(), pos+1, column, "A",
				cardinality, subPart, nil, null, idx.IndexType(), "", idx.Comment(), "YES", expression))
		}
	}
	return sql.RowsToRowIter(out...), nil
}
