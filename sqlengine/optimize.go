package sqlengine

import (
	"context"
	"errors"
	"fmt"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/certusdb/certus/storage"
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
	return h.maintain(ctx, c, names, "optimize", "INSERT INTO %[1]s SELECT * FROM %[1]s WHERE FALSE", out,
		func(s *Session, def *storage.TableDef) [][2]string {
			if err := s.p.mgr.Engine().CompactTable(ctx, def.ID); err != nil {
				return [][2]string{{"Error", err.Error()}, {"status", "Operation failed"}}
			}
			return nil
		})
}

// maintain runs a table maintenance statement (OPTIMIZE, CHECK) on the
// tables names: probe (a statement on the table, %[1]s its name) checks
// the session's privileges and the table's existence, then work does the
// job and returns the Msg_type and Msg_text of what went wrong (none:
// status OK). The answer is MySQL's: Table, Op, Msg_type, Msg_text.
func (h *Handler) maintain(ctx context.Context, c *mysql.Conn, names []sqlparser.TableName, op, probe string,
	out func(*sqltypes.Result) error, work func(*Session, *storage.TableDef) [][2]string) (handled bool, err error) {
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
		row := func(typ, msg string) { res.Rows = append(res.Rows, adminRow(table, op, typ, msg)) }
		missing := func() {
			row("Error", "Table '"+table+"' doesn't exist")
			row("status", "Operation failed")
		}
		err = h.inner.ComQuery(ctx, c, fmt.Sprintf(probe, name), func(*sqltypes.Result, bool) error { return nil })
		var se *mysql.SQLError
		if err != nil && errors.As(ToSQLError(err), &se) && se.Number() == mysql.ERNoSuchTable {
			missing()
			continue
		}
		if err != nil {
			return true, ToSQLError(err)
		}
		def, ok := s.p.mgr.Engine().Catalog().TableByName(db, n.Name.String())
		if !ok {
			missing()
			continue
		}
		msgs := work(s, def)
		for _, m := range msgs {
			row(m[0], m[1])
		}
		if len(msgs) == 0 {
			row("status", "OK")
		}
	}
	return true, out(res)
}

// adminFields are the columns of the answer of a table maintenance
// statement.
func adminFields() []*querypb.Field {
	const n = 255 * 4
	return []*querypb.Field{textField("Table", n), textField("Op", n), textField("Msg_type", n), textField("Msg_text", n)}
}

// textField is a VARCHAR column of an answer the handler makes, length
// bytes long at most.
func textField(name string, length uint32) *querypb.Field {
	return &querypb.Field{Name: name, Type: querypb.Type_VARCHAR, Charset: mysql.CharacterSetUtf8, ColumnLength: length}
}

// adminRow is a row of a table maintenance statement's answer.
func adminRow(table, op, typ, msg string) []sqltypes.Value {
	return []sqltypes.Value{sqltypes.NewVarChar(table), sqltypes.NewVarChar(op), sqltypes.NewVarChar(typ), sqltypes.NewVarChar(msg)}
}
