// Package writeset defines the unit of replication: everything a committed
// transaction changed, the keys it must be certified on and the positions
// those keys were read at. A write-set is built once on its origin node,
// travels through the total order (the raft log) as bytes, and is certified
// and applied on every node from those bytes alone.
//
// Wire format (all integers uvarint unless noted):
//
//	magic "CWS1" | id.origin | id.seq | lastSeen | flags
//	| [stream.origin | stream.seq | node | frag]   (only with a stream flag)
//	| nTables | nTables × (tableID | schemaPos | tflags)
//	| nKeys   | nKeys   × (kind byte | len | key | pos)
//	| nOps    | nOps    × (kind byte | tableID | ... per kind)
//	| crc32c (4 bytes, little endian) of everything before it
//
// A corrupt or truncated write-set fails Decode with ErrCorrupt and is never
// applied.
package writeset

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

var magic = [4]byte{'C', 'W', 'S', '1'}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is returned by Decode for bytes that are not a valid write-set
// (bad magic, truncated, trailing garbage or checksum mismatch).
var ErrCorrupt = errors.New("writeset: corrupt write-set")

// ID identifies a write-set cluster-wide: the origin's incarnation and a
// sequence number unique within it. Certification drops a second copy of an
// ID it has already decided (a re-proposal after a leader change).
type ID struct {
	Origin uint64
	Seq    uint64
}

func (id ID) String() string { return fmt.Sprintf("%x:%d", id.Origin, id.Seq) }

// Compare orders IDs by origin, then sequence number (for slices.SortFunc).
func (id ID) Compare(o ID) int {
	return cmp.Or(cmp.Compare(id.Origin, o.Origin), cmp.Compare(id.Seq, o.Seq))
}

// Flags describe a write-set as a whole.
type Flags uint64

const (
	// FlagDDL marks a write-set that changes the schema.
	FlagDDL Flags = 1 << iota
	// FlagHeartbeat marks an empty write-set that only reports the origin's
	// LastSeen position so the certification index can be pruned.
	FlagHeartbeat
	// FlagFragment marks a fragment of a streaming transaction (Stream
	// names it) that does not end it: certified, its rows are locked
	// cluster-wide and applied provisionally, invisible until the commit.
	FlagFragment
	// FlagStreamCommit marks the last fragment of a streaming transaction:
	// its rows and those of every earlier fragment become visible at once.
	FlagStreamCommit
	// FlagStreamRollback ends a streaming transaction without applying
	// anything; it carries no keys or operations.
	FlagStreamRollback
	// FlagRetire ends an incarnation of a node: ID.Origin will send no
	// more write-sets, so the certification index stops holding its
	// horizon at that origin's last LastSeen. It carries no keys or
	// operations.
	FlagRetire
	// FlagStreamSealed marks, with FlagFragment, the last fragment of a
	// streaming transaction that carries rows: its commit follows with
	// none. A node that has added it to the transaction's provisional
	// batch may write the batch out for the commit ahead of the commit's
	// turn (see storage.Engine.CommitStream).
	FlagStreamSealed
)

// StreamFlags are the flags of a streaming transaction's write-sets.
const StreamFlags = FlagFragment | FlagStreamCommit | FlagStreamRollback | FlagStreamSealed

// Stream identifies the streaming transaction a write-set with one of the
// StreamFlags belongs to.
type Stream struct {
	// ID is the ID of the transaction's first fragment.
	ID ID
	// Node is the raft member id of the origin node: its streams are
	// rolled back when it restarts or leaves.
	Node uint64
	// Frag numbers the transaction's fragments from 0.
	Frag uint64
}

// KeyKind says what a certification key names.
type KeyKind byte

const (
	// KeyRow is a row's table-scoped primary key.
	KeyRow KeyKind = 1
	// KeyUnique is a unique secondary index entry (table, index, values).
	KeyUnique KeyKind = 2
)

// Key is one certification key with the position it counts as read at:
// the write-set conflicts with a write by another origin to the same key
// ordered after Pos.
type Key struct {
	Kind KeyKind
	Key  []byte
	Pos  uint64
}

