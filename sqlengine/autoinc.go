package sqlengine

import (
	"sync/atomic"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/certusdb/certus/sqlengine/internal/gmstable"
	"github.com/certusdb/certus/txn"
)

// AUTO_INCREMENT. Values come from the node-wide allocator of txn.Manager,
// spaced by the session's auto_increment_increment and
// auto_increment_offset. With wsrep_auto_increment_control on (the
// default), the handler sets those before every statement to the
// cluster's spacing, as Galera does: on an N-node cluster, node k hands out
// k, k+N, k+2N, ..., so inserts on different nodes never take the same
// value, and the variables say so (Connector/J computes the keys of a
// multi-row INSERT from them).

// autoIncrementControl is wsrep_auto_increment_control, where every
// statement reads it without a lock (system variables, and so this, are
// process-wide in go-mysql-server).
var autoIncrementControl atomic.Bool

// autoIncrementGlobal is the stride last given to the global
// auto_increment_increment and auto_increment_offset (0: none, or a SET
// GLOBAL or a change of wsrep_auto_increment_control since).
var autoIncrementGlobal atomic.Uint64

// AutoIncrementStrider is implemented by a Cluster that spaces
// AUTO_INCREMENT values across its nodes.
type AutoIncrementStrider interface {
	// AutoIncrementStride returns the cluster's increment (its number of
	// data nodes) and this node's offset (its rank among them, from 1).
	AutoIncrementStride() (increment, offset uint64)
}

// maxAutoIncrementStep is the largest auto_increment_increment and
// auto_increment_offset.
const maxAutoIncrementStep = 65535

// syncAutoIncrement gives the session's auto_increment_increment and
// auto_increment_offset (and once per change the global ones) the
// cluster's stride when wsrep_auto_increment_control is on. It is called
// before every statement; a session that ran a SET is checked again, as
// Galera overrides the session's own values at its next command.
func (h *Handler) syncAutoIncrement(s *Session) {
	if h.stride == nil || s == nil || !autoIncrementControl.Load() {
		return
	}
	inc, off := h.stride.AutoIncrementStride()
	inc, off = min(inc, maxAutoIncrementStep), min(off, maxAutoIncrementStep)
	v := inc<<32 | off
	if s.autoIncStride == v {
		return
	}
	if autoIncrementGlobal.Swap(v) != v {
		ctx := sql.NewEmptyContext()
		_ = sql.SystemVariables.SetGlobal(ctx, "auto_increment_increment", int64(inc))
		_ = sql.SystemVariables.SetGlobal(ctx, "auto_increment_offset", int64(off))
	}
	// int64 values convert without the context
	_ = s.SetSessionVariable(nil, "auto_increment_increment", int64(inc))
	_ = s.SetSessionVariable(nil, "auto_increment_offset", int64(off))
	s.autoIncStride = v
}

// GetNextAutoIncrementValue implements sql.AutoIncrementTable: insertVal
// nil reserves the next value; an explicit value moves the counter past
// it, unless it is no value of the column (out of range: the insert
// fails, and like MySQL the counter stays).
func (t *Table) GetNextAutoIncrementValue(ctx *sql.Context, insertVal interface{}) (uint64, error) {
	if insertVal == nil {
		inc, off := gmstable.AutoIncrementStep(ctx, ctx.Session)
		return t.p.mgr.NextAutoIncrement(t.def.ID, inc, off), nil
	}
	typ, _ := t.autoIncrementType()
	explicit := gmstable.ExplicitAutoIncrement(ctx, typ, insertVal)
	if explicit == 0 {
		return 0, nil
	}
	t.p.mgr.PassAutoIncrement(t.def.ID, explicit)
	return explicit, nil
}

// PeekNextAutoIncrementValue implements sql.AutoIncrementGetter. Once the
// counter passed the column type's maximum, MySQL shows the maximum.
func (t *Table) PeekNextAutoIncrementValue(ctx *sql.Context) (uint64, error) {
	next := t.p.mgr.PeekAutoIncrement(t.def.ID)
	typ, ok := t.autoIncrementType()
	if !ok {
		return next, nil
	}
	clamped, inRange, err := typ.Convert(ctx, next)
	if err != nil || inRange == sql.InRange {
		return next, nil
	}
	if v, _, err := types.Uint64.Convert(ctx, clamped); err == nil {
		return v.(uint64), nil
	}
	return next, nil
}

// startAutoIncrement starts the counter of a column becoming
// AUTO_INCREMENT after the largest value it holds, as MySQL does.
func (t *Table) startAutoIncrement(ctx *sql.Context, ord int) error {
	tx := t.p.txnFor(ctx)
	it, err := tx.Scan(ctx, t.info, nil, nil, false, txn.Snapshot)
	if err != nil {
		return err
	}
	defer it.Close()
	largest := uint64(0)
	for {
		_, row, ok, err := it.Next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if v, _ := gmstable.AutoIncrementArg(ctx, row[ord]); v > largest {
			largest = v
		}
	}
	t.p.mgr.ResetAutoIncrement(t.def.ID)
	return tx.SetAutoIncrement(t.def.ID, largest+1)
}

// autoIncrementType is the type of the table's AUTO_INCREMENT column.
func (t *Table) autoIncrementType() (sql.Type, bool) {
	if t.info.AutoInc < 0 {
		return nil, false
	}
	return t.info.Types[t.info.AutoInc], true
}

// AutoIncrementSetter implements sql.AutoIncrementTable.
func (t *Table) AutoIncrementSetter(ctx *sql.Context) sql.AutoIncrementSetter { return t.editor(ctx) }
