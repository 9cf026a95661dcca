// Package storage is Certus's transactional storage engine on pebble: the
// key layout of rows and secondary indexes, the catalog, consistent read
// views, and the deterministic application of write-sets at their seqno.
//
// Multi-versioning. Every applied write-set is one atomic pebble batch that
// also records the seqno it applied. A read view is a pebble snapshot taken
// together with the applied seqno and catalog, so a view is exactly "all
// write-sets with seqno ≤ S". Pebble keeps the older versions of a key for
// as long as a snapshot can see them and drops them in compaction once no
// snapshot does: that is the engine's garbage collection of old row versions.
//
// Determinism. Apply reads nothing but the write-set and the state at the
// previous seqno, so every node that applies the same log holds the same
// bytes at the same seqno.
package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/certusdb/certus/internal/codec"
	"github.com/certusdb/certus/writeset"
)

// Config configures an Engine.
type Config struct {
	// Dir is the data directory of the pebble database.
	Dir string
	// FS is the filesystem; nil means the operating system's. Simulations
	// pass an in-memory filesystem.
	FS vfs.FS
	// CacheBytes is the size of pebble's block cache (default 256 MiB).
	CacheBytes int64
	// MemTableBytes is the size of one memtable (default 8 MiB). Smaller
	// memtables keep fewer old row versions to skip in scans.
	MemTableBytes uint64
	// IngestBytes is the size of a batch (its encoded bytes) from which a
	// commit writes it as sstables and ingests them instead of committing
	// it through the WAL and the memtable (default 16 MiB; see ingest.go).
	IngestBytes int
	// BuildNice, when positive, is the nice value (1..19) of the
	// goroutines that add a streaming transaction's fragments to its
	// provisional batch (see stream.go): on a busy node that work yields
	// to the sessions. A builder that falls behind (its queue fills, or
	// the transaction commits) returns to normal priority.
	BuildNice int
	// CompactionNice, when positive, is the nice value (1..19) of
	// pebble's compactions (see compactnice.go), so that they yield to the
	// sessions on a busy node; a compaction of a deep L0 runs at normal
	// priority.
	CompactionNice int
	// Logger receives pebble's log lines; nil discards them.
	Logger pebble.Logger
	// Events, when set, receives a warning when pebble stops writes (its
	// memtables or level 0 full) and a line when they resume, with how
	// long they were stopped: every commit and the raft log wait then.
	Events *slog.Logger
	// RowCacheBytes is the size of the cache of rows that point reads
	// fetched (rowcache.go): 0 means DefaultRowCacheBytes, a negative
	// value turns the cache off.
	RowCacheBytes int64
	// LogSpans are key prefixes written in increasing key order and
	// removed from their low end by range deletions (the raft log, the
	// certification records). Flushes and compactions keep each in
	// sstables of its own; see logSpans.
	LogSpans [][]byte
}

// Engine is one node's storage.
type Engine struct {
	db   *pebble.DB
	opts *pebble.Options // opts.FS holds the database
	dir  string
	// ingestBytes is Config.IngestBytes; ingested counts the batches
	// committed by ingestion.
	ingestBytes int
	ingested    atomic.Uint64
	buildNice   int // Config.BuildNice

	applyMu sync.Mutex   // serializes Apply
	pubMu   sync.RWMutex // held for writing while a batch commits and its effects are published

	applied atomic.Uint64
	cat     atomic.Pointer[Catalog]
	digest  Digest // of the state at applied; guarded by pubMu
	// snap is the snapshot of the state at applied that views share
	// until the next commit; nil until a view asks for one.
	snap atomic.Pointer[sharedSnapshot]

	autoMu  sync.Mutex
	autoInc map[uint64]uint64 // table id -> next value

	rows *rowCache // nil when Config.RowCacheBytes turned it off

	// streams are the open streaming transactions, changed under applyMu
	// and streamsMu (see setStream): apply reads them under applyMu,
	// AwaitStreamBacklog under streamsMu
	streams     map[writeset.ID]*stream
	streamsMu   sync.Mutex
	openStreams atomic.Int64 // len(streams), for status
}

// ErrApplyRejected wraps a deterministic refusal to apply a write-set (for
// example a unique index built over duplicate values). Every node refuses it
// alike; the origin reports the wrapped error to its client.
var ErrApplyRejected = errors.New("storage: write-set rejected at apply")

