package sqlengine

import (
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// showColumns answers SHOW [FULL] COLUMNS (FIELDS) with go-mysql-server's
// rows, corrected where MySQL's differ: Type is the column type alone
// (go-mysql-server appended "COLLATE ..."), Collation is the column's
// (go-mysql-server gave utf8mb4_0900_bin for every text column) and
// Privileges lists what MySQL lists for a user with all of them. building
// holds the nodes being built by go-mysql-server itself, so that its call
// back into the priority builder returns nil.
func showColumns(ctx *sql.Context, building *sync.Map, base sql.NodeExecBuilder, n *plan.ShowColumns, row sql.Row) (sql.RowIter, error) {
	if _, inner := building.Load(n); inner {
		return nil, nil
	}
	cp := *n
	building.Store(&cp, true)
	it, err := base.Build(ctx, &cp, row)
	building.Delete(&cp)
	if err != nil {
		return nil, err
	}
	var cols []*sql.Column
	for _, c := range n.TargetSchema() {
		if !c.HiddenSystem || n.Extended {
			cols = append(cols, c)
		}
	}
	return &showColumnsRows{src: it, cols: cols, full: n.Full}, nil
}

// showColumnsRows corrects go-mysql-server's rows of SHOW COLUMNS; cols
// are the columns they describe, in order.
type showColumnsRows struct {
	src  sql.RowIter
	cols []*sql.Column
	full bool
	i    int
}

// Next implements sql.RowIter.
func (it *showColumnsRows) Next(ctx *sql.Context) (sql.Row, error) {
	r, err := it.src.Next(ctx)
	if err != nil || it.i >= len(it.cols) || len(r) < 2 {
		return r, err
	}
	c := it.cols[it.i]
	it.i++
	if s, ok := r[1].(string); ok {
		r[1] = bareType(s)
	}
	if it.full && len(r) >= 8 {
		r[2] = columnCollation(c.Type)
		r[7] = "select,insert,update,references"
	}
	return r, nil
}

// Close implements sql.RowIter.
func (it *showColumnsRows) Close(ctx *sql.Context) error { return it.src.Close(ctx) }

// bareType is a column type as go-mysql-server prints it without the
// character set and collation it appends.
func bareType(s string) string {
	for _, clause := range []string{" CHARACTER SET ", " COLLATE "} {
		if i := strings.Index(s, clause); i >= 0 {
			s = s[:i]
		}
	}
	return s
}

// columnCollation is the collation SHOW FULL COLUMNS gives a column of type
// t: its own for text, ENUM and SET, NULL for the others.
func columnCollation(t sql.Type) any {
	st, ok := t.(sql.TypeWithCollation)
	if !ok || types.IsBinaryType(t) {
		return nil
	}
	return st.Collation().Name()
}
