package txn

import (
	"bytes"
	"context"

	"github.com/cockroachdb/pebble/v2"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/internal/codec"
	"github.com/certusdb/certus/storage"
)

// RowIter iterates rows of a scan in key order, merging the transaction's
// own writes over what its read mode sees.
type RowIter struct {
	t    *Txn
	ctx  context.Context
	ti   *storage.TableInfo
	ii   *storage.IndexInfo // nil for a primary key scan
	mode ReadMode
	rev  bool

	view *storage.ReadView
	it   *pebble.Iterator
	base []byte // key prefix stripped from base keys (rows or index prefix)
	lo   []byte // bounds relative to base (index scans re-check them)
	hi   []byte

	buf    []bufItem // own writes in range, in scan order
	bufPos int
	b      *tableBuf

	want  []bool       // columns to decode from stored rows (nil: all)
	arena *codec.Arena // memory of the rows and keys it returns: own, or the caller's
	own   codec.Arena

	started bool
	pending sql.Row // keyless rows repeat count times
	repeat  int64
	pendPK  []byte
}

type bufItem struct {
	key []byte // pk, or index values + pk
	e   *rowEntry
}

// Scan iterates the table's rows with primary keys in [lo, hi) (nil means
// unbounded), in order (reverse when rev). It reads the transaction's own
// changes made before the current statement (see stmtview.go).
func (t *Txn) Scan(ctx context.Context, ti *storage.TableInfo, lo, hi []byte, rev bool, mode ReadMode) (*RowIter, error) {
	return t.scan(ctx, ti, nil, lo, hi, rev, mode, false)
}

// IndexScan iterates rows through secondary index ii for encoded index
// values in [lo, hi) (nil means unbounded; bounds compare against values
// followed by the primary key), like Scan.
func (t *Txn) IndexScan(ctx context.Context, ti *storage.TableInfo, ii *storage.IndexInfo, lo, hi []byte, rev bool, mode ReadMode) (*RowIter, error) {
	return t.scan(ctx, ti, ii, lo, hi, rev, mode, false)
}