// ErrCorruptData is returned when stored bytes fail to decode.
var ErrCorruptData = errors.New("storage: corrupt stored data")

const (
	metaApplied = "applied"
	metaDigest  = "digest"
)

// Open opens (creating if needed) the engine in cfg.Dir.
func Open(cfg Config) (*Engine, error) {
	cacheBytes := cfg.CacheBytes
	if cacheBytes == 0 {
		cacheBytes = 256 << 20
	}
	if cfg.MemTableBytes == 0 {
		cfg.MemTableBytes = 8 << 20
	}
	if cfg.IngestBytes == 0 {
		cfg.IngestBytes = 16 << 20
	}
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	opts := &pebble.Options{
		FS:           cfg.FS,
		Cache:        cache,
		MemTableSize: cfg.MemTableBytes,
		// Writes stop when the queued memtables hold this many times
		// MemTableSize. A batch larger than a memtable joins the queue
		// whole (a write-set of a million rows: ~150 MB), so a low limit
		// stopped every write, the raft log's included, until it was
		// flushed: seconds without commits and missed heartbeats.
		MemTableStopWritesThreshold: 128,
		L0CompactionThreshold:       4,
		L0StopWritesThreshold:       32,
		LBaseMaxBytes:               256 << 20,
		MaxOpenFiles:                4096,
		// Without --sync-commit the WAL is written without syncs, and a
		// memtable switch closes the old WAL with one fdatasync of all
		// it holds (up to 8 MiB), inside the commit pipeline: every
		// commit, the raft log's included, waits for it. Written back
		// every 512 KiB in the background (as pebble does for sstables),
		// that sync has little left to write. It can still wait behind a
		// compaction's sstable sync on the same file system.
		WALBytesPerSync: 512 << 10,
		Logger:          cfg.Logger,
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger{}
	}
	opts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return compression })
	for i := bottomLevels; i < len(opts.Levels); i++ {
		opts.Levels[i].BlockSize = bottomBlockSize
	}
	if len(cfg.LogSpans) > 0 {
		opts.Experimental.SpanPolicyFunc = logSpans(cfg.LogSpans)
	}
	var listeners []pebble.EventListener
	if cfg.CompactionNice > 0 {
		cn := &compactionNice{nice: cfg.CompactionNice, restore: map[int]func() bool{}}
		listeners = append(listeners, cn.listener())
	}
	if cfg.Events != nil {
		listeners = append(listeners, writeStallListener(cfg.Events))
	}
	switch len(listeners) {
	case 1:
		opts.EventListener = &listeners[0]
	case 2:
		tee := pebble.TeeEventListener(listeners[0], listeners[1])
		opts.EventListener = &tee
	}
	opts.EnsureDefaults()
	db, err := pebble.Open(cfg.Dir, opts)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", cfg.Dir, err)
	}
	e := &Engine{db: db, opts: opts, dir: cfg.Dir, ingestBytes: cfg.IngestBytes, buildNice: cfg.BuildNice, autoInc: map[uint64]uint64{}}
	switch {
	case cfg.RowCacheBytes == 0:
		e.rows = newRowCache(DefaultRowCacheBytes)
	case cfg.RowCacheBytes > 0:
		e.rows = newRowCache(cfg.RowCacheBytes)
	}
	if err := e.removeIngestLeftovers(); err != nil {
		db.Close()
		return nil, fmt.Errorf("storage: %w", err)
	}
	if err := e.load(); err != nil {
		db.Close()
		return nil, err
	}
	return e, nil
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{})  {}
func (quietLogger) Errorf(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	panic(fmt.Sprintf(format, args...))
}

