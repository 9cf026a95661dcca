package txn

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/google/btree"

	"github.com/certusdb/certus/internal/codec"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// ReadMode says how a read sees data and what it locks.
type ReadMode uint8

// Read modes.
const (
	// Snapshot reads the transaction's read view and locks nothing.
	Snapshot ReadMode = iota
	// CurrentShared locks each row shared, then reads its latest committed
	// version (SELECT ... FOR SHARE, INSERT ... SELECT sources).
	CurrentShared
	// CurrentExclusive locks each row exclusively, then reads its latest
	// committed version (UPDATE, DELETE, SELECT ... FOR UPDATE).
	CurrentExclusive
	// Reference is CurrentShared for a foreign key's check that a parent
	// row exists: each row read is also certified like a written one, so a
	// concurrent change of the parent on another node fails one of the two
	// transactions (Galera's shared keys, conservatively).
	Reference
)

// lockMode is the row lock a current read mode takes.
func (m ReadMode) lockMode() LockMode {
	if m == CurrentShared || m == Reference {
		return Shared
	}
	return Exclusive
}

// maxSnapReads bounds the per-key record of snapshot reads; beyond it a
// table counts as read entirely at the snapshot.
const maxSnapReads = 4096

// maxSnapSpans bounds the record of primary-key ranges scanned at the
// snapshot; beyond it a table's further range scans count as reading all
// of it.
const maxSnapSpans = 256

// Txn is one transaction. It is used by one session at a time.
type Txn struct {
	m    *Manager
	id   uint64
	opts Options

	owner lockOwner

	view   *storage.ReadView // snapshot; per statement under READ COMMITTED
	cat    *storage.Catalog  // catalog in use, including own DDL
	catPos uint64            // applied seqno when cat was taken
	minPos atomic.Uint64     // lowest position used; 0 until first use

	schemaOps []*storage.SchemaOp
	// writing is set while the transaction has written (Manager.Writing)
	writing bool
	autoInc map[uint64]uint64 // AUTO_INCREMENT values set by DDL
	ddl     map[uint64]writeset.TableFlags
	tables  map[uint64]*tableBuf

	snapReads   map[string]struct{}
	snapScanned map[uint64]bool
	// snapSpans are the primary-key ranges of tables scanned at the
	// snapshot (those not in snapScanned), nSnapSpans their number
	snapSpans  map[uint64][]keySpan
	nSnapSpans int
	// refs are the keys of rows read in Reference mode, with their
	// positions; they are certified with the write-set.
	refs map[string]uint64

	// undo records the buffered changes in order; undoBase counts the
	// records dropped below it when a fragment shipped (see
	// replicateFragment), so marks (statement, savepoints) are undoBase +
	// index
	undo       []undoRec
	undoBase   int
	stmtMark   int
	stmtBufs   map[uint64]*tableBuf // see stmtview.go
	savepoints []savepoint

	stream *streamState // set once a fragment was sent
	// lowered restores the statement goroutine's CPU priority that a
	// fragment lowered (Config.StreamNice); nil when not lowered
	lowered  func() bool
	inflight *inflight // the fragment being replicated, if any
	since    since     // changes since the last fragment

	registered bool
	done       bool
	// aborted is set when the transaction lost a deadlock: like InnoDB it
	// is rolled back at once (locks released, changes discarded); the
	// session finishes it.
	aborted bool
}

type savepoint struct {
	name      string
	undo      int
	schemaOps int
	cat       *storage.Catalog
}

// ID is the transaction's id (unique on this node).
func (t *Txn) ID() uint64 { return t.id }

// ReadOnly reports whether the transaction was started READ ONLY.
func (t *Txn) ReadOnly() bool { return t.opts.ReadOnly }

// Isolation is the transaction's isolation level.
func (t *Txn) Isolation() Isolation { return t.opts.Isolation }

// HasWrites reports whether the transaction changed anything.
func (t *Txn) HasWrites() bool { return len(t.tables) > 0 || len(t.schemaOps) > 0 }

// pin registers the transaction as open before it reads its first
// position, with the applied seqno as a lower bound of every position it
// will use. Registering first closes a race with LowWatermark: a
// transaction that read position P but was not yet registered would be
// missed by a concurrent LowWatermark that already saw applied > P, and
// its write-set would then fail certification as too old.
func (t *Txn) pin() {
	if !t.registered {
		t.registered = true
		t.m.register(t)
	}
}

// usePos notes a position the transaction certifies against (it never
// lowers minPos below the bound pin set, since positions only grow).
func (t *Txn) usePos(p uint64) {
	if cur := t.minPos.Load(); cur == 0 || p < cur {
		t.minPos.Store(p)
	}
}

