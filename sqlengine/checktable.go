package sqlengine

import (
	"context"
	"errors"
	"fmt"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/txn"
)

// checkTables answers CHECK TABLE t [, t ...] [FOR UPGRADE | QUICK | FAST |
// MEDIUM | EXTENDED | CHANGED], which go-mysql-server does not parse
// (mysqlcheck and DBAs run it). It checks each table's storage on this
// node, in one snapshot: every row decodes, and every index holds one
// entry per row, each leading to its row. A user needs SELECT on the
// table, as in MySQL. The answer is MySQL's: Table, Op, Msg_type,
// Msg_text; a last row per table says status OK, or Corrupt after the
// error rows that say what is wrong. handled is false when query is not
// one such statement alone.
func (h *Handler) checkTables(ctx context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	names, ok := tableList(query, []string{"CHECK"}, "FOR UPGRADE", "QUICK", "FAST", "MEDIUM", "EXTENDED", "CHANGED")
	if !ok {
		return false, nil
	}
	s := h.session(c)
	if s == nil {
		return false, nil
	}
	res := &sqltypes.Result{Fields: adminFields()}
	for _, n := range names {
		db, name, err := h.qualified(c, n)
		if err != nil {
			return true, err
		}
		table := db + "." + n.Name.String()
		row := func(typ, msg string) { res.Rows = append(res.Rows, adminRow(table, "check", typ, msg)) }
		// privileges and existence, as the session sees them
		err = h.inner.ComQuery(ctx, c, "SELECT 1 FROM "+name+" WHERE FALSE", func(*sqltypes.Result, bool) error { return nil })
		var se *mysql.SQLError
		if err != nil && errors.As(ToSQLError(err), &se) && se.Number() == mysql.ERNoSuchTable {
			row("Error", "Table '"+table+"' doesn't exist")
			row("status", "Operation failed")
			continue
		}
		if err != nil {
			return true, ToSQLError(err)
		}
		problems, err := checkTable(ctx, s.p.mgr, db, n.Name.String())
		if err != nil {
			return true, ToSQLError(err)
		}
		for _, p := range problems {
			row("error", p)
		}
		if len(problems) > 0 {
			row("error", "Corrupt")
			continue
		}
		row("status", "OK")
	}
	return true, out(res)
}

// checkTable reads table db.name in a snapshot of mgr's storage and
// returns what it finds wrong.
func checkTable(ctx context.Context, mgr *txn.Manager, db, name string) ([]string, error) {
	def, ok := mgr.Engine().Catalog().TableByName(db, name)
	if !ok {
		return []string{"Table '" + db + "." + name + "' doesn't exist"}, nil
	}
	info, err := def.Info()
	if err != nil {
		return []string{err.Error()}, nil
	}
	t := mgr.Begin(txn.Options{ReadOnly: true})
	defer t.Rollback()
	var problems []string
	count := func(ii *storage.IndexInfo) (uint64, error) {
		var it *txn.RowIter
		var err error
		if ii == nil {
			it, err = t.Scan(ctx, info, nil, nil, false, txn.Snapshot)
		} else {
			it, err = t.IndexScan(ctx, info, ii, nil, nil, false, txn.Snapshot)
		}
		if err != nil {
			return 0, err
		}
		defer it.Close()
		var n uint64
		for {
			_, _, ok, err := it.Next()
			if err != nil {
				// a row or an index entry that does not decode
				problems = append(problems, err.Error())
				return n, nil
			}
			if !ok {
				return n, nil
			}
			n++
		}
	}
	rows, err := count(nil)
	if err != nil {
		return nil, err
	}
	for i := range info.Indexes {
		ii := &info.Indexes[i]
		if !ii.Usable {
			continue // FULLTEXT and SPATIAL keys hold no entries
		}
		n, err := count(ii)
		if err != nil {
			return nil, err
		}
		if n != rows {
			problems = append(problems, fmt.Sprintf("Index '%s' leads to %d rows, the table has %d", ii.Def.Name, n, rows))
		}
	}
	return problems, nil
}

// adminFields are the columns of the answer of a table maintenance
// statement (OPTIMIZE, CHECK, ...).
func adminFields() []*querypb.Field {
	text := func(n string) *querypb.Field {
		return &querypb.Field{Name: n, Type: querypb.Type_VARCHAR, Charset: mysql.CharacterSetUtf8, ColumnLength: 255 * 4}
	}
	return []*querypb.Field{text("Table"), text("Op"), text("Msg_type"), text("Msg_text")}
}

// adminRow is a row of a table maintenance statement's answer.
func adminRow(table, op, typ, msg string) []sqltypes.Value {
	return []sqltypes.Value{sqltypes.NewVarChar(table), sqltypes.NewVarChar(op), sqltypes.NewVarChar(typ), sqltypes.NewVarChar(msg)}
}