// TableFlags describe how a write-set uses a table.
type TableFlags uint64

const (
	// TableSchemaChange marks a table whose definition the write-set changes.
	TableSchemaChange TableFlags = 1 << iota
	// TableRewrite marks a DDL that rewrote the table's rows from its own
	// view: it conflicts with any other write to the table after SchemaPos.
	TableRewrite
	// TableBulk marks, in the certification record of a streaming
	// transaction's commit, a table it wrote too many rows of to list:
	// it counts as a write to every row of the table.
	TableBulk
)

// Table records a table the write-set touches and the position of the
// catalog it was built against: a DDL on that table ordered after SchemaPos
// fails the write-set's certification.
type Table struct {
	ID        uint64
	SchemaPos uint64
	Flags     TableFlags
}

// OpKind is the kind of an operation.
type OpKind byte

// Operation kinds. Schema operations carry an opaque payload interpreted by
// the storage engine.
const (
	OpPut           OpKind = 1  // Key, Value: insert or replace a row
	OpDelete        OpKind = 2  // Key: delete a row
	OpDelta         OpKind = 3  // Key, Value, Delta: keyless row count change
	OpSchema        OpKind = 10 // Payload: a storage schema operation
	OpAutoIncrement OpKind = 11 // TableID, Delta: raise the table's AUTO_INCREMENT to at least Delta
)

// Op is one change. Row operations name a table and a primary key.
type Op struct {
	Kind    OpKind
	TableID uint64
	Key     []byte
	Value   []byte
	Delta   int64
	Payload []byte
}

// WriteSet is a transaction's replicated change.
type WriteSet struct {
	ID ID
	// LastSeen is the lowest position any open transaction on the origin may
	// still certify against; the certification index may forget writes at or
	// below the minimum LastSeen of all members.
	LastSeen uint64
	Flags    Flags
	// Stream is set when Flags has one of the StreamFlags.
	Stream Stream
	Tables []Table
	Keys   []Key
	Ops    []Op
}

// Size is an upper bound of the encoded size in bytes; Encode reserves it,
// so a large write-set is encoded into one allocation instead of a series
// of copies.
func (ws *WriteSet) Size() int {
	const v = binary.MaxVarintLen64
	n := len(magic) + 10*v + len(ws.Tables)*3*v + 4
	for _, k := range ws.Keys {
		n += 1 + 2*v + len(k.Key)
	}
	for _, op := range ws.Ops {
		n += 1 + 4*v + len(op.Key) + len(op.Value) + len(op.Payload)
	}
	return n
}

