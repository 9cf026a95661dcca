package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/internal/codec"
	"github.com/certusdb/certus/writeset"
)

// applier applies one write-set into a batch.
type applier struct {
	e     *Engine
	seqno uint64 // where a schema operation applies
	cat   *Catalog
	b     *pebble.Batch
	r     pebble.Reader // sees the batch's own writes when it holds schema ops
	// seq reads the old rows of a large write-set without schema ops: its
	// row operations come in key order per table, so one iterator stepping
	// forward beats a point lookup each. nil for small write-sets.
	seq  *pebble.Iterator
	auto map[uint64]uint64
	d    Digest // the batch's change of the state digest
}

// set writes key=val, keeping the digest; old is the previous value when
// had is set.
func (a *applier) set(key, val, old []byte, had bool) error {
	if replicated(key) {
		if had {
			a.d.toggle(key, old)
		}
		a.d.toggle(key, val)
	}
	return a.b.Set(key, val, nil)
}

// del deletes key whose value is old, keeping the digest.
func (a *applier) del(key, old []byte) error {
	if replicated(key) {
		a.d.toggle(key, old)
	}
	return a.b.Delete(key, nil)
}

// put writes a small metadata key, reading its old value for the digest.
func (a *applier) put(key, val []byte) error {
	old, had, err := getCopy(a.r, key)
	if err != nil {
		return err
	}
	return a.set(key, val, old, had)
}

// remove deletes a small metadata key, reading its old value.
func (a *applier) remove(key []byte) error {
	old, had, err := getCopy(a.r, key)
	if err != nil || !had {
		return err
	}
	return a.del(key, old)
}

// delRange deletes [lo, hi), toggling every deleted pair out of the digest.
func (a *applier) delRange(lo, hi []byte) error {
	if err := digestRange(a.r, &a.d, lo, hi); err != nil {
		return err
	}
	return a.b.DeleteRange(lo, hi, nil)
}

func jsonUnmarshal(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptData, err)
	}
	return nil
}

// seqReadMin is the number of operations from which a write-set without
// schema operations reads old rows through one iterator.
const seqReadMin = 64

// lookup returns a copy of the stored value at key.
func (a *applier) lookup(key []byte) ([]byte, bool, error) {
	if a.seq == nil {
		return getCopy(a.r, key)
	}
	if !a.seq.SeekGE(key) || !bytes.Equal(a.seq.Key(), key) {
		return nil, false, a.seq.Error()
	}
	return append([]byte(nil), a.seq.Value()...), true, nil
}

