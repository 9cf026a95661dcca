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
	i := 0 // the rows describe cols, in order
	return &mappedRows{RowIter: it, f: func(ctx *sql.Context, r sql.Row) error {
		if i >= len(cols) || len(r) < 2 {
			return nil
		}
		c := cols[i]
		i++
		if s, ok := r[1].(string); ok {
			r[1] = bareType(s)
		}
		def := 4
		if n.Full && len(r) >= 8 {
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
		return nil
	}}
}

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
func showTableStatus(n *plan.ShowTableStatus, it sql.RowIter) sql.RowIter {
	return &mappedRows{RowIter: it, f: func(ctx *sql.Context, r sql.Row) error {
		if len(r) < 11 {
			return nil
		}
		r[3] = "Dynamic"
		name, ok := r[0].(string)
		if !ok || n.Database() == nil {
			return nil
		}
		t, found, err := n.Database().GetTableInsensitive(ctx, name)
		if err != nil || !found || !t.Schema(ctx).HasAutoIncrement() {
			return nil
		}
		if ai, ok := t.(sql.AutoIncrementTable); ok {
			if next, err := ai.PeekNextAutoIncrementValue(ctx); err == nil {
				r[10] = next
			}
		}
		return nil
	}}
}

// mappedRows changes each row of a RowIter in place with f, which may
// fail the statement.
type mappedRows struct {
	sql.RowIter
	f func(*sql.Context, sql.Row) error
}

// Next implements sql.RowIter.
func (it *mappedRows) Next(ctx *sql.Context) (sql.Row, error) {
	r, err := it.RowIter.Next(ctx)
	if err != nil {
		return r, err
	}
	if err := it.f(ctx, r); err != nil {
		return nil, err
	}
	return r, nil
}
