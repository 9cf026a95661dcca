package sqlengine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/information_schema"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// showColumns answers SHOW [FULL] COLUMNS (FIELDS) with go-mysql-server's
// rows (it), corrected where MySQL's differ: Type is the column type alone
// (go-mysql-server appended "COLLATE ..."), Collation is the column's
// (go-mysql-server gave utf8mb4_0900_bin for every text column) and
// Privileges lists what MySQL lists for a user with all of them, and
// Default is the value as information_schema.COLUMNS gives it (x'y, not
// go-mysql-server's literal 'x”y'), and Extra says whether a generated
// column is VIRTUAL or STORED.
func showColumns(n *plan.ShowColumns, it sql.RowIter) sql.RowIter {
	var cols []*sql.Column
	for _, c := range n.TargetSchema() {
		if !c.HiddenSystem || n.Extended {
			cols = append(cols, c)
		}
	}
	return &showColumnsRows{src: it, cols: cols, full: n.Full}
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
	def := 4
	if it.full && len(r) >= 8 {
		r[2] = columnCollation(c.Type)
		r[7] = "select,insert,update,references"
		def = 5
	}
	if c.Default != nil && def < len(r) {
		r[def] = information_schema.GetColumnDefault(ctx, c.Default)
	}
	if c.Generated != nil && def+1 < len(r) {
		r[def+1] = "STORED GENERATED"
		if c.Virtual {
			r[def+1] = "VIRTUAL GENERATED"
		}
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

// showTableStatus corrects go-mysql-server's rows of SHOW TABLE STATUS
// where MySQL's differ: Row_format is Dynamic (InnoDB's default) and
// Auto_increment the value the next insert would take (go-mysql-server
// gave NULL), as information_schema.TABLES has it.
func showTableStatus(ctx *sql.Context, n *plan.ShowTableStatus, it sql.RowIter) sql.RowIter {
	return &mappedRows{RowIter: it, f: func(r sql.Row) {
		if len(r) < 11 {
			return
		}
		r[3] = "Dynamic"
		name, ok := r[0].(string)
		if !ok || n.Database() == nil {
			return
		}
		t, found, err := n.Database().GetTableInsensitive(ctx, name)
		if err != nil || !found || !t.Schema(ctx).HasAutoIncrement() {
			return
		}
		if ai, ok := t.(sql.AutoIncrementTable); ok {
			if next, err := ai.PeekNextAutoIncrementValue(ctx); err == nil {
				r[10] = next
			}
		}
	}}
}

// mappedRows changes each row of a RowIter in place.
type mappedRows struct {
	sql.RowIter
	f func(sql.Row)
}

// Next implements sql.RowIter.
func (it *mappedRows) Next(ctx *sql.Context) (sql.Row, error) {
	r, err := it.RowIter.Next(ctx)
	if err == nil {
		it.f(r)
	}
	return r, err
}
