package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/certusdb/certus/internal/lowprio"
	"github.com/certusdb/certus/writeset"
)

// Streaming transactions. Every fragment that passed certification is
// added to its transaction's provisional batch (an indexed pebble batch
// that reads the database through itself), which no reader sees, and
// stored in its turn under
//
//	's' stream.origin(8) stream.seq(8) seqno(8) -> the fragment as logged
//
// with the seqno, so a restart or a state transfer rebuilds the batch. The
// last fragment commits the batch: every row of the transaction becomes
// visible at its seqno at once. Rebuilding from the current state is
// right because certification locks a fragment's rows until the
// transaction ends: nothing else writes them after the fragment's seqno.
// For the same reason a goroutine per transaction adds the fragments to
// the batch after their turn, while the apply loop goes on with later
// write-sets; the commit waits for it. Adding a fragment to a batch of a
// million rows can take a second (growing the batch touches fresh
// memory), and every later commit on the node would wait for it.
const spaceStream byte = 's'

// stream is an open streaming transaction's provisional batch.
type stream struct {
	id       writeset.ID
	a        *applier
	frags    [][]byte // keys of the stored fragments
	rejected error    // a fragment was refused: the commit is refused
	// files is the batch written out for the commit once the sealed
	// fragment was added (writeAhead); the builder's until settle, then
	// the commit's
	files *ingestFiles

	// A builder goroutine adds the fragments to the batch off the apply
	// loop (see ApplyFragment). Its queue has no bound: the apply loop
	// never waits for it before the transaction ends, since a node whose
	// apply loop waits asks the whole cluster to slow down (flow control).
	// The origin keeps its own builder close behind instead
	// (AwaitStreamBacklog), and a builder that falls further behind
	// leaves its lower priority until it has caught up.
	mu       sync.Mutex
	queue    []fragmentJob // fragments waiting for the builder
	adding   bool          // the builder is adding one
	closed   bool          // settle was called: no more fragments
	wake     chan struct{} // a token when there is work or closed is set
	progress chan struct{} // closed (and replaced) at each fragment added
	built    chan struct{} // closed when the builder has ended; nil before it started
	// abandoned says the transaction ended: skip what is queued
	abandoned atomic.Bool
	// urgent is set while the builder is behind by more than
	// builderBehind fragments, or the apply loop waits for it: it then
	// runs at normal priority (Config.BuildNice)
	urgent atomic.Bool
	err    error // the builder's first error; read after settle
}

// fragmentJob is a fragment waiting for the builder, with the catalog at
// its seqno.
type fragmentJob struct {
	cat *Catalog
	ws  *writeset.WriteSet
}

// builderBehind is how many fragments may wait for a stream's builder
// before it leaves its lower priority to catch up.
const builderBehind = 16

// enqueue hands a fragment to the stream's builder, starting it at the
// given nice value if needed.
func (st *stream) enqueue(nice int, cat *Catalog, ws *writeset.WriteSet) {
	st.mu.Lock()
	if st.built == nil {
		st.wake = make(chan struct{}, 1)
		st.progress = make(chan struct{})
		st.built = make(chan struct{})
		go st.build(nice)
	}
	st.queue = append(st.queue, fragmentJob{cat: cat, ws: ws})
	if len(st.queue) > builderBehind {
		st.urgent.Store(true)
	}
	st.mu.Unlock()
	st.signal()
}

// signal wakes the builder.
func (st *stream) signal() {
	select {
	case st.wake <- struct{}{}:
	default: // a token is already there
	}
}

// next takes the builder's next fragment, waiting for one; false when the
// stream is closed and nothing is left.
func (st *stream) next() (fragmentJob, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.adding = false
	for len(st.queue) == 0 {
		if st.closed {
			return fragmentJob{}, false
		}
		st.mu.Unlock()
		<-st.wake
		st.mu.Lock()
	}
	j := st.queue[0]
	st.queue[0] = fragmentJob{}
	st.queue = st.queue[1:]
	st.adding = true
	return j, true
}