// Catalog returns the catalog the transaction sees, with its own DDL.
func (t *Txn) Catalog() *storage.Catalog {
	if t.cat == nil {
		t.pin()
		if t.view != nil {
			t.cat, t.catPos = t.view.Catalog, t.view.Seqno
		} else {
			v := t.m.eng.Latest()
			t.cat, t.catPos = v.Catalog, v.Seqno
		}
		t.usePos(t.catPos)
	}
	return t.cat
}

// snapshot returns the transaction's read view, taking it on first use.
func (t *Txn) snapshot() *storage.ReadView {
	if t.view == nil {
		t.pin()
		t.view = t.m.eng.View()
		t.usePos(t.view.Seqno)
	}
	return t.view
}

// TakeSnapshot takes the transaction's snapshot now, under REPEATABLE
// READ, instead of at its first read (START TRANSACTION WITH CONSISTENT
// SNAPSHOT); under READ COMMITTED each statement takes its own, as InnoDB
// ignores the clause there.
func (t *Txn) TakeSnapshot() {
	if t.opts.Isolation != ReadCommitted {
		t.snapshot()
	}
}

// SnapshotFixed reports whether the transaction's plain reads can no
// longer change: it runs under REPEATABLE READ and has taken its
// snapshot. Waiting for the cluster (wsrep_sync_wait) before such a read
// is then pointless.
func (t *Txn) SnapshotFixed() bool {
	return t.opts.Isolation != ReadCommitted && t.view != nil
}

// NewStatement is called before each statement. Under READ COMMITTED it
// drops the statement snapshot so the next read takes a fresh one.
func (t *Txn) NewStatement() {
	t.endStatement()
	if t.opts.Isolation == ReadCommitted && t.view != nil {
		t.view.Close()
		t.view = nil
	}
}

func (t *Txn) buf(ti *storage.TableInfo, create bool) *tableBuf {
	b := t.tables[ti.Def.ID]
	if b == nil && create {
		if t.tables == nil {
			t.tables = map[uint64]*tableBuf{}
		}
		t.wrote()
		t.Catalog()
		b = newTableBuf(ti, t.catPos)
		t.tables[ti.Def.ID] = b
	}
	if b != nil && b.info != ti && b.info.Def.ID == ti.Def.ID {
		b.info = ti // own DDL changed the definition
	}
	return b
}

func (t *Txn) noteSnapRead(ti *storage.TableInfo, pk []byte) {
	if t.snapScanned[ti.Def.ID] {
		return
	}
	if len(t.snapReads) >= maxSnapReads {
		t.noteSnapScan(ti)
		return
	}
	if t.snapReads == nil {
		t.snapReads = map[string]struct{}{}
	}
	t.snapReads[string(storage.CertKey(ti.Def.ID, pk))] = struct{}{}
}

func (t *Txn) noteSnapScan(ti *storage.TableInfo) {
	if t.snapScanned == nil {
		t.snapScanned = map[uint64]bool{}
	}
	t.snapScanned[ti.Def.ID] = true
	if spans := t.snapSpans[ti.Def.ID]; spans != nil {
		t.nSnapSpans -= len(spans)
		delete(t.snapSpans, ti.Def.ID)
	}
}

// keySpan is a range [lo, hi) of encoded primary keys; nil is unbounded.
type keySpan struct{ lo, hi []byte }

func (s keySpan) contains(pk []byte) bool {
	return (s.lo == nil || bytes.Compare(pk, s.lo) >= 0) && (s.hi == nil || bytes.Compare(pk, s.hi) < 0)
}

// noteSnapSpan records a scan of the primary keys in [lo, hi) at the
// snapshot. Only the keys in it count as read there: a sysbench-like
// transaction that reads a hundred rows by range and then updates others
// is certified for those others from the moment it locked them, as
// Galera certifies it, instead of from its first read. A scan may stop
// early (LIMIT); the whole range still counts, which is conservative.
func (t *Txn) noteSnapSpan(ti *storage.TableInfo, lo, hi []byte) {
	if t.snapScanned[ti.Def.ID] {
		return
	}
	if lo == nil && hi == nil || t.nSnapSpans >= maxSnapSpans {
		t.noteSnapScan(ti)
		return
	}
	if t.snapSpans == nil {
		t.snapSpans = map[uint64][]keySpan{}
	}
	t.snapSpans[ti.Def.ID] = append(t.snapSpans[ti.Def.ID], keySpan{lo: bytes.Clone(lo), hi: bytes.Clone(hi)})
	t.nSnapSpans++
}

// readPos returns the certification position of a key given the position
// of the current read that preceded the write: the snapshot position if the
// transaction read the key (or scanned its table) at its snapshot first.
func (t *Txn) readPos(ti *storage.TableInfo, pk []byte, current uint64) uint64 {
	if t.view != nil {
		if t.snapScanned[ti.Def.ID] {
			return min(current, t.view.Seqno)
		}
		if _, ok := t.snapReads[string(storage.CertKey(ti.Def.ID, pk))]; ok {
			return min(current, t.view.Seqno)
		}
		for _, s := range t.snapSpans[ti.Def.ID] {
			if s.contains(pk) {
				return min(current, t.view.Seqno)
			}
		}
	}
	return current
}

