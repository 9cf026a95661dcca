package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/sqlengine/internal/gmstable"
	"github.com/certusdb/certus/storage"
)

// editor writes rows of one table into the statement's transaction.
type editor struct {
	t *Table
}

var (
	_ sql.TableEditor         = (*editor)(nil)
	_ sql.AutoIncrementSetter = (*editor)(nil)
)

// StatementBegin implements sql.EditOpenerCloser.
func (e *editor) StatementBegin(ctx *sql.Context) {
	e.t.p.txnFor(ctx).StatementBegin()
}

// DiscardChanges implements sql.EditOpenerCloser: the statement's changes
// are undone, the transaction's earlier ones stay.
func (e *editor) DiscardChanges(ctx *sql.Context, _ error) error {
	e.t.p.txnFor(ctx).StatementDiscard()
	return nil
}

// StatementComplete implements sql.EditOpenerCloser.
func (e *editor) StatementComplete(ctx *sql.Context) error {
	e.t.p.txnFor(ctx).StatementComplete()
	return nil
}

// Insert implements sql.RowInserter.
func (e *editor) Insert(ctx *sql.Context, row sql.Row) error {
	return engineErr(gmstable.DupErr(e.t.p.txnFor(ctx).Insert(ctx, e.t.info, row.Copy())))
}

// Update implements sql.RowUpdater.
func (e *editor) Update(ctx *sql.Context, old, new sql.Row) error {
	return engineErr(gmstable.DupErr(e.t.p.txnFor(ctx).Update(ctx, e.t.info, old, new.Copy())))
}

// Delete implements sql.RowDeleter.
func (e *editor) Delete(ctx *sql.Context, row sql.Row) error {
	return engineErr(e.t.p.txnFor(ctx).Delete(ctx, e.t.info, row))
}

// Close implements sql.Closer.
func (e *editor) Close(*sql.Context) error { return nil }

// SetAutoIncrementValue implements sql.AutoIncrementSetter.
func (e *editor) SetAutoIncrementValue(ctx *sql.Context, v uint64) error {
	tx := e.t.p.txnFor(ctx)
	e.t.p.mgr.ResetAutoIncrement(e.t.def.ID)
	return tx.SetAutoIncrement(e.t.def.ID, v)
}

// AcquireAutoIncrementLock implements sql.AutoIncrementSetter; values are
// handed out by the node-wide allocator without a table lock (like
// innodb_autoinc_lock_mode=2, which Galera requires).
func (e *editor) AcquireAutoIncrementLock(*sql.Context) (func(), error) {
	return func() {}, nil
}

// rewriteInserter collects the rows of a table rewrite; Close replaces the
// table's contents and definition with them in the transaction.
type rewriteInserter struct {
	t    *Table
	def  *storage.TableDef
	rows []sql.Row
}

func (r *rewriteInserter) Insert(_ *sql.Context, row sql.Row) error {
	r.rows = append(r.rows, row.Copy())
	return nil
}

func (r *rewriteInserter) StatementBegin(*sql.Context) {}

func (r *rewriteInserter) DiscardChanges(*sql.Context, error) error {
	r.rows = nil
	r.def = nil
	return nil
}

func (r *rewriteInserter) StatementComplete(*sql.Context) error { return nil }

func (r *rewriteInserter) Close(ctx *sql.Context) error {
	if r.def == nil {
		return nil
	}
	tx := r.t.p.txnFor(ctx)
	return engineErr(gmstable.DupErr(tx.Rewrite(ctx, r.t.info, r.def, r.rows)))
}