func (t *Txn) scan(ctx context.Context, ti *storage.TableInfo, ii *storage.IndexInfo, lo, hi []byte, rev bool, mode ReadMode, live bool) (*RowIter, error) {
	if t.done {
		return nil, ErrTxnDone
	}
	r := &RowIter{t: t, ctx: ctx, ti: ti, ii: ii, mode: mode, rev: rev, lo: lo, hi: hi}
	r.arena = &r.own
	r.b = t.buf(ti, false)
	if !live {
		r.b = t.statementBuf(ti.Def.ID, r.b)
	}
	if ii == nil {
		r.base, _ = ti.RowBounds()
	} else {
		r.base = ii.Prefix()
	}
	if mode == Snapshot {
		r.view = t.snapshot()
		if ii == nil {
			t.noteSnapSpan(ti, lo, hi)
		} else {
			// which primary keys a secondary index range holds may
			// change under the snapshot: the whole table counts
			t.noteSnapScan(ti)
		}
	} else {
		r.view = t.m.eng.Latest()
	}
	if r.b == nil || !r.b.truncated {
		start := append(append([]byte{}, r.base...), lo...)
		var end []byte
		if hi != nil {
			end = append(append([]byte{}, r.base...), hi...)
		} else {
			end = codec.PrefixEnd(r.base)
		}
		it, err := r.view.NewIter(start, end)
		if err != nil {
			return nil, err
		}
		r.it = it
	}
	if r.b != nil {
		if err := r.collectBuffer(); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// DecodeOnly limits the columns a snapshot scan decodes from stored rows
// to those want marks by ordinal; the others come back nil (rows of the
// transaction's own writes come back whole). For reads that use a few
// columns of wide rows. Current reads decode whole rows.
func (r *RowIter) DecodeOnly(want []bool) {
	if r.mode == Snapshot {
		r.want = want
	}
}

// DecodeInto makes a snapshot scan hand out its rows and keys from a,
// which the caller owns and may Reset once it holds none of them, instead
// of from an arena of the scan's own: a session's selects then reuse the
// same memory. Current reads, whose rows and keys the transaction may
// keep, use their own.
func (r *RowIter) DecodeInto(a *codec.Arena) {
	if r.mode == Snapshot {
		r.arena = a
	}
}

func (r *RowIter) inRange(k []byte) bool {
	if r.lo != nil && bytes.Compare(k, r.lo) < 0 {
		return false
	}
	return r.hi == nil || bytes.Compare(k, r.hi) < 0
}

func (r *RowIter) collectBuffer() error {
	if r.ii == nil {
		pivot := &rowEntry{pk: r.lo}
		fn := func(e *rowEntry) bool {
			if r.hi != nil && bytes.Compare(e.pk, r.hi) >= 0 {
				return false
			}
			r.buf = append(r.buf, bufItem{key: e.pk, e: e})
			return true
		}
		if r.lo == nil {
			r.b.rows.Ascend(fn)
		} else {
			r.b.rows.AscendGreaterOrEqual(pivot, fn)
		}
	} else {
		tree, err := r.b.index(r.ii)
		if err != nil {
			return err
		}
		tree.AscendGreaterOrEqual(idxEntry{key: r.lo}, func(x idxEntry) bool {
			if r.hi != nil && bytes.Compare(x.key, r.hi) >= 0 {
				return false
			}
			if e, ok := r.b.get(x.pk); ok {
				r.buf = append(r.buf, bufItem{key: x.key, e: e})
			}
			return true
		})
	}
	if r.rev {
		for i, j := 0, len(r.buf)-1; i < j; i, j = i+1, j-1 {
			r.buf[i], r.buf[j] = r.buf[j], r.buf[i]
		}
	}
	return nil
}

// Next returns the next row and its primary key; ok is false at the end.
func (r *RowIter) Next() (pk []byte, row sql.Row, ok bool, err error) {
	for {
		if r.repeat > 0 {
			r.repeat--
			return r.pendPK, r.pending, true, nil
		}
		if err := r.ctx.Err(); err != nil {
			return nil, nil, false, err
		}
		var baseKey []byte
		if r.it != nil {
			if !r.started {
				if r.rev {
					r.it.Last()
				} else {
					r.it.First()
				}
				r.started = true
			}
			if r.it.Valid() {
				baseKey = r.it.Key()[len(r.base):]
			} else if err := r.it.Error(); err != nil {
				return nil, nil, false, err
			}
		}
		var bufItemNext *bufItem
		if r.bufPos < len(r.buf) {
			bufItemNext = &r.buf[r.bufPos]
		}
		if baseKey == nil && bufItemNext == nil {
			return nil, nil, false, nil
		}
		takeBuf := false
		if bufItemNext != nil {
			if baseKey == nil {
				takeBuf = true
			} else {
				c := bytes.Compare(bufItemNext.key, baseKey)
				if r.rev {
					c = -c
				}
				if c <= 0 {
					takeBuf = true
					if c == 0 {
						r.advanceBase() // the buffer's version wins
					}
				}
			}
		}
		if takeBuf {
			r.bufPos++
			e := bufItemNext.e
			if r.ti.Def.Keyless() {
				count := e.delta
				if base, ok, err := r.baseCount(e.pk); err != nil {
					return nil, nil, false, err
				} else if ok {
					count += int64(base)
				}
				if count <= 0 {
					continue
				}
				r.pending, r.pendPK, r.repeat = e.row, e.pk, count
				continue
			}
			if e.deleted {
				continue
			}
			return e.pk, e.row, true, nil
		}
		// a base entry; value is valid until the iterator moves, and the
		// decoded row does not alias it
		var rowPK, value []byte
		if r.ii == nil {
			rowPK = r.arena.Bytes(baseKey)
			value = r.it.Value()
		} else {
			rowPK = r.arena.Bytes(r.it.Value())
		}
		if r.b != nil {
			if _, mine := r.b.get(rowPK); mine {
				r.advanceBase()
				continue // shadowed by own write, emitted from the buffer
			}
		}
		row, count, found, err := r.fetch(rowPK, value)
		r.advanceBase()
		if err != nil {
			return nil, nil, false, err
		}
		if !found {
			continue
		}
		if count > 1 {
			r.pending, r.pendPK, r.repeat = row, rowPK, int64(count-1)
		}
		return rowPK, row, true, nil
	}
}

func (r *RowIter) advanceBase() {
	if r.rev {
		r.it.Prev()
	} else {
		r.it.Next()
	}
}

// baseCount is a keyless row's stored count as the read mode sees it.
func (r *RowIter) baseCount(pk []byte) (uint64, bool, error) {
	if r.b != nil && r.b.truncated {
		return 0, false, nil
	}
	v, ok, err := r.view.Get(storage.RowKey(r.ti.Def.ID, pk))
	if err != nil || !ok {
		return 0, false, err
	}
	n, _, ok := storage.SplitKeylessValue(v)
	if !ok {
		return 0, false, storage.ErrCorruptData
	}
	return n, true, nil
}

// fetch produces the row for a base entry. value is the stored row for
// primary key scans in snapshot mode; otherwise the row is (re-)read,
// after locking it in a current read.
func (r *RowIter) fetch(pk, value []byte) (sql.Row, uint64, bool, error) {
	if r.mode != Snapshot {
		if err := r.t.lockRow(r.ctx, r.ti, pk, r.mode); err != nil {
			return nil, 0, false, err
		}
		value = nil // re-read after the lock: the row may have changed
	}
	if value == nil {
		v, ok, err := r.view.Get(storage.RowKey(r.ti.Def.ID, pk))
		if err != nil || !ok {
			return nil, 0, false, err
		}
		value = v
	}
	count := uint64(1)
	if r.ti.Def.Keyless() {
		n, _, ok := storage.SplitKeylessValue(value)
		if !ok {
			return nil, 0, false, storage.ErrCorruptData
		}
		count = n
	}
	row, err := r.ti.DecodeColumnsIn(value, r.want, r.arena)
	if err != nil {
		return nil, 0, false, err
	}
	if r.ii != nil && r.mode != Snapshot {
		// the row changed between the index read and the lock: keep it
		// only if it still falls in the scanned range
		vals, _, err := r.ii.IndexValues(row)
		if err != nil {
			return nil, 0, false, err
		}
		if !r.inRange(append(vals, pk...)) {
			return nil, 0, false, nil
		}
	}
	return row, count, true, nil
}

// Close releases the iterator.
func (r *RowIter) Close() error {
	if r.it != nil {
		err := r.it.Close()
		r.it = nil
		return err
	}
	return nil
}