// lock takes a row lock and returns the position of the first current read
// under it: the applied seqno when the transaction first acquired the lock.
// A write computed from a read under the lock is certified against writes
// after that position, even if the write itself happens much later.
func (t *Txn) lock(ctx context.Context, key []byte, mode LockMode) (uint64, error) {
	t.pin() // before the lock table reads a position (see pin)
	p, err := t.m.locks.Lock(ctx, &t.owner, key, mode, t.opts.LockWaitTimeout)
	switch err {
	case nil:
	case ErrLockWaitTimeout:
		t.m.LockTimeouts.Add(1)
		return 0, err
	case ErrDeadlock:
		t.m.Deadlocks.Add(1)
		t.abort()
		return 0, err
	default:
		return 0, err
	}
	t.usePos(p)
	if s := t.m.locks.overwrittenAt(&t.owner, key); s > p {
		// another node's write-set changed the row after this
		// transaction's read under the lock: it would fail certification
		t.m.BFAborts.Add(1)
		t.abort()
		return 0, ErrDeadlock
	}
	return p, nil
}

// LockKey takes the row lock of a certification key for a current read
// mode (shared for CurrentShared and Reference, exclusive for
// CurrentExclusive).
func (t *Txn) LockKey(ctx context.Context, key []byte, mode ReadMode) error {
	_, err := t.lock(ctx, key, mode.lockMode())
	return err
}

// lockRow locks a row for a current read in mode and, in Reference mode,
// notes it for certification.
func (t *Txn) lockRow(ctx context.Context, ti *storage.TableInfo, pk []byte, mode ReadMode) error {
	key := storage.CertKey(ti.Def.ID, pk)
	pos, err := t.lock(ctx, key, mode.lockMode())
	if err != nil || mode != Reference {
		return err
	}
	if t.refs == nil {
		t.refs = map[string]uint64{}
	}
	pos = t.readPos(ti, pk, pos)
	if old, ok := t.refs[string(key)]; !ok || pos < old {
		t.refs[string(key)] = pos
	}
	return nil
}

// Get reads the row with primary key pk.
func (t *Txn) Get(ctx context.Context, ti *storage.TableInfo, pk []byte, mode ReadMode) (sql.Row, bool, error) {
	if t.done {
		return nil, false, ErrTxnDone
	}
	if mode != Snapshot {
		if err := t.lockRow(ctx, ti, pk, mode); err != nil {
			return nil, false, err
		}
	}
	// own is the transaction's change of a keyless row: a change of its
	// count, which decides together with the stored count
	var own *rowEntry
	b := t.buf(ti, false)
	if b != nil {
		if e, ok := b.get(pk); ok {
			if !ti.Def.Keyless() {
				if e.deleted {
					return nil, false, nil
				}
				return e.row, true, nil
			}
			own = e
		}
		if b.truncated {
			if own != nil && own.delta > 0 {
				return own.row, true, nil
			}
			return nil, false, nil
		}
	}
	var r *storage.ReadView
	if mode == Snapshot {
		r = t.snapshot()
		t.noteSnapRead(ti, pk)
	} else {
		r = t.m.eng.Latest()
	}
	v, ok, err := r.Get(storage.RowKey(ti.Def.ID, pk))
	if err != nil {
		return nil, false, err
	}
	if own != nil {
		stored := uint64(0)
		if ok {
			n, _, valid := storage.SplitKeylessValue(v)
			if !valid {
				return nil, false, storage.ErrCorruptData
			}
			stored = n
		}
		if int64(stored)+own.delta <= 0 {
			return nil, false, nil
		}
		return own.row, true, nil
	}
	if !ok {
		return nil, false, nil
	}
	row, err := ti.DecodeRow(v)
	if err != nil {
		return nil, false, err
	}
	return row, true, nil
}

// Insert adds row. A duplicate primary or unique key returns a
// *DuplicateKeyError carrying the existing row.
func (t *Txn) Insert(ctx context.Context, ti *storage.TableInfo, row sql.Row) error {
	if err := t.writable(); err != nil {
		return err
	}
	pk, err := ti.EncodePK(ctx, row)
	if err != nil {
		return err
	}
	if ti.Def.Keyless() {
		if err := t.checkUnique(ctx, ti, pk, row, nil); err != nil {
			return err
		}
		return t.putKeyless(ctx, ti, pk, row, 1)
	}
	pos, err := t.lock(ctx, storage.CertKey(ti.Def.ID, pk), Exclusive)
	if err != nil {
		return err
	}
	existing, found, err := t.Get(ctx, ti, pk, CurrentExclusive)
	if err != nil {
		return err
	}
	if found {
		return &DuplicateKeyError{Table: ti.Def.Name, Index: "PRIMARY", IsPK: true, Existing: existing, Key: ti.KeyString(ti.PKOrds, row)}
	}
	upos, err := t.checkUniqueAll(ctx, ti, pk, row, nil)
	if err != nil {
		return err
	}
	return t.putRow(ctx, ti, &rowEntry{pk: pk, row: row, pos: t.readPos(ti, pk, pos), uniquePos: upos})
}