// added tells the fragment's waiters that the builder added one; a
// builder that caught up is no longer urgent (unless the stream is
// closed, when the apply loop waits for it).
func (st *stream) added() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.queue) == 0 && !st.closed {
		st.urgent.Store(false)
	}
	close(st.progress)
	st.progress = make(chan struct{})
}

// build adds queued fragments to the batch, in their order, until the
// stream is closed and drained; below normal priority (nice) unless
// urgent.
func (st *stream) build(nice int) {
	defer close(st.built)
	var restore func() bool // set while lowered
	canRaise := nice > 0    // false once a restore failed: stay as is
	defer func() {
		if restore != nil {
			restore()
		}
	}()
	for {
		j, ok := st.next()
		if !ok {
			return
		}
		switch urgent := st.urgent.Load(); {
		case urgent && restore != nil:
			// without the right to, the thread ends with the goroutine
			canRaise = restore()
			restore = nil
		case !urgent && restore == nil && canRaise:
			restore = lowprio.Lower(nice)
		}
		if st.err == nil && !st.abandoned.Load() {
			st.dropFiles() // a fragment after the sealed one changes the batch
			st.err = st.addFragment(j.cat, j.ws)
			if st.err == nil && j.ws.Flags&writeset.FlagStreamSealed != 0 {
				st.writeAhead(func() {
					if st.urgent.Load() && restore != nil { // the commit waits
						canRaise = restore()
						restore = nil
					}
				})
			}
		}
		st.added()
	}
}

// writeAhead writes the batch out as the commit will ingest it, once the
// sealed fragment is added (writeset.FlagStreamSealed: the commit carries
// no rows). The commit then only ingests the files with its own: writing
// a million rows' files took it 0.2-0.45 s, while every later write-set on
// the node waited, on every node at once. The builder does it at its own
// priority; every is called now and then (see writeIngestFiles). Only a
// batch the commit would ingest is written, and only rows (the commit
// writes the other key spaces). Should this fail, the commit writes the
// batch as before.
func (st *stream) writeAhead(every func()) {
	e := st.a.e
	if st.rejected != nil || len(st.a.b.Repr()) < e.ingestBytes {
		return
	}
	files, err := e.writeIngestFiles(st.a.b, fmt.Sprintf("stream-%d-%d", st.id.Origin, st.id.Seq), every)
	if err != nil {
		return
	}
	if !files.only(spaceTable) {
		files.remove()
		return
	}
	st.files = files
}

// dropFiles removes the files writeAhead wrote, if any.
func (st *stream) dropFiles() {
	if st.files != nil {
		st.files.remove()
		st.files = nil
	}
}

// discard releases the batch and any files of a stream that ended; its
// builder has settled.
func (st *stream) discard() {
	st.a.b.Close()
	st.dropFiles()
}

// backlog is the number of fragments the builder has not added yet, and
// the channel closed when it adds the next one.
func (st *stream) backlog() (int, <-chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := len(st.queue)
	if st.adding {
		n++
	}
	return n, st.progress
}

// settle waits until the builder has added every queued fragment (or,
// when abandon is set, only the one it is adding) and returns its error.
// The stream takes no more fragments after it.
func (st *stream) settle(abandon bool) error {
	st.mu.Lock()
	st.closed = true
	started := st.built != nil
	st.mu.Unlock()
	if !started {
		return st.err
	}
	st.abandoned.Store(abandon)
	st.urgent.Store(true)
	st.signal()
	<-st.built
	return st.err
}

