package storage

import (
	"context"
	"crypto/sha256"
	"encoding/binary"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/internal/codec"
)

// Key layout in the pebble keyspace. One byte names the space:
//
//	't' tableID(8) 'r' pk                 -> row (keyless tables: count | row)
//	't' tableID(8) 'i' indexID(4) vals pk -> pk
//	'c' 'd' name                          -> DatabaseDef (JSON)
//	'c' 't' tableID(8)                    -> TableDef (JSON)
//	'c' 'p'                               -> users and grants (go-mysql-server's serialization)
//	'a' tableID(8)                        -> next AUTO_INCREMENT value (8 bytes)
//	's' origin(8) seq(8) seqno(8)         -> a fragment of an open streaming transaction (stream.go)
//	'm' name                              -> node metadata (applied seqno, ...)
//	'r' ...                               -> replication (raft log, hard state); owned by package replication
//
// Table ids are chosen by the origin of CREATE TABLE and travel in the
// write-set, so every node uses the same keys.
const (
	spaceTable   byte = 't'
	spaceCatalog byte = 'c'
	spaceAutoInc byte = 'a'
	spaceMeta    byte = 'm'
	// SpaceReplication is the first byte of every key package replication
	// stores in the engine's pebble database.
	SpaceReplication byte = 'r'
)

// TablePrefix is the prefix of all of a table's rows and index entries.
func TablePrefix(tableID uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{spaceTable}, tableID)
}

// RowPrefix is the prefix of a table's rows.
func RowPrefix(tableID uint64) []byte {
	return append(TablePrefix(tableID), 'r')
}

// IndexPrefix is the prefix of one secondary index's entries.
func IndexPrefix(tableID uint64, indexID uint32) []byte {
	return binary.BigEndian.AppendUint32(append(TablePrefix(tableID), 'i'), indexID)
}

// RowKey is the full pebble key of the row with primary key pk.
func RowKey(tableID uint64, pk []byte) []byte {
	k := make([]byte, 0, 10+len(pk))
	k = append(k, spaceTable)
	k = binary.BigEndian.AppendUint64(k, tableID)
	k = append(k, 'r')
	return append(k, pk...)
}

// CertKey is the certification key of a row: table id and primary key.
func CertKey(tableID uint64, pk []byte) []byte {
	k := make([]byte, 0, 8+len(pk))
	k = binary.BigEndian.AppendUint64(k, tableID)
	return append(k, pk...)
}

// UniqueCertKey is the certification key of a unique index entry.
func UniqueCertKey(tableID uint64, indexID uint32, vals []byte) []byte {
	k := make([]byte, 0, 13+len(vals))
	k = binary.BigEndian.AppendUint64(k, tableID)
	k = append(k, 'u')
	k = binary.BigEndian.AppendUint32(k, indexID)
	return append(k, vals...)
}

var catalogPrivilegesKey = []byte{spaceCatalog, 'p'}

func catalogDBKey(name string) []byte { return append([]byte{spaceCatalog, 'd'}, name...) }
func catalogTableKey(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{spaceCatalog, 't'}, id)
}
func autoIncKey(tableID uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{spaceAutoInc}, tableID)
}
func metaKey(name string) []byte { return append([]byte{spaceMeta}, name...) }

// EncodePK returns the encoded primary key of row (a full row of the
// table's schema). For keyless tables it is a hash of the whole row.
func (ti *TableInfo) EncodePK(ctx context.Context, row sql.Row) ([]byte, error) {
	if ti.Def.Keyless() {
		data, err := ti.EncodeRow(ctx, row)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		return sum[:16], nil
	}
	var k []byte
	var err error
	for i, ord := range ti.PKOrds {
		k, err = ti.PKCols[i].AppendKey(k, row[ord])
		if err != nil {
			return nil, err
		}
	}
	return k, nil
}

// EncodeRow returns the stored form of row.
func (ti *TableInfo) EncodeRow(ctx context.Context, row sql.Row) ([]byte, error) {
	return codec.AppendRow(ctx, nil, ti.ColIDs, row)
}

// IndexValues returns the encoded index values of row for index ii and
// whether any of them is NULL (a unique index allows many NULL entries).
func (ii *IndexInfo) IndexValues(row sql.Row) ([]byte, bool, error) {
	var k []byte
	var err error
	hasNull := false
	for i, ord := range ii.Ords {
		if row[ord] == nil {
			hasNull = true
		}
		k, err = ii.Cols[i].AppendKey(k, row[ord])
		if err != nil {
			return nil, false, err
		}
	}
	return k, hasNull, nil
}

// EntryKey is the pebble key of the index entry for vals and pk.
func (ii *IndexInfo) EntryKey(vals, pk []byte) []byte {
	k := make([]byte, 0, len(ii.prefix)+len(vals)+len(pk))
	k = append(k, ii.prefix...)
	k = append(k, vals...)
	return append(k, pk...)
}

// ValuesPrefix is the pebble key prefix of all entries with values vals.
func (ii *IndexInfo) ValuesPrefix(vals []byte) []byte {
	k := make([]byte, 0, len(ii.prefix)+len(vals))
	k = append(k, ii.prefix...)
	return append(k, vals...)
}

// Prefix is the pebble key prefix of all of the index's entries.
func (ii *IndexInfo) Prefix() []byte { return ii.prefix }

// RowBounds returns the pebble key range of the table's rows.
func (ti *TableInfo) RowBounds() (lo, hi []byte) { return ti.rowsLo, ti.rowsHi }

// keylessValue is the stored value of a keyless row: its count, then the row.
func keylessValue(count uint64, row []byte) []byte {
	v := binary.AppendUvarint(make([]byte, 0, len(row)+2), count)
	return append(v, row...)
}

// keylessCount is the count of a stored keyless value (0 if malformed).
func keylessCount(v []byte) uint64 {
	c, _, _ := SplitKeylessValue(v)
	return c
}

// SplitKeylessValue splits a stored keyless value into count and row bytes.
func SplitKeylessValue(v []byte) (uint64, []byte, bool) {
	n, l := binary.Uvarint(v)
	if l <= 0 {
		return 0, nil, false
	}
	return n, v[l:], true
}