// Update replaces old with new.
func (t *Txn) Update(ctx context.Context, ti *storage.TableInfo, old, new sql.Row) error {
	if err := t.writable(); err != nil {
		return err
	}
	oldPK, err := ti.EncodePK(ctx, old)
	if err != nil {
		return err
	}
	if ti.Def.Keyless() {
		if err := t.putKeyless(ctx, ti, oldPK, old, -1); err != nil {
			return err
		}
		newPK, err := ti.EncodePK(ctx, new)
		if err != nil {
			return err
		}
		if err := t.checkUnique(ctx, ti, newPK, new, old); err != nil {
			return err
		}
		return t.putKeyless(ctx, ti, newPK, new, 1)
	}
	newPK, err := ti.EncodePK(ctx, new)
	if err != nil {
		return err
	}
	if string(oldPK) != string(newPK) {
		if err := t.Delete(ctx, ti, old); err != nil {
			return err
		}
		return t.Insert(ctx, ti, new)
	}
	pos, err := t.lock(ctx, storage.CertKey(ti.Def.ID, oldPK), Exclusive)
	if err != nil {
		return err
	}
	upos, err := t.checkUniqueAll(ctx, ti, oldPK, new, old)
	if err != nil {
		return err
	}
	e := &rowEntry{pk: oldPK, row: new, pos: t.readPos(ti, oldPK, pos), uniquePos: upos}
	if b := t.buf(ti, false); b != nil {
		if prev, ok := b.get(oldPK); ok {
			e.pos = min(e.pos, prev.pos)
		}
	}
	return t.putRow(ctx, ti, e)
}

// Delete removes row.
func (t *Txn) Delete(ctx context.Context, ti *storage.TableInfo, row sql.Row) error {
	if err := t.writable(); err != nil {
		return err
	}
	pk, err := ti.EncodePK(ctx, row)
	if err != nil {
		return err
	}
	if ti.Def.Keyless() {
		return t.putKeyless(ctx, ti, pk, row, -1)
	}
	pos, err := t.lock(ctx, storage.CertKey(ti.Def.ID, pk), Exclusive)
	if err != nil {
		return err
	}
	e := &rowEntry{pk: pk, deleted: true, pos: t.readPos(ti, pk, pos)}
	if b := t.buf(ti, false); b != nil {
		if prev, ok := b.get(pk); ok {
			e.pos = min(e.pos, prev.pos)
		}
	}
	return t.putRow(ctx, ti, e)
}

func (t *Txn) writable() error {
	if t.done {
		return ErrTxnDone
	}
	if t.aborted {
		return ErrDeadlock
	}
	if t.opts.ReadOnly {
		return ErrReadOnly
	}
	return nil
}

// putRow buffers a row change. A streaming transaction first replicates
// the changes since its last fragment when they fill one.
func (t *Txn) putRow(ctx context.Context, ti *storage.TableInfo, e *rowEntry) error {
	if err := t.fragmentIfDue(ctx); err != nil {
		return err
	}
	t.freeze(ti.Def.ID)
	b := t.buf(ti, true)
	prev, had := b.put(e)
	rec := undoRec{buf: b, pk: e.pk}
	if had {
		rec.prev = prev
	}
	t.undo = append(t.undo, rec)
	t.noteChange(b, e)
	return nil
}

// putKeyless changes the count of a keyless row by delta.
func (t *Txn) putKeyless(ctx context.Context, ti *storage.TableInfo, pk []byte, row sql.Row, delta int64) error {
	// a fragment due goes first: the entry below takes over what it shipped
	if err := t.fragmentIfDue(ctx); err != nil {
		return err
	}
	pos, err := t.lock(ctx, storage.CertKey(ti.Def.ID, pk), Exclusive)
	if err != nil {
		return err
	}
	e := &rowEntry{pk: pk, row: row, delta: delta, pos: t.readPos(ti, pk, pos)}
	if b := t.buf(ti, false); b != nil {
		if prev, ok := b.get(pk); ok {
			e.delta += prev.delta
			e.shippedDelta = prev.shippedDelta
			e.pos = min(e.pos, prev.pos)
		}
	}
	return t.putRow(ctx, ti, e)
}

