package txn

import (
	"context"

	"github.com/certusdb/certus/storage"
)

// The statement's view of its own writes. A statement's scans read the
// transaction's changes as they were when the statement began, not the
// changes it makes itself: an UPDATE that moves a row ahead of its scan
// (SET pk = pk + 10), or into a range or a join lookup it has yet to read,
// must not find and change that row again. InnoDB gets this from reading
// through the key it updates with a temporary copy; go-mysql-server's
// multi-table UPDATE relies on it to change each row once. Foreign key
// checks and referential actions read everything (LiveScan): a row may
// reference one inserted earlier by the same statement.
//
// A table's buffer is frozen (a copy-on-write clone) when the statement
// first changes it; until then the live buffer is the statement's view.

// freeze keeps the statement's view of table id before its first change
// in the statement (nil: the table had no buffer).
func (t *Txn) freeze(id uint64) {
	if t.stmtMark < 0 || t.aborted {
		return
	}
	if _, ok := t.stmtBufs[id]; ok {
		return
	}
	if t.stmtBufs == nil {
		t.stmtBufs = map[uint64]*tableBuf{}
	}
	var frozen *tableBuf
	if b := t.tables[id]; b != nil {
		frozen = b.clone()
	}
	t.stmtBufs[id] = frozen
}

// statementBuf returns the buffer of table id as the current statement
// sees it.
func (t *Txn) statementBuf(id uint64, live *tableBuf) *tableBuf {
	if frozen, ok := t.stmtBufs[id]; ok {
		return frozen
	}
	return live
}

// endStatement ends the statement's change tracking and view.
func (t *Txn) endStatement() {
	t.stmtMark = -1
	t.stmtBufs = nil
	t.restorePriority()
}

// LiveScan is IndexScan (ii nil: the primary key) that also reads the
// changes the current statement made so far, for foreign key checks and
// referential actions.
func (t *Txn) LiveScan(ctx context.Context, ti *storage.TableInfo, ii *storage.IndexInfo, lo, hi []byte, rev bool, mode ReadMode) (*RowIter, error) {
	return t.scan(ctx, ti, ii, lo, hi, rev, mode, true)
}