// AwaitStreamBacklog waits until at most n fragments of the streaming
// transaction id wait to be added to its provisional batch here, or ctx
// ends. The origin of a streaming transaction calls it before it sends
// another fragment: the transaction then produces its fragments no faster
// than the node adds them, at the lower priority they are both given, and
// its commit does not wait for a long queue.
func (e *Engine) AwaitStreamBacklog(ctx context.Context, id writeset.ID, n int) error {
	e.streamsMu.Lock()
	st := e.streams[id]
	e.streamsMu.Unlock()
	if st == nil {
		return nil
	}
	for {
		queued, progress := st.backlog()
		if queued <= n || progress == nil {
			return nil
		}
		select {
		case <-progress:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func streamPrefix(id writeset.ID) []byte {
	k := binary.BigEndian.AppendUint64([]byte{spaceStream}, id.Origin)
	return binary.BigEndian.AppendUint64(k, id.Seq)
}

func streamKey(id writeset.ID, seqno uint64) []byte {
	return binary.BigEndian.AppendUint64(streamPrefix(id), seqno)
}

// openStream returns the open transaction id, starting it if needed.
func (e *Engine) openStream(id writeset.ID) *stream {
	st := e.streams[id]
	if st == nil {
		b := e.db.NewIndexedBatch()
		st = &stream{id: id, a: &applier{e: e, b: b, r: b, auto: map[uint64]uint64{}}}
		e.setStream(id, st)
	}
	return st
}

// setStream opens (st) or ends (nil) the streaming transaction id; the
// caller holds applyMu.
func (e *Engine) setStream(id writeset.ID, st *stream) {
	e.streamsMu.Lock()
	defer e.streamsMu.Unlock()
	if st == nil {
		delete(e.streams, id)
	} else {
		e.streams[id] = st
	}
	e.openStreams.Store(int64(len(e.streams)))
}

// addFragment applies ws's operations to the transaction's batch.
func (st *stream) addFragment(cat *Catalog, ws *writeset.WriteSet) error {
	if st.rejected != nil {
		return nil
	}
	if hasSchemaOps(ws) {
		st.rejected = fmt.Errorf("%w: schema change in a streaming transaction", ErrApplyRejected)
		return nil
	}
	st.a.cat = cat
	if len(ws.Ops) >= seqReadMin {
		// one iterator over the batch and the database reads the old rows
		// (each row appears once in a fragment, so it need not see the
		// fragment's own writes); a point lookup each costs several times
		// more on a batch of a million rows
		it, err := st.a.b.NewIter(nil)
		if err != nil {
			return err
		}
		st.a.seq = it
		defer func() {
			st.a.seq = nil
			it.Close()
		}()
	}
	err := st.a.apply(ws)
	if errors.Is(err, ErrApplyRejected) {
		st.rejected = err
		return nil
	}
	return err
}

// ApplyFragment applies at seqno a fragment (writeset.FlagFragment) that
// passed certification, with data its logged bytes: its rows join the
// transaction's provisional batch, invisible to readers, and the fragment is
// stored with extra.
func (e *Engine) ApplyFragment(seqno uint64, ws *writeset.WriteSet, data []byte, extra []KV) error {
	e.applyMu.Lock()
	defer e.applyMu.Unlock()
	st := e.openStream(ws.Stream.ID)
	// The builder may read the database later than at seqno: the rows it
	// reads are the fragment's, which certification keeps every other
	// write-set from until the transaction ends (as for loadStreams).
	// AUTO_INCREMENT raises are kept only above the value at the commit
	// (commitPrepared), so a later read of the counter changes nothing.
	// Its own copy of the write-set outlives the caller's buffers.
	own, err := writeset.Decode(append([]byte(nil), data...))
	if err != nil {
		return fmt.Errorf("%w: fragment at seqno %d: %v", ErrCorruptData, seqno, err)
	}
	st.enqueue(e.buildNice, e.cat.Load(), own)
	b := e.db.NewBatch()
	defer b.Close()
	k := streamKey(ws.Stream.ID, seqno)
	if err := b.Set(k, data, nil); err != nil {
		return err
	}
	st.frags = append(st.frags, k)
	if err := writeExtra(b, extra); err != nil {
		return err
	}
	return e.commit(b, seqno, nil, nil, Digest{})
}

// CommitStream applies at seqno the last fragment of a streaming
// transaction (writeset.FlagStreamCommit) that passed certification: its
// rows and every earlier fragment's become visible at once, like Apply of
// one write-set holding them all.
func (e *Engine) CommitStream(seqno uint64, ws *writeset.WriteSet, extra, onReject []KV) (ApplyResult, error) {
	e.applyMu.Lock()
	defer e.applyMu.Unlock()
	st := e.openStream(ws.Stream.ID)
	e.setStream(ws.Stream.ID, nil)
	if err := st.settle(false); err != nil {
		st.discard()
		return ApplyResult{}, err
	}
	if len(ws.Ops) > 0 {
		st.dropFiles() // not sealed after all: the batch changes
	}
	if err := st.addFragment(e.cat.Load(), ws); err != nil {
		st.discard()
		return ApplyResult{}, err
	}
	drop := st.dropKVs()
	p := &Prepared{b: st.a.b, auto: st.a.auto, delta: st.a.d, rejected: st.rejected, ahead: true, files: st.files}
	return e.commitPrepared(seqno, p, append(extra, drop...), append(onReject, drop...))
}

// dropKVs deletes the stored fragments.
func (st *stream) dropKVs() []KV {
	kvs := make([]KV, len(st.frags))
	for i, k := range st.frags {
		kvs[i] = KV{Key: k}
	}
	return kvs
}

// EndStreams discards the provisional batches of streaming transactions
// that ended without committing and returns what deletes their stored
// fragments; the caller writes it with the seqno that ended them.
func (e *Engine) EndStreams(ids []writeset.ID) []KV {
	e.applyMu.Lock()
	defer e.applyMu.Unlock()
	var kvs []KV
	for _, id := range ids {
		if st := e.streams[id]; st != nil {
			kvs = append(kvs, st.dropKVs()...)
			_ = st.settle(true) // its batch is discarded, errors and all
			st.discard()
			e.setStream(id, nil)
		}
	}
	return kvs
}

// OpenStreams reports the number of open streaming transactions.
func (e *Engine) OpenStreams() int { return int(e.openStreams.Load()) }

// scanStreams calls fn for every stored fragment, in key order: stream by
// stream, each in log order.
func (e *Engine) scanStreams(fn func(id writeset.ID, key []byte, ws *writeset.WriteSet) error) error {
	return e.scanPrefix([]byte{spaceStream}, func(k, v []byte) error {
		if len(k) != 25 {
			return fmt.Errorf("%w: stream fragment key %x", ErrCorruptData, k)
		}
		ws, err := writeset.Decode(append([]byte(nil), v...))
		if err != nil {
			return fmt.Errorf("%w: stream fragment %x: %v", ErrCorruptData, k, err)
		}
		id := writeset.ID{Origin: binary.BigEndian.Uint64(k[1:]), Seq: binary.BigEndian.Uint64(k[9:])}
		return fn(id, k, ws)
	})
}

// StoredStreams returns the stored fragments of every open streaming
// transaction, in log order, for rebuilding what derives from them.
func (e *Engine) StoredStreams() (map[writeset.ID][]*writeset.WriteSet, error) {
	out := map[writeset.ID][]*writeset.WriteSet{}
	err := e.scanStreams(func(id writeset.ID, _ []byte, ws *writeset.WriteSet) error {
		out[id] = append(out[id], ws)
		return nil
	})
	return out, err
}

// loadStreams rebuilds the provisional batches from the stored fragments.
func (e *Engine) loadStreams() error {
	for id, st := range e.streams {
		_ = st.settle(true)
		st.discard()
		e.setStream(id, nil)
	}
	if e.streams == nil {
		e.streamsMu.Lock()
		e.streams = map[writeset.ID]*stream{}
		e.streamsMu.Unlock()
	}
	cat := e.cat.Load()
	return e.scanStreams(func(id writeset.ID, key []byte, ws *writeset.WriteSet) error {
		st := e.openStream(id)
		st.frags = append(st.frags, append([]byte(nil), key...))
		return st.addFragment(cat, ws)
	})
}