// checkUniqueAll checks every unique index for new (old is the row it
// replaces, or nil) and returns the position of the checks.
func (t *Txn) checkUniqueAll(ctx context.Context, ti *storage.TableInfo, pk []byte, new, old sql.Row) (uint64, error) {
	pos := uint64(0)
	for i := range ti.Indexes {
		ii := &ti.Indexes[i]
		if !ii.Def.Unique || !ii.Usable {
			continue
		}
		p, err := t.checkUniqueIndex(ctx, ti, ii, pk, new, old)
		if err != nil {
			return 0, err
		}
		if p != 0 && (pos == 0 || p < pos) {
			pos = p
		}
	}
	return pos, nil
}

// checkUnique is checkUniqueAll for keyless tables.
func (t *Txn) checkUnique(ctx context.Context, ti *storage.TableInfo, pk []byte, new, old sql.Row) error {
	_, err := t.checkUniqueAll(ctx, ti, pk, new, old)
	return err
}

// checkUniqueIndex locks the unique key of new in ii and verifies no other
// row holds it, in the latest committed state or the transaction's writes.
// A keyless row's key is a hash of its contents, so there another row may
// have the same key: an identical copy, which holds the unique key too.
func (t *Txn) checkUniqueIndex(ctx context.Context, ti *storage.TableInfo, ii *storage.IndexInfo, pk []byte, new, old sql.Row) (uint64, error) {
	vals, hasNull, err := ii.IndexValues(new)
	if err != nil || hasNull {
		return 0, err
	}
	if old != nil {
		if ov, _, err := ii.IndexValues(old); err == nil && string(ov) == string(vals) {
			return 0, nil // unchanged: this row already owns the key
		}
	}
	pos, err := t.lock(ctx, storage.UniqueCertKey(ti.Def.ID, ii.Def.ID, vals), Exclusive)
	if err != nil {
		return 0, err
	}
	dup := func(otherPK []byte) error {
		existing, found, err := t.Get(ctx, ti, otherPK, CurrentShared)
		if err != nil {
			return err
		}
		if !found {
			return nil
		}
		if ev, _, err := ii.IndexValues(existing); err != nil || string(ev) != string(vals) {
			return err
		}
		return &DuplicateKeyError{Table: ti.Def.Name, Index: ii.Def.Name, Existing: existing, Key: ti.KeyString(ii.Ords, new)}
	}
	b := t.buf(ti, false)
	if b != nil {
		tree, err := b.index(ii)
		if err != nil {
			return 0, err
		}
		// every buffered row with the key: a keyless row's entry stays
		// while its count drops to 0, so the first one may be gone
		var found [][]byte
		tree.AscendGreaterOrEqual(idxEntry{key: vals}, func(e idxEntry) bool {
			if len(e.key) < len(vals) || string(e.key[:len(vals)]) != string(vals) {
				return false
			}
			if string(e.pk) != string(pk) || ti.Def.Keyless() {
				found = append(found, e.pk)
			}
			return true
		})
		for _, other := range found {
			if err := dup(other); err != nil {
				return 0, err
			}
		}
	}
	if b == nil || !b.truncated {
		latest := t.m.eng.Latest()
		p := ii.ValuesPrefix(vals)
		it, err := latest.NewIter(p, codec.PrefixEnd(p))
		if err != nil {
			return 0, err
		}
		var others [][]byte
		for it.First(); it.Valid(); it.Next() {
			other := append([]byte(nil), it.Value()...)
			if string(other) == string(pk) && !ti.Def.Keyless() {
				continue
			}
			if b != nil {
				if _, mine := b.get(other); mine {
					continue // the buffered version decides, checked above
				}
			}
			others = append(others, other)
		}
		if err := it.Close(); err != nil {
			return 0, err
		}
		for _, o := range others {
			if err := dup(o); err != nil {
				return 0, err
			}
		}
	}
	return pos, nil
}

// Truncate deletes all rows of the table and returns how many there were.
func (t *Txn) Truncate(ctx context.Context, ti *storage.TableInfo) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	n := 0
	it, err := t.Scan(ctx, ti, nil, nil, false, Snapshot)
	if err != nil {
		return 0, err
	}
	for {
		_, _, ok, err := it.Next()
		if err != nil {
			it.Close()
			return 0, err
		}
		if !ok {
			break
		}
		n++
	}
	it.Close()
	t.freeze(ti.Def.ID)
	b := t.buf(ti, true)
	t.undo = append(t.undo, undoRec{buf: b, truncated: b.truncated, rows: b.rows})
	b.rows = btree.NewG[*rowEntry](16, lessEntry)
	b.idx = map[uint32]*btree.BTreeG[idxEntry]{}
	b.truncated = true
	if err := t.SchemaChange(&storage.SchemaOp{Kind: storage.OpTruncate, TableID: ti.Def.ID}, ti.Def.ID); err != nil {
		return 0, err
	}
	return n, nil
}

