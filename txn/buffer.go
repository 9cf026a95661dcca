package txn

import (
	"bytes"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/google/btree"

	"github.com/certusdb/certus/storage"
)

// rowEntry is a transaction's pending change to one row.
type rowEntry struct {
	pk      []byte
	row     sql.Row // new row; nil when deleted
	deleted bool
	delta   int64 // keyless tables: change of the row's count
	// shippedDelta is the part of delta a fragment already replicated.
	shippedDelta int64
	pos          uint64 // certification read position of the row's key
	// uniquePos is the position of the unique-key checks for the new row.
	uniquePos uint64
}

func lessEntry(a, b *rowEntry) bool { return bytes.Compare(a.pk, b.pk) < 0 }

// idxEntry is one entry of a buffered secondary index overlay.
type idxEntry struct {
	key []byte // encoded values + pk
	pk  []byte
}

func lessIdx(a, b idxEntry) bool { return bytes.Compare(a.key, b.key) < 0 }

// tableBuf holds a transaction's pending changes to one table.
type tableBuf struct {
	id        uint64
	info      *storage.TableInfo
	rows      *btree.BTreeG[*rowEntry]
	idx       map[uint32]*btree.BTreeG[idxEntry] // built lazily per index
	truncated bool
	schemaPos uint64
}

func newTableBuf(info *storage.TableInfo, schemaPos uint64) *tableBuf {
	return &tableBuf{
		id:        info.Def.ID,
		info:      info,
		rows:      btree.NewG[*rowEntry](16, lessEntry),
		idx:       map[uint32]*btree.BTreeG[idxEntry]{},
		schemaPos: schemaPos,
	}
}

// clone returns a copy-on-write copy of the buffer.
func (b *tableBuf) clone() *tableBuf {
	c := &tableBuf{id: b.id, info: b.info, rows: b.rows.Clone(), idx: make(map[uint32]*btree.BTreeG[idxEntry], len(b.idx)),
		truncated: b.truncated, schemaPos: b.schemaPos}
	for id, tree := range b.idx {
		c.idx[id] = tree.Clone()
	}
	return c
}

func (b *tableBuf) get(pk []byte) (*rowEntry, bool) {
	return b.rows.Get(&rowEntry{pk: pk})
}

// put replaces the entry for e.pk and keeps built index overlays current.
// It returns the previous entry, if any.
func (b *tableBuf) put(e *rowEntry) (*rowEntry, bool) {
	prev, had := b.rows.ReplaceOrInsert(e)
	for id, tree := range b.idx {
		ii := b.info.IndexByID(id)
		if ii == nil {
			continue
		}
		if had && prev.row != nil {
			if vals, _, err := ii.IndexValues(prev.row); err == nil {
				tree.Delete(idxEntry{key: append(append([]byte{}, vals...), prev.pk...)})
			}
		}
		if e.row != nil {
			if vals, _, err := ii.IndexValues(e.row); err == nil {
				tree.ReplaceOrInsert(idxEntry{key: append(append([]byte{}, vals...), e.pk...), pk: e.pk})
			}
		}
	}
	return prev, had
}

// remove deletes the entry for pk (used by undo).
func (b *tableBuf) remove(pk []byte) {
	prev, had := b.rows.Delete(&rowEntry{pk: pk})
	if !had || prev.row == nil {
		return
	}
	for id, tree := range b.idx {
		if ii := b.info.IndexByID(id); ii != nil {
			if vals, _, err := ii.IndexValues(prev.row); err == nil {
				tree.Delete(idxEntry{key: append(append([]byte{}, vals...), prev.pk...)})
			}
		}
	}
}

// index returns the overlay of index ii, building it on first use.
func (b *tableBuf) index(ii *storage.IndexInfo) (*btree.BTreeG[idxEntry], error) {
	if tree, ok := b.idx[ii.Def.ID]; ok {
		return tree, nil
	}
	tree := btree.NewG[idxEntry](16, lessIdx)
	var err error
	b.rows.Ascend(func(e *rowEntry) bool {
		if e.row == nil {
			return true
		}
		var vals []byte
		vals, _, err = ii.IndexValues(e.row)
		if err != nil {
			return false
		}
		tree.ReplaceOrInsert(idxEntry{key: append(append([]byte{}, vals...), e.pk...), pk: e.pk})
		return true
	})
	if err != nil {
		return nil, err
	}
	b.idx[ii.Def.ID] = tree
	return tree, nil
}

// undoRec restores one buffered change.
type undoRec struct {
	buf       *tableBuf
	pk        []byte
	prev      *rowEntry // nil: there was no entry
	truncated bool      // the change was a truncate; restore the flag and rows
	rows      *btree.BTreeG[*rowEntry]
}