// load reads the catalog, AUTO_INCREMENT counters and applied seqno.
func (e *Engine) load() error {
	cat := newCatalog()
	applied, err := e.getUint64(metaKey(metaApplied))
	if err != nil {
		return err
	}
	cat.Seqno = applied
	if err := e.scanPrefix([]byte{spaceCatalog, 'd'}, func(k, v []byte) error {
		var d DatabaseDef
		if err := jsonUnmarshal(v, &d); err != nil {
			return err
		}
		if d.Tables == nil {
			d.Tables = map[string]uint64{}
		}
		cat.dbs[lower(d.Name)] = &d
		return nil
	}); err != nil {
		return err
	}
	if err := e.scanPrefix([]byte{spaceCatalog, 't'}, func(k, v []byte) error {
		t := &TableDef{}
		if err := jsonUnmarshal(v, t); err != nil {
			return err
		}
		cat.tables[t.ID] = t
		return nil
	}); err != nil {
		return err
	}
	if v, ok, err := getCopy(e.db, catalogPrivilegesKey); err != nil {
		return err
	} else if ok {
		cat.privileges = v
	}
	if err := e.scanPrefix([]byte{spaceAutoInc}, func(k, v []byte) error {
		if len(k) != 9 || len(v) != 8 {
			return ErrCorruptData
		}
		e.autoInc[binary.BigEndian.Uint64(k[1:])] = binary.BigEndian.Uint64(v)
		return nil
	}); err != nil {
		return err
	}
	if v, ok, err := getCopy(e.db, metaKey(metaDigest)); err != nil {
		return err
	} else if ok {
		d, good := digestFrom(v)
		if !good {
			return ErrCorruptData
		}
		e.digest = d
	}
	e.applied.Store(applied)
	e.cat.Store(cat)
	return e.loadStreams()
}

func (e *Engine) scanPrefix(prefix []byte, fn func(k, v []byte) error) error {
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

func (e *Engine) getUint64(key []byte) (uint64, error) {
	v, closer, err := e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, ErrCorruptData
	}
	return binary.BigEndian.Uint64(v), nil
}

// Close closes the engine. Read views must be closed first.
func (e *Engine) Close() error {
	e.applyMu.Lock()
	for id, st := range e.streams {
		_ = st.settle(true)
		st.discard()
		e.setStream(id, nil)
	}
	e.applyMu.Unlock()
	e.pubMu.Lock()
	e.retireSnapshot().release()
	e.pubMu.Unlock()
	return e.db.Close()
}

// DB exposes the pebble database to package replication, which keeps the
// raft log under keys starting with SpaceReplication.
func (e *Engine) DB() *pebble.DB { return e.db }

// Applied is the seqno of the last applied write-set.
func (e *Engine) Applied() uint64 { return e.applied.Load() }

// Catalog is the catalog at the applied seqno.
func (e *Engine) Catalog() *Catalog { return e.cat.Load() }

// AutoIncrement returns the table's next AUTO_INCREMENT value as of the
// applied seqno (1 for a table that never had a row).
func (e *Engine) AutoIncrement(tableID uint64) uint64 {
	e.autoMu.Lock()
	defer e.autoMu.Unlock()
	if v, ok := e.autoInc[tableID]; ok && v > 0 {
		return v
	}
	return 1
}

// ReadView is a consistent view of all write-sets with seqno ≤ Seqno.
type ReadView struct {
	Seqno   uint64
	Catalog *Catalog
	// Digest is the state digest at Seqno (snapshot views only).
	Digest Digest
	snap   *sharedSnapshot
	r      pebble.Reader
	rows   *rowCache // nil unless the view reads a snapshot through the cache
}

// sharedSnapshot is a pebble snapshot that every view taken between two
// commits reads through. Taking and closing a pebble snapshot locks the
// database (and closing the oldest one looks for compactions): one per
// point read cost more than the read itself.
type sharedSnapshot struct {
	snap *pebble.Snapshot
	refs atomic.Int32 // the views reading it, plus one while it is current
	gen  uint64       // the row cache's generation when it was taken
}

func (s *sharedSnapshot) release() {
	if s != nil && s.refs.Add(-1) == 0 {
		s.snap.Close()
	}
}

// View takes a snapshot read view at the applied seqno.
func (e *Engine) View() *ReadView {
	e.pubMu.RLock()
	defer e.pubMu.RUnlock()
	// pubMu held for reading: no commit can retire the current snapshot
	s := e.snap.Load()
	if s == nil {
		n := &sharedSnapshot{snap: e.db.NewSnapshot(), gen: e.rowGen()}
		n.refs.Store(1)
		if e.snap.CompareAndSwap(nil, n) {
			s = n
		} else {
			n.snap.Close()
			s = e.snap.Load()
		}
	}
	s.refs.Add(1)
	return &ReadView{Seqno: e.applied.Load(), Catalog: e.cat.Load(), Digest: e.digest, snap: s, r: s.snap, rows: e.rows}
}