// SchemaChange adds a schema operation to the transaction; the transaction
// sees its effect at once. tableIDs are the existing tables it changes.
func (t *Txn) SchemaChange(op *storage.SchemaOp, tableIDs ...uint64) error {
	if err := t.writable(); err != nil {
		return err
	}
	cat := t.Catalog()
	next, err := op.ApplyTo(cat, cat.Seqno)
	if err != nil {
		return err
	}
	t.cat = next
	t.wrote()
	t.schemaOps = append(t.schemaOps, op)
	if t.ddl == nil {
		t.ddl = map[uint64]writeset.TableFlags{}
	}
	for _, id := range tableIDs {
		t.ddl[id] |= writeset.TableSchemaChange
	}
	return nil
}

// SetAutoIncrement records ALTER TABLE ... AUTO_INCREMENT = v: the
// table's counter is raised to at least v when the write-set applies.
func (t *Txn) SetAutoIncrement(tableID, v uint64) error {
	if err := t.writable(); err != nil {
		return err
	}
	if t.autoInc == nil {
		t.autoInc = map[uint64]uint64{}
	}
	t.autoInc[tableID] = v
	if t.ddl == nil {
		t.ddl = map[uint64]writeset.TableFlags{}
	}
	t.ddl[tableID] |= writeset.TableSchemaChange
	return nil
}

// Rewrite replaces a table's definition and all its rows (a table rewrite
// for ALTER TABLE); the counter of AUTO_INCREMENT is kept. A rewrite that
// fails (a duplicate key under the new definition) leaves the transaction
// as it was: go-mysql-server still commits the failed statement's implicit
// transaction, which must not keep half a table.
func (t *Txn) Rewrite(ctx context.Context, old *storage.TableInfo, def *storage.TableDef, rows []sql.Row) (err error) {
	if err := t.writable(); err != nil {
		return err
	}
	before := t.mark("")
	defer func() {
		if err != nil && !t.aborted {
			t.restore(before)
		}
	}()
	next := t.m.PeekAutoIncrement(old.Def.ID)
	if _, err := t.Truncate(ctx, old); err != nil {
		return err
	}
	if err := t.SchemaChange(&storage.SchemaOp{Kind: storage.OpPutTable, Table: def, TableID: def.ID}, def.ID); err != nil {
		return err
	}
	if err := t.SetAutoIncrement(def.ID, next); err != nil {
		return err
	}
	nd, _ := t.Catalog().Table(def.ID)
	ti, err := nd.Info()
	if err != nil {
		return err
	}
	for _, row := range rows {
		if err := t.Insert(ctx, ti, row); err != nil {
			return err
		}
	}
	return nil
}

// StatementBegin marks the start of a statement's changes, once per
// statement.
func (t *Txn) StatementBegin() {
	if t.stmtMark < 0 && !t.aborted {
		t.stmtMark = t.undoLen()
	}
}

// StatementDiscard undoes the changes of the current statement (a failed
// statement inside a transaction leaves the transaction's earlier work).
// A streaming transaction whose statement replicated some of its rows is
// rolled back whole.
func (t *Txn) StatementDiscard() {
	switch {
	case t.stmtMark < 0 || t.aborted:
	case t.belowShipped(t.stmtMark):
		t.abort()
	default:
		t.rollbackTo(t.stmtMark)
	}
	t.endStatement()
}

// StatementComplete ends the statement's change tracking.
func (t *Txn) StatementComplete() {
	if t.stmtMark >= 0 && t.undoLen() > t.stmtMark {
		t.since.stmts++
	}
	t.endStatement()
}

// undoLen is the undo mark of the transaction's current state.
func (t *Txn) undoLen() int { return t.undoBase + len(t.undo) }

// rollbackTo undoes the changes after undo mark. A mark below undoBase
// asks for changes a fragment replicated, which only rolling back the
// whole transaction undoes (callers check belowShipped first).
func (t *Txn) rollbackTo(mark int) {
	if mark < t.undoBase {
		t.abort()
		return
	}
	mark -= t.undoBase
	for i := len(t.undo) - 1; i >= mark; i-- {
		u := t.undo[i]
		if u.rows != nil {
			u.buf.rows = u.rows
			u.buf.idx = map[uint32]*btree.BTreeG[idxEntry]{}
			u.buf.truncated = u.truncated
			continue
		}
		if u.prev != nil {
			u.buf.put(u.prev)
		} else {
			u.buf.remove(u.pk)
		}
	}
	t.undo = t.undo[:mark]
}

// Savepoint records a savepoint, replacing one of the same name.
func (t *Txn) Savepoint(name string) {
	t.ReleaseSavepoint(name)
	t.savepoints = append(t.savepoints, t.mark(name))
}

// mark is the transaction's state as a savepoint.
func (t *Txn) mark(name string) savepoint {
	return savepoint{name: name, undo: t.undoLen(), schemaOps: len(t.schemaOps), cat: t.cat}
}

