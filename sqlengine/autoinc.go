package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/certusdb/certus/txn"
)

// AUTO_INCREMENT. Values come from the node-wide allocator of txn.Manager
// (interleaved across nodes like wsrep_auto_increment_control).

// GetNextAutoIncrementValue implements sql.AutoIncrementTable: insertVal
// nil reserves the next value; an explicit value moves the counter past
// it, unless it is no value of the column (out of range: the insert
// fails, and like MySQL the counter stays).
func (t *Table) GetNextAutoIncrementValue(ctx *sql.Context, insertVal interface{}) (uint64, error) {
	if insertVal == nil {
		return t.p.mgr.NextAutoIncrement(t.def.ID, 0), nil
	}
	if typ, ok := t.autoIncrementType(); ok {
		v, inRange, err := typ.Convert(ctx, insertVal)
		if err != nil || inRange != sql.InRange {
			return 0, nil
		}
		insertVal = v
	}
	explicit, _ := autoIncrementArg(ctx, insertVal)
	if explicit == 0 {
		return 0, nil
	}
	return t.p.mgr.NextAutoIncrement(t.def.ID, explicit), nil
}

// autoIncrementArg is a positive AUTO_INCREMENT column value as uint64 (0
// for other values).
func autoIncrementArg(ctx *sql.Context, v interface{}) (uint64, error) {
	if v == nil {
		return 0, nil
	}
	switch x := v.(type) {
	case int8, int16, int32, int64, int:
		i, _ := asInt(x)
		if i <= 0 {
			return 0, nil
		}
		return uint64(i), nil
	case uint8:
		return uint64(x), nil
	case uint16:
		return uint64(x), nil
	case uint32:
		return uint64(x), nil
	case uint64:
		return x, nil
	case float32:
		return uint64(max(x, 0)), nil
	case float64:
		return uint64(max(x, 0)), nil
	}
	return 0, nil
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
		if v, _ := autoIncrementArg(ctx, row[ord]); v > largest {
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

func asInt(v interface{}) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}