// Encode appends the wire form of ws to dst.
func (ws *WriteSet) Encode(dst []byte) []byte {
	dst = slices.Grow(dst, ws.Size())
	start := len(dst)
	dst = append(dst, magic[:]...)
	dst = binary.AppendUvarint(dst, ws.ID.Origin)
	dst = binary.AppendUvarint(dst, ws.ID.Seq)
	dst = binary.AppendUvarint(dst, ws.LastSeen)
	dst = binary.AppendUvarint(dst, uint64(ws.Flags))
	if ws.Flags&StreamFlags != 0 {
		dst = binary.AppendUvarint(dst, ws.Stream.ID.Origin)
		dst = binary.AppendUvarint(dst, ws.Stream.ID.Seq)
		dst = binary.AppendUvarint(dst, ws.Stream.Node)
		dst = binary.AppendUvarint(dst, ws.Stream.Frag)
	}
	dst = binary.AppendUvarint(dst, uint64(len(ws.Tables)))
	for _, t := range ws.Tables {
		dst = binary.AppendUvarint(dst, t.ID)
		dst = binary.AppendUvarint(dst, t.SchemaPos)
		dst = binary.AppendUvarint(dst, uint64(t.Flags))
	}
	dst = binary.AppendUvarint(dst, uint64(len(ws.Keys)))
	for _, k := range ws.Keys {
		dst = append(dst, byte(k.Kind))
		dst = appendBytes(dst, k.Key)
		dst = binary.AppendUvarint(dst, k.Pos)
	}
	dst = binary.AppendUvarint(dst, uint64(len(ws.Ops)))
	for _, op := range ws.Ops {
		dst = append(dst, byte(op.Kind))
		dst = binary.AppendUvarint(dst, op.TableID)
		switch op.Kind {
		case OpPut:
			dst = appendBytes(dst, op.Key)
			dst = appendBytes(dst, op.Value)
		case OpDelete:
			dst = appendBytes(dst, op.Key)
		case OpDelta:
			dst = appendBytes(dst, op.Key)
			dst = appendBytes(dst, op.Value)
			dst = binary.AppendVarint(dst, op.Delta)
		case OpSchema:
			dst = appendBytes(dst, op.Payload)
		case OpAutoIncrement:
			dst = binary.AppendVarint(dst, op.Delta)
		}
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// IsWriteSet reports whether data starts like an encoded write-set.
func IsWriteSet(data []byte) bool {
	return len(data) >= 4 && [4]byte(data[:4]) == magic
}

// PeekID reads the ID of an encoded write-set without decoding or
// checking the rest; ok is false when data does not start like one. Only
// Decode tells whether the write-set is intact.
func PeekID(data []byte) (id ID, ok bool) {
	if !IsWriteSet(data) {
		return ID{}, false
	}
	d := decoder{buf: data[4:]}
	id.Origin = d.uvarint()
	id.Seq = d.uvarint()
	return id, !d.err
}

// Decode parses an encoded write-set. Byte slices in the result alias data.
func Decode(data []byte) (*WriteSet, error) {
	if len(data) < 8 || !IsWriteSet(data) {
		return nil, ErrCorrupt
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	d := decoder{buf: body[4:]}
	ws := &WriteSet{}
	ws.ID.Origin = d.uvarint()
	ws.ID.Seq = d.uvarint()
	ws.LastSeen = d.uvarint()
	ws.Flags = Flags(d.uvarint())
	if ws.Flags&StreamFlags != 0 {
		ws.Stream = Stream{ID: ID{Origin: d.uvarint(), Seq: d.uvarint()}, Node: d.uvarint(), Frag: d.uvarint()}
	}
	if n := d.count(3); n > 0 {
		ws.Tables = make([]Table, n)
		for i := range ws.Tables {
			ws.Tables[i] = Table{ID: d.uvarint(), SchemaPos: d.uvarint(), Flags: TableFlags(d.uvarint())}
		}
	}
	if n := d.count(3); n > 0 {
		ws.Keys = make([]Key, n)
		for i := range ws.Keys {
			ws.Keys[i] = Key{Kind: KeyKind(d.byte()), Key: d.bytes(), Pos: d.uvarint()}
		}
	}
	if n := d.count(3); n > 0 {
		ws.Ops = make([]Op, n)
		for i := range ws.Ops {
			op := &ws.Ops[i]
			op.Kind = OpKind(d.byte())
			op.TableID = d.uvarint()
			switch op.Kind {
			case OpPut:
				op.Key = d.bytes()
				op.Value = d.bytes()
			case OpDelete:
				op.Key = d.bytes()
			case OpDelta:
				op.Key = d.bytes()
				op.Value = d.bytes()
				op.Delta = d.varint()
			case OpSchema:
				op.Payload = d.bytes()
			case OpAutoIncrement:
				op.Delta = d.varint()
			default:
				d.err = true
			}
		}
	}
	if d.err || len(d.buf) != 0 {
		return nil, ErrCorrupt
	}
	return ws, nil
}

type decoder struct {
	buf []byte
	err bool
}

func (d *decoder) uvarint() uint64 {
	if d.err {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.err = true
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err {
		return 0
	}
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.err = true
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) byte() byte {
	if d.err || len(d.buf) == 0 {
		d.err = true
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err || n > uint64(len(d.buf)) {
		d.err = true
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

// count reads an element count and rejects counts that cannot fit in the
// remaining bytes (each element takes at least minSize bytes).
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if d.err || n > uint64(len(d.buf)/minSize+1) {
		d.err = true
		return 0
	}
	return int(n)
}