// restore undoes the changes made after sp.
func (t *Txn) restore(sp savepoint) {
	if t.rollbackTo(sp.undo); t.aborted {
		return
	}
	t.schemaOps = t.schemaOps[:sp.schemaOps]
	if sp.cat != nil {
		t.cat = sp.cat
	}
}

// RollbackToSavepoint undoes changes made after the savepoint, which stays.
func (t *Txn) RollbackToSavepoint(name string) error {
	for i := len(t.savepoints) - 1; i >= 0; i-- {
		sp := t.savepoints[i]
		if sp.name == name {
			if t.belowShipped(sp.undo) {
				t.abort()
				return ErrStreamRolledBack
			}
			t.restore(sp)
			t.savepoints = t.savepoints[:i+1]
			return nil
		}
	}
	return fmt.Errorf("SAVEPOINT %s does not exist", name)
}

// ReleaseSavepoint removes a savepoint and reports whether it existed.
func (t *Txn) ReleaseSavepoint(name string) bool {
	for i := len(t.savepoints) - 1; i >= 0; i-- {
		if t.savepoints[i].name == name {
			t.savepoints = append(t.savepoints[:i], t.savepoints[i+1:]...)
			return true
		}
	}
	return false
}

// Commit replicates the transaction's write-set and waits until it is
// certified and applied locally. On certification failure it returns an
// error wrapping ErrCertification. The transaction is finished either way.
func (t *Txn) Commit(ctx context.Context) (writeset.Outcome, error) {
	if t.done {
		return writeset.Outcome{}, ErrTxnDone
	}
	defer t.finish()
	if t.aborted {
		return writeset.Outcome{}, ErrDeadlock
	}
	if !t.HasWrites() && len(t.autoInc) == 0 {
		return writeset.Outcome{Committed: true}, nil // nothing to replicate: not a commit Galera counts
	}
	if err := t.awaitFragment(); err != nil {
		return writeset.Outcome{}, err
	}
	if err := t.seal(ctx); err != nil {
		return writeset.Outcome{}, err
	}
	ws, err := t.writeSet(ctx)
	if err != nil {
		t.rollbackStream()
		return writeset.Outcome{}, err
	}
	if t.stream != nil {
		ws.Flags |= writeset.FlagStreamCommit
		ws.Stream = writeset.Stream{ID: t.stream.id, Frag: t.stream.frag}
	}
	t.m.noteReported(ws.ID.Origin, ws.LastSeen)
	out, err := t.m.cfg.Replicator.Replicate(ctx, ws)
	if err != nil {
		// the outcome is unknown: should the commit still be ordered, it
		// is ordered before this rollback or fails behind it
		t.rollbackStream()
		return out, err
	}
	t.stream = nil
	if out.Rejected != nil {
		return out, out.Rejected
	}
	if !out.Committed {
		t.m.CertFailures.Add(1)
		return out, certError(out)
	}
	t.m.Commits.Add(1)
	return out, nil
}

// abort rolls the transaction back in place after it lost a deadlock; its
// read view stays open for iterators still using it until Rollback.
func (t *Txn) abort() {
	t.rollbackStream()
	t.aborted = true
	t.endStatement()
	t.savepoints = nil
	t.m.locks.ReleaseAll(&t.owner)
	t.tables = nil
	t.undo, t.undoBase = nil, 0
	t.schemaOps = nil
	t.wroteNothing()
	t.autoInc = nil
	t.refs = nil
}

// Aborted reports whether the transaction was rolled back as a deadlock
// victim.
func (t *Txn) Aborted() bool { return t.aborted }

// Rollback discards the transaction.
func (t *Txn) Rollback() {
	if t.done {
		return
	}
	t.m.Rollbacks.Add(1)
	t.rollbackStream()
	t.finish()
}

func (t *Txn) finish() {
	t.collect() // (every path collected it already; never leave one behind)
	t.restorePriority()
	t.done = true
	t.m.locks.ReleaseAll(&t.owner)
	if t.view != nil {
		t.view.Close()
		t.view = nil
	}
	if t.registered {
		t.m.unregister(t)
	}
	t.tables = nil
	t.undo, t.undoBase = nil, 0
	t.refs = nil
	t.stmtBufs = nil
	t.wroteNothing()
}

// wrote counts the transaction among those that have written.
func (t *Txn) wrote() {
	if !t.writing {
		t.writing = true
		t.m.Writing.Add(1)
	}
}

// wroteNothing takes the transaction out of that count (it ended, or a
// deadlock undid its writes).
func (t *Txn) wroteNothing() {
	if t.writing {
		t.writing = false
		t.m.Writing.Add(-1)
	}
}