// retireSnapshot ends the sharing of the current snapshot, which no longer
// shows the applied state; its views keep it until they close. Called with
// pubMu held for writing, it returns the snapshot for the caller to
// release once it unlocked.
func (e *Engine) retireSnapshot() *sharedSnapshot {
	return e.snap.Swap(nil)
}

// Latest returns a view that reads the latest applied state at each read
// (InnoDB's "current read"). Its Seqno is a lower bound: every write-set at
// or below it is visible to every read made through the view.
func (e *Engine) Latest() *ReadView {
	e.pubMu.RLock()
	v := &ReadView{Seqno: e.applied.Load(), Catalog: e.cat.Load(), r: e.db}
	e.pubMu.RUnlock()
	return v
}

// Close releases the view's snapshot.
func (v *ReadView) Close() {
	if v.snap != nil {
		v.snap.release()
		v.snap = nil
	}
}

// rowGen is the row cache's generation; pubMu is held.
func (e *Engine) rowGen() uint64 {
	if e.rows == nil {
		return 0
	}
	return e.rows.gen
}

// Get returns a copy of the value at key, or ok=false.
func (v *ReadView) Get(key []byte) (val []byte, ok bool, err error) {
	if v.rows == nil || !cacheable(key) {
		return getCopy(v.r, key)
	}
	if val, ok := v.rows.get(key, v.snap.gen); ok {
		return val, true, nil
	}
	val, ok, err = getCopy(v.r, key)
	if ok {
		v.rows.put(key, val, v.snap.gen)
	}
	return val, ok, err
}

func getCopy(r pebble.Reader, key []byte) ([]byte, bool, error) {
	b, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), b...)
	closer.Close()
	return out, true, nil
}

// NewIter returns an iterator over [lo, hi).
func (v *ReadView) NewIter(lo, hi []byte) (*pebble.Iterator, error) {
	return v.r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
}

// ApplyResult is the outcome of applying one write-set.
type ApplyResult struct {
	// Rejected is non-nil when the write-set was deterministically refused
	// (wrapping ErrApplyRejected); nothing of it was applied.
	Rejected error
}

// KV is a key and value written atomically with an applied seqno. Package
// replication uses it to keep its own state (certification verdicts, the
// raft configuration) in step with the data.
type KV struct {
	Key   []byte
	Value []byte // nil deletes Key
}

// MarkApplied records that seqno was applied without data changes (a
// configuration change, an empty entry or a write-set that failed
// certification), together with extra.
func (e *Engine) MarkApplied(seqno uint64, extra []KV) error {
	e.applyMu.Lock()
	defer e.applyMu.Unlock()
	b := e.db.NewBatch()
	defer b.Close()
	if err := writeExtra(b, extra); err != nil {
		return err
	}
	return e.commit(b, seqno, nil, nil, Digest{})
}