func (a *applier) apply(ws *writeset.WriteSet) error {
	for i := range ws.Ops {
		op := &ws.Ops[i]
		var err error
		switch op.Kind {
		case writeset.OpSchema:
			err = a.schemaOp(op.Payload)
		case writeset.OpPut, writeset.OpDelete, writeset.OpDelta:
			err = a.rowOp(op)
		case writeset.OpAutoIncrement:
			if next := uint64(op.Delta); next > a.nextAutoInc(op.TableID) {
				a.auto[op.TableID] = next
			}
		default:
			err = fmt.Errorf("%w: unknown operation kind %d", ErrCorruptData, op.Kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) schemaOp(payload []byte) error {
	op, err := DecodeSchemaOp(payload)
	if err != nil {
		return err
	}
	next, err := op.ApplyTo(a.cat, a.seqno)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrApplyRejected, err)
	}
	switch op.Kind {
	case OpPutDatabase:
		d, _ := next.Database(op.Database.Name)
		err = a.put(catalogDBKey(lower(d.Name)), marshalJSON(d))
	case OpDropDatabase:
		old, _ := a.cat.Database(op.Name)
		for _, id := range old.Tables {
			if err = a.dropTableData(id, true); err != nil {
				return err
			}
			if err = a.remove(catalogTableKey(id)); err != nil {
				return err
			}
		}
		err = a.remove(catalogDBKey(lower(op.Name)))
	case OpPutTable:
		err = a.putTableDefs(next, op.Table.ID)
		if old, ok := a.cat.Table(op.Table.ID); ok && err == nil && lower(old.DB) != lower(op.Table.DB) {
			if od, ok := next.Database(old.DB); ok {
				err = a.put(catalogDBKey(lower(od.Name)), marshalJSON(od))
			}
		}
	case OpDropTable:
		old, _ := a.cat.Table(op.TableID)
		if err = a.dropTableData(op.TableID, true); err != nil {
			return err
		}
		if err = a.remove(catalogTableKey(op.TableID)); err != nil {
			return err
		}
		if d, ok := next.Database(old.DB); ok {
			err = a.put(catalogDBKey(lower(d.Name)), marshalJSON(d))
		}
	case OpTruncate:
		if err = a.dropTableData(op.TableID, true); err != nil {
			return err
		}
		err = a.putTableDefs(next, op.TableID)
	case OpBuildIndex:
		err = a.buildIndex(next, op.TableID, op.IndexID)
	case OpDropIndexData:
		p := IndexPrefix(op.TableID, op.IndexID)
		err = a.delRange(p, codec.PrefixEnd(p))
	case OpPutPrivileges:
		err = a.put(catalogPrivilegesKey, op.Data)
	}
	if err != nil {
		return err
	}
	a.cat = next
	return nil
}

func (a *applier) putTableDefs(c *Catalog, tableID uint64) error {
	t, _ := c.Table(tableID)
	if err := a.put(catalogTableKey(t.ID), marshalJSON(t)); err != nil {
		return err
	}
	d, _ := c.Database(t.DB)
	return a.put(catalogDBKey(lower(d.Name)), marshalJSON(d))
}

// dropTableData deletes rows and index entries and, when resetAuto is set,
// the AUTO_INCREMENT counter.
func (a *applier) dropTableData(tableID uint64, resetAuto bool) error {
	p := TablePrefix(tableID)
	if err := a.delRange(p, codec.PrefixEnd(p)); err != nil {
		return err
	}
	if resetAuto {
		a.auto[tableID] = 0
	}
	return nil
}

func (a *applier) buildIndex(c *Catalog, tableID uint64, indexID uint32) error {
	t, _ := c.Table(tableID)
	ti, err := t.Info()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrApplyRejected, err)
	}
	ii := ti.IndexByID(indexID)
	if ii == nil {
		return fmt.Errorf("%w: index %d of table %s.%s not in its definition", ErrApplyRejected, indexID, t.DB, t.Name)
	}
	if !ii.Usable {
		return nil
	}
	lo, hi := ti.RowBounds()
	it, err := a.r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		pk := append([]byte(nil), it.Key()[len(lo):]...)
		row, err := ti.DecodeRow(it.Value())
		if err != nil {
			return err
		}
		vals, hasNull, err := ii.IndexValues(row)
		if err != nil {
			return fmt.Errorf("%w: index %s: %v", ErrApplyRejected, ii.Def.Name, err)
		}
		if ii.Def.Unique && !hasNull {
			// rows are in primary key order, so duplicates are found by
			// probing the entries written so far; a keyless table keeps
			// equal rows as one with a count, whose copies are duplicates
			dup := ti.Def.Keyless() && keylessCount(it.Value()) > 1
			if !dup {
				if dup, err = a.hasEntry(ii, vals, pk); err != nil {
					return err
				}
			}
			if dup {
				return fmt.Errorf("%w: %w", ErrApplyRejected, &DuplicateKeyError{Table: t.Name, Index: ii.Def.Name, Key: ti.KeyString(ii.Ords, row), Row: row})
			}
		}
		if err := a.set(ii.EntryKey(vals, pk), pk, nil, false); err != nil {
			return err
		}
	}
	return it.Error()
}

// hasEntry reports whether index ii has an entry with vals for a primary key
// other than pk, in the batch being built or the applied state.
func (a *applier) hasEntry(ii *IndexInfo, vals, pk []byte) (bool, error) {
	p := ii.ValuesPrefix(vals)
	it, err := a.r.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: codec.PrefixEnd(p)})
	if err != nil {
		return false, err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if !bytes.Equal(it.Key()[len(p):], pk) {
			return true, nil
		}
	}
	return false, it.Error()
}

// DuplicateKeyError reports a unique key violation found while applying:
// Key is the duplicate value (TableInfo.KeyString) of Row.
type DuplicateKeyError struct {
	Table string
	Index string
	Key   string
	Row   sql.Row
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("Duplicate entry '%s' for key '%s.%s'", e.Key, e.Table, e.Index)
}