// writeSet builds the transaction's write-set.
func (t *Txn) writeSet(ctx context.Context) (*writeset.WriteSet, error) {
	ws := &writeset.WriteSet{
		ID:       writeset.ID{Origin: t.m.cfg.Replicator.Origin(), Seq: t.id},
		LastSeen: t.m.LowWatermark(),
	}
	if len(t.schemaOps) > 0 {
		ws.Flags |= writeset.FlagDDL
		for _, op := range t.schemaOps {
			ws.Ops = append(ws.Ops, op.WriteSetOp())
		}
	}
	autoIDs := make([]uint64, 0, len(t.autoInc))
	for id := range t.autoInc {
		autoIDs = append(autoIDs, id)
	}
	sort.Slice(autoIDs, func(i, j int) bool { return autoIDs[i] < autoIDs[j] })
	for _, id := range autoIDs {
		ws.Ops = append(ws.Ops, writeset.Op{Kind: writeset.OpAutoIncrement, TableID: id, Delta: int64(t.autoInc[id])})
	}
	ids := make([]uint64, 0, len(t.tables)+len(t.ddl))
	for id := range t.tables {
		ids = append(ids, id)
	}
	for id := range t.ddl {
		if _, ok := t.tables[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	rows := 0
	for _, b := range t.tables {
		rows += t.rowCount(b)
	}
	ws.Ops = slices.Grow(ws.Ops, rows)
	ws.Keys = slices.Grow(ws.Keys, rows+len(t.refs))
	t.Catalog()
	for _, id := range ids {
		flags := t.ddl[id]
		b := t.tables[id]
		schemaPos := t.catPos
		if b != nil {
			schemaPos = b.schemaPos
			if flags&writeset.TableSchemaChange != 0 && b.rows.Len() > 0 {
				flags |= writeset.TableRewrite
			}
		}
		ws.Tables = append(ws.Tables, writeset.Table{ID: id, SchemaPos: schemaPos, Flags: flags})
		if b == nil {
			continue
		}
		if err := t.eachRow(b, func(e *rowEntry) error { return t.appendRowOp(ctx, ws, b, e) }); err != nil {
			return nil, err
		}
	}
	t.appendRefs(ws)
	return ws, nil
}

// appendRefs adds the keys of rows read in Reference mode that the
// write-set does not write.
func (t *Txn) appendRefs(ws *writeset.WriteSet) {
	if len(t.refs) == 0 {
		return
	}
	written := make(map[string]bool, len(ws.Keys))
	for _, k := range ws.Keys {
		written[string(k.Key)] = true
	}
	keys := make([]string, 0, len(t.refs))
	for k := range t.refs {
		if !written[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		ws.Keys = append(ws.Keys, writeset.Key{Kind: writeset.KeyRow, Key: []byte(k), Pos: t.refs[k]})
	}
}

func (t *Txn) appendRowOp(ctx context.Context, ws *writeset.WriteSet, b *tableBuf, e *rowEntry) error {
	ti := b.info
	ws.Keys = append(ws.Keys, writeset.Key{Kind: writeset.KeyRow, Key: storage.CertKey(b.id, e.pk), Pos: e.pos})
	switch {
	case ti.Def.Keyless():
		delta := e.delta - e.shippedDelta
		if delta == 0 {
			return nil
		}
		data, err := ti.EncodeRow(ctx, e.row)
		if err != nil {
			return err
		}
		ws.Ops = append(ws.Ops, writeset.Op{Kind: writeset.OpDelta, TableID: b.id, Key: e.pk, Value: data, Delta: delta})
		e.shippedDelta = e.delta
	case e.deleted:
		ws.Ops = append(ws.Ops, writeset.Op{Kind: writeset.OpDelete, TableID: b.id, Key: e.pk})
	default:
		data, err := ti.EncodeRow(ctx, e.row)
		if err != nil {
			return err
		}
		ws.Ops = append(ws.Ops, writeset.Op{Kind: writeset.OpPut, TableID: b.id, Key: e.pk, Value: data})
	}
	if e.row != nil && e.delta >= 0 {
		for i := range ti.Indexes {
			ii := &ti.Indexes[i]
			if !ii.Def.Unique || !ii.Usable {
				continue
			}
			vals, hasNull, err := ii.IndexValues(e.row)
			if err != nil {
				return err
			}
			if hasNull {
				continue
			}
			pos := e.uniquePos
			if pos == 0 {
				pos = e.pos
			}
			ws.Keys = append(ws.Keys, writeset.Key{Kind: writeset.KeyUnique, Key: storage.UniqueCertKey(b.id, ii.Def.ID, vals), Pos: pos})
		}
	}
	return nil
}

// DuplicateKeyError reports a duplicate primary or unique key.
type DuplicateKeyError struct {
	Table    string
	Index    string
	IsPK     bool
	Key      string
	Existing sql.Row
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("Duplicate entry '%s' for key '%s.%s'", e.Key, e.Table, e.Index)
}