func writeExtra(b *pebble.Batch, extra []KV) error {
	for _, kv := range extra {
		var err error
		if kv.Value == nil {
			err = b.Delete(kv.Key, nil)
		} else {
			err = b.Set(kv.Key, kv.Value, nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Apply applies a certified write-set at seqno, together with extra. A
// deterministic refusal (ErrApplyRejected) is returned in the result, and
// then only onReject and the seqno are written.
func (e *Engine) Apply(seqno uint64, ws *writeset.WriteSet, extra, onReject []KV) (ApplyResult, error) {
	e.applyMu.Lock()
	defer e.applyMu.Unlock()
	p, err := e.build(ws, seqno)
	if err != nil {
		return ApplyResult{}, err
	}
	return e.commitPrepared(seqno, p, extra, onReject)
}

func hasSchemaOps(ws *writeset.WriteSet) bool {
	for i := range ws.Ops {
		if ws.Ops[i].Kind == writeset.OpSchema {
			return true
		}
	}
	return false
}

// Prepared is a write-set's batch, built by Prepare before the write-set's
// turn in the log so that applying it (ApplyPrepared) only commits the
// batch: a huge write-set then holds up the commits ordered after it for
// the time of a batch commit instead of the time of building it.
type Prepared struct {
	b        *pebble.Batch
	cat      *Catalog          // the catalog after the batch; nil: unchanged
	auto     map[uint64]uint64 // AUTO_INCREMENT counters the batch raises
	delta    Digest            // the batch's change of the state digest
	rejected error             // ErrApplyRejected: nothing of it applies
	ahead    bool              // built by Prepare, before the write-set's turn
	// files is b written out ahead for ingestion (a sealed streaming
	// transaction's, see stream.writeAhead); nil: none
	files *ingestFiles
}

// Close releases a prepared batch that will not be applied (it failed
// certification). ApplyPrepared closes the batches it applies.
func (p *Prepared) Close() {
	if p.b != nil {
		p.b.Close()
		p.b = nil
	}
	if p.files != nil {
		p.files.remove()
		p.files = nil
	}
}

// CanPrepare reports whether ws may be prepared ahead of its turn: it
// holds only row puts and deletes (and AUTO_INCREMENT raises), whose
// effect depends on nothing but the old values of its own rows.
func CanPrepare(ws *writeset.WriteSet) bool {
	if ws.Flags&writeset.StreamFlags != 0 {
		return false
	}
	for i := range ws.Ops {
		switch ws.Ops[i].Kind {
		case writeset.OpPut, writeset.OpDelete, writeset.OpAutoIncrement:
		default:
			return false
		}
	}
	return true
}

// Prepare builds the batch of a write-set that CanPrepare accepts from the
// current state, concurrently with Apply of the entries before it. It is
// right only if nothing applied between now and its turn changes the rows
// it writes: the caller prepares once everything at or below the
// write-set's read positions is applied, and applies the result only if
// the write-set passes certification (which fails it if anything ordered
// after those positions wrote its keys).
func (e *Engine) Prepare(ws *writeset.WriteSet) (*Prepared, error) {
	if !CanPrepare(ws) {
		return nil, fmt.Errorf("storage: write-set %v cannot be prepared ahead", ws.ID)
	}
	p, err := e.build(ws, 0)
	if p != nil {
		p.ahead = true
	}
	return p, err
}

// build builds the batch of ws, to be applied at seqno (which only schema
// operations use). A deterministic refusal is returned in the result.
func (e *Engine) build(ws *writeset.WriteSet, seqno uint64) (*Prepared, error) {
	cat := e.cat.Load()
	a := &applier{e: e, seqno: seqno, cat: cat, auto: map[uint64]uint64{}}
	if hasSchemaOps(ws) {
		// schema operations read their own writes (a table created,
		// then filled), so they build an indexed batch
		a.b = e.db.NewIndexedBatch()
		a.r = a.b
	} else {
		a.b = e.db.NewBatchWithSize(ws.Size())
		a.r = e.db
		if len(ws.Ops) >= seqReadMin {
			it, err := e.db.NewIter(nil)
			if err != nil {
				a.b.Close()
				return nil, err
			}
			a.seq = it
		}
	}
	err := a.apply(ws)
	if a.seq != nil {
		// the reads are done: the iterator must not pin memtables while
		// the (possibly huge) batch commits
		if cerr := a.seq.Close(); err == nil {
			err = cerr
		}
	}
	p := &Prepared{b: a.b, auto: a.auto, delta: a.d, rejected: err}
	if a.cat != cat {
		p.cat = a.cat
	}
	if err != nil && !errors.Is(err, ErrApplyRejected) {
		p.Close()
		return nil, err
	}
	return p, nil
}

// ApplyPrepared applies at seqno a write-set prepared by Prepare that
// passed certification, like Apply, and releases p.
func (e *Engine) ApplyPrepared(seqno uint64, p *Prepared, extra, onReject []KV) (ApplyResult, error) {
	e.applyMu.Lock()
	defer e.applyMu.Unlock()
	return e.commitPrepared(seqno, p, extra, onReject)
}

func (e *Engine) commitPrepared(seqno uint64, p *Prepared, extra, onReject []KV) (ApplyResult, error) {
	defer p.Close()
	if p.rejected != nil {
		b := e.db.NewBatch()
		defer b.Close()
		if err := writeExtra(b, onReject); err != nil {
			return ApplyResult{}, err
		}
		return ApplyResult{Rejected: p.rejected}, e.commit(b, seqno, nil, nil, Digest{})
	}
	if p.ahead {
		// counters only grow between DDLs (which fail a write-set
		// prepared ahead at certification): keep the raises still above
		// the current value
		for id, v := range p.auto {
			if v <= e.AutoIncrement(id) {
				delete(p.auto, id)
			}
		}
	}
	if p.files != nil {
		// the rows are written out: what the commit adds goes beside them
		b := e.db.NewBatch()
		defer b.Close()
		if err := writeExtra(b, extra); err != nil {
			return ApplyResult{}, err
		}
		return ApplyResult{}, e.commitOver(b, p, seqno, p.cat, p.auto, p.delta)
	}
	if err := writeExtra(p.b, extra); err != nil {
		return ApplyResult{}, err
	}
	return ApplyResult{}, e.commit(p.b, seqno, p.cat, p.auto, p.delta)
}

// commit writes the applied seqno into b, commits it and publishes the new
// seqno, catalog, AUTO_INCREMENT counters and state digest (changed by
// delta, the batch's own change) atomically for readers.
func (e *Engine) commit(b *pebble.Batch, seqno uint64, cat *Catalog, auto map[uint64]uint64, delta Digest) error {
	return e.commitOver(b, nil, seqno, cat, auto, delta)
}

// commitOver is commit of b together with the rows of over (nil: none), a
// batch written out as files ahead (Prepared.files): b's files and those
// are ingested at once. Should they not go together (b writes a key space
// they hold) or the ingestion fail, b joins over's batch, committed the
// usual way.
func (e *Engine) commitOver(b *pebble.Batch, over *Prepared, seqno uint64, cat *Catalog, auto map[uint64]uint64, delta Digest) error {
	if seqno <= e.applied.Load() {
		return fmt.Errorf("storage: apply of seqno %d after %d", seqno, e.applied.Load())
	}
	if err := b.Set(metaKey(metaApplied), binary.BigEndian.AppendUint64(nil, seqno), nil); err != nil {
		return err
	}
	d := Digest{A: e.digest.A ^ delta.A, B: e.digest.B ^ delta.B}
	e.autoMu.Lock()
	for id, v := range auto {
		k := autoIncKey(id)
		if old, had := e.autoInc[id]; had {
			d.toggle(k, binary.BigEndian.AppendUint64(nil, old))
		}
		if v == 0 {
			if err := b.Delete(k, nil); err != nil {
				e.autoMu.Unlock()
				return err
			}
			continue
		}
		val := binary.BigEndian.AppendUint64(nil, v)
		d.toggle(k, val)
		if err := b.Set(k, val, nil); err != nil {
			e.autoMu.Unlock()
			return err
		}
	}
	e.autoMu.Unlock()
	if err := b.Set(metaKey(metaDigest), d.bytes(), nil); err != nil {
		return err
	}
	var files *ingestFiles
	// join makes b part of over's batch, which is then committed alone
	join := func() error {
		if over == nil || b == over.b {
			return nil
		}
		if err := over.b.Apply(b, nil); err != nil {
			return err
		}
		b = over.b
		return nil
	}
	if over != nil {
		files = e.filesBeside(b, over.files, seqno)
		over.files = nil // ingested or removed with files, or removed
		if files == nil {
			if err := join(); err != nil {
				return err
			}
		}
	}
	if files == nil && len(b.Repr()) >= e.ingestBytes {
		var err error
		files, err = e.writeIngestFiles(b, fmt.Sprintf("seqno-%d", seqno), nil)
		if err != nil && !errors.Is(err, errNotIngestible) {
			return err
		}
	}
	e.pubMu.Lock()
	var retired *sharedSnapshot
	defer func() {
		e.pubMu.Unlock()
		retired.release()
	}()
	if e.rows != nil {
		e.rows.invalidate(b)
		if over != nil && b != over.b {
			e.rows.invalidate(over.b)
		}
	}
	// The raft log, written before apply, is what makes a commit durable;
	// the data batch rides on the next WAL sync.
	if files != nil {
		if err := e.ingest(files); err != nil {
			// an ingestion fails whole: commit the batch the usual way
			e.opts.Logger.Errorf("storage: ingesting the %d-byte batch of seqno %d failed, committing it through the WAL: %v", len(b.Repr()), seqno, err)
			files = nil
			if err := join(); err != nil {
				return err
			}
		}
	}
	if files == nil {
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
	}
	retired = e.retireSnapshot()
	if cat != nil {
		cat.Seqno = seqno
		e.cat.Store(cat)
	}
	if len(auto) > 0 {
		e.autoMu.Lock()
		for id, v := range auto {
			if v == 0 {
				delete(e.autoInc, id)
			} else {
				e.autoInc[id] = v
			}
		}
		e.autoMu.Unlock()
	}
	e.digest = d
	e.applied.Store(seqno)
	return nil
}

// CompactTable compacts the stored rows and index entries of a table
// (OPTIMIZE TABLE): overwritten and deleted versions leave the disk.
func (e *Engine) CompactTable(ctx context.Context, tableID uint64) error {
	return e.db.Compact(ctx, TablePrefix(tableID), TablePrefix(tableID+1), true)
}

// compression is how sstable blocks are compressed, by level. Flushes and
// the compactions of the upper levels rewrite the same rows again soon:
// compressing them cost a fifth of a node's CPU under bulk inserts
// (snappy), so they are stored as they are; the lower levels, where data
// settles and most of it lives, use sampledSnappy.
var compression = func() pebble.DBCompressionSettings {
	cs := pebble.UniformDBCompressionSettings(sampledSnappy)
	cs.Name = "certus"
	for i := 0; i < 3; i++ {
		cs.Levels[i] = block.NoCompression
	}
	return cs
}()

// The bottom levels (from bottomLevels down) hold most of the data, and
// what reads it in whole ranges (a state transfer's donor, compactions,
// table scans) paid a cache insertion, an allocation and a pread per
// block: with pebble's default 4 KiB blocks that was more than half of a
// donor's streaming CPU. Their blocks are bottomBlockSize instead, as
// CockroachDB's are; a point read that misses the block cache then reads
// one larger block.
const (
	bottomLevels    = 5
	bottomBlockSize = 32 << 10
)

// sampledSnappy compresses data blocks with snappy only while that pays:
// pebble's adaptive compressor compresses about one block in ten both
// ways and, while snappy saves less than a quarter on them, stores the
// others as they are without compressing them. Random text or binary
// (sysbench's rows, hashes, UUIDs, compressed payloads) saves little
// (sysbench's: 0.4% in 4 KiB blocks, 16% in 32 KiB ones), and compressing
// it anyway was a quarter of a state transfer joiner's CPU; text and
// repetitive rows (which save 80% and more) are still compressed. (MinLZ
// would be faster but needs a newer table format than the engine's; a
// profile naming it falls back to plain snappy.)
var sampledSnappy = &block.CompressionProfile{
	Name:                           "certus-sampled-snappy",
	DataBlocks:                     block.SnappyCompression.DataBlocks,
	ValueBlocks:                    block.SnappyCompression.ValueBlocks,
	OtherBlocks:                    block.NoCompression.OtherBlocks,
	MinReductionPercent:            12,
	AdaptiveReductionCutoffPercent: 25,
}

// BottomWriterOptions are the options the engine writes its bottom
// level's sstables with, for sstables built outside the engine that are
// ingested into it whole (a state transfer's).
func (e *Engine) BottomWriterOptions() sstable.WriterOptions {
	return e.opts.MakeWriterOptions(len(e.opts.Levels)-1, e.db.TableFormat())
}

// Sync makes everything committed so far durable.
func (e *Engine) Sync() error {
	return e.db.LogData(nil, pebble.Sync)
}

func lower(s string) string { return strings.ToLower(s) }

// EstimateSize estimates the bytes stored in [lo, hi), including data
// still in memtables (roughly), for query costing.
func (e *Engine) EstimateSize(lo, hi []byte) (uint64, error) {
	return e.db.EstimateDiskUsage(lo, hi)
}

// writeStallListener logs pebble's write stalls to log.
func writeStallListener(log *slog.Logger) pebble.EventListener {
	var began atomic.Int64 // unix nanoseconds of the stall in progress
	return pebble.EventListener{
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			began.Store(time.Now().UnixNano())
			log.Warn("storage stopped writes; commits and the raft log wait", "reason", info.Reason)
		},
		WriteStallEnd: func() {
			if t := began.Swap(0); t != 0 {
				log.Warn("storage resumed writes", "stopped_for", time.Since(time.Unix(0, t)).Round(time.Millisecond))
			}
		},
	}
}
