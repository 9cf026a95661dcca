package sqlengine

import (
	"context"
	"errors"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
)

// optimizeTables answers OPTIMIZE [NO_WRITE_TO_BINLOG | LOCAL] TABLE t
// [, t ...], which go-mysql-server does not parse: each table's rows and
// index entries are compacted on this node's disk, dropping the versions
// that updates and deletes left behind (what the statement is for on
// InnoDB). The rows do not change, so nothing is replicated: run it on
// each node. A user needs SELECT and INSERT on the table, as in MySQL.
// The answer is MySQL's: Table, Op, Msg_type, Msg_text, per table.
// handled is false when query is not one such statement alone.
func (h *Handler) optimizeTables(ctx context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	names, ok := tableList(query, []string{"OPTIMIZE", "NO_WRITE_TO_BINLOG", "LOCAL"})
	if !ok {
		return false, nil
	}
	s := h.session(c)
	if s == nil {
		return false, nil
	}
	res := &sqltypes.Result{Fields: adminFields()}
	row := func(table, typ, msg string) { res.Rows = append(res.Rows, adminRow(table, "optimize", typ, msg)) }
	for _, n := range names {
		db, name, err := h.qualified(c, n)
		if err != nil {
			return true, err
		}
		table := db + "." + n.Name.String()
		// privileges and existence, as the session sees them
		err = h.inner.ComQuery(ctx, c, "INSERT INTO "+name+" SELECT * FROM "+name+" WHERE FALSE", func(*sqltypes.Result, bool) error { return nil })
		var se *mysql.SQLError
		if err != nil && errors.As(ToSQLError(err), &se) && se.Number() == mysql.ERNoSuchTable {
			row(table, "Error", "Table '"+table+"' doesn't exist")
			row(table, "status", "Operation failed")
			continue
		}
		if err != nil {
			return true, ToSQLError(err)
		}
		def, ok := s.p.mgr.Engine().Catalog().TableByName(db, n.Name.String())
		if !ok {
			row(table, "Error", "Table '"+table+"' doesn't exist")
			row(table, "status", "Operation failed")
			continue
		}
		if err := s.p.mgr.Engine().CompactTable(ctx, def.ID); err != nil {
			row(table, "Error", err.Error())
			row(table, "status", "Operation failed")
			continue
		}
		row(table, "status", "OK")
	}
	return true, out(res)
}
