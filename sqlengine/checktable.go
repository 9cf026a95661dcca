package sqlengine

import (
	"context"
	"fmt"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"

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
	return h.maintain(ctx, c, names, "check", "SELECT 1 FROM %[1]s WHERE FALSE", out,
		func(s *Session, def *storage.TableDef) [][2]string {
			problems, err := checkTable(ctx, s.p.mgr, def)
			if err != nil {
				problems = append(problems, err.Error())
			}
			if len(problems) == 0 {
				return nil
			}
			var msgs [][2]string
			for _, p := range append(problems, "Corrupt") {
				msgs = append(msgs, [2]string{"error", p})
			}
			return msgs
		})
}

// checkTable reads table def in a snapshot of mgr's storage and returns
// what it finds wrong.
func checkTable(ctx context.Context, mgr *txn.Manager, def *storage.TableDef) ([]string, error) {
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