func (a *applier) rowOp(op *writeset.Op) error {
	t, ok := a.cat.Table(op.TableID)
	if !ok {
		return fmt.Errorf("%w: write to unknown table %d", ErrApplyRejected, op.TableID)
	}
	ti, err := t.Info()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrApplyRejected, err)
	}
	key := RowKey(op.TableID, op.Key)
	old, exists, err := a.lookup(key)
	if err != nil {
		return err
	}
	var oldRow sql.Row
	var oldCount uint64
	if exists {
		if ti.Def.Keyless() {
			c, _, ok := SplitKeylessValue(old)
			if !ok {
				return ErrCorruptData
			}
			oldCount = c
		}
		if oldRow, err = ti.DecodeColumns(old, ti.applyCols); err != nil {
			return err
		}
	}
	var newRow sql.Row
	var newValue []byte
	switch op.Kind {
	case writeset.OpPut:
		newValue = op.Value
	case writeset.OpDelta:
		count := int64(oldCount) + op.Delta
		if count > 0 {
			newValue = keylessValue(uint64(count), op.Value)
		}
	}
	if newValue != nil {
		if newRow, err = ti.DecodeColumns(newValue, ti.applyCols); err != nil {
			return fmt.Errorf("%w: %v", ErrApplyRejected, err)
		}
	}
	// secondary indexes
	for i := range ti.Indexes {
		ii := &ti.Indexes[i]
		if !ii.Usable {
			continue
		}
		var oldVals, newVals []byte
		if oldRow != nil {
			if oldVals, _, err = ii.IndexValues(oldRow); err != nil {
				return fmt.Errorf("%w: %v", ErrApplyRejected, err)
			}
		}
		if newRow != nil {
			if newVals, _, err = ii.IndexValues(newRow); err != nil {
				return fmt.Errorf("%w: %v", ErrApplyRejected, err)
			}
		}
		if oldRow != nil && newRow != nil && bytes.Equal(oldVals, newVals) {
			continue
		}
		if oldRow != nil {
			if err := a.del(ii.EntryKey(oldVals, op.Key), op.Key); err != nil {
				return err
			}
		}
		if newRow != nil {
			if err := a.set(ii.EntryKey(newVals, op.Key), op.Key, nil, false); err != nil {
				return err
			}
		}
	}
	if newValue == nil {
		if exists {
			return a.del(key, old)
		}
		return nil
	}
	if ti.AutoInc >= 0 {
		if v, ok := autoIncValue(newRow[ti.AutoInc]); ok && v+1 > a.nextAutoInc(op.TableID) {
			a.auto[op.TableID] = v + 1
		}
	}
	return a.set(key, newValue, old, exists)
}

func (a *applier) nextAutoInc(tableID uint64) uint64 {
	if v, ok := a.auto[tableID]; ok {
		return v
	}
	return a.e.AutoIncrement(tableID)
}

// autoIncValue converts a stored AUTO_INCREMENT column value to uint64.
func autoIncValue(v any) (uint64, bool) {
	switch x := v.(type) {
	case int8:
		return uint64(max(x, 0)), x > 0
	case int16:
		return uint64(max(x, 0)), x > 0
	case int32:
		return uint64(max(x, 0)), x > 0
	case int64:
		return uint64(max(x, 0)), x > 0
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case float32:
		return uint64(max(x, 0)), x > 0
	case float64:
		return uint64(max(x, 0)), x > 0
	}
	return 0, false
}

// DecodeRow decodes a stored row value of table ti.
func (ti *TableInfo) DecodeRow(v []byte) (sql.Row, error) { return ti.DecodeColumns(v, nil) }

// DecodeColumns decodes the columns of a stored row value of table ti
// that want marks by ordinal (all when want is nil); the others are nil.
// The row never aliases v.
func (ti *TableInfo) DecodeColumns(v []byte, want []bool) (sql.Row, error) {
	return ti.DecodeColumnsIn(v, want, nil)
}

// DecodeColumnsIn is DecodeColumns with the row and its values taken from
// a (see codec.Arena); nil allocates each.
func (ti *TableInfo) DecodeColumnsIn(v []byte, want []bool, a *codec.Arena) (sql.Row, error) {
	if ti.Def.Keyless() {
		_, rb, ok := SplitKeylessValue(v)
		if !ok {
			return nil, ErrCorruptData
		}
		v = rb
	}
	var row sql.Row
	if a != nil {
		row = a.Row(ti.Layout.Width())
	} else {
		row = make(sql.Row, ti.Layout.Width())
	}
	if err := ti.Layout.DecodeSomeIn(v, row, want, a); err != nil {
		return nil, fmt.Errorf("%w: table %s.%s: %v", ErrCorruptData, ti.Def.DB, ti.Def.Name, err)
	}
	return row, nil
}

// StoredValue returns the stored value for a row of ti: for keyless tables
// count copies, otherwise the row itself.
func (ti *TableInfo) StoredValue(ctx context.Context, row sql.Row, count uint64) ([]byte, error) {
	data, err := ti.EncodeRow(ctx, row)
	if err != nil {
		return nil, err
	}
	if ti.Def.Keyless() {
		return keylessValue(count, data), nil
	}
	return data, nil
}
