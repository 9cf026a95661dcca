package txn

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/certusdb/certus/internal/lowprio"
	"github.com/certusdb/certus/writeset"
)

// Streaming replication. A transaction streams when its session asks for
// it (wsrep_trx_fragment_unit and wsrep_trx_fragment_size, as in Galera)
// or, without that, once its buffered changes pass Config.StreamBytes.
// It then replicates its changes in fragments while it runs: each
// fragment is ordered and certified like a write-set; once it passes, its
// rows are locked on every node (a conflicting write-set from another node
// fails certification) and applied there provisionally, out of sight. The
// COMMIT replicates the last fragment, which makes everything visible at
// once; a ROLLBACK, a fragment that fails certification or the origin's
// restart or removal discards the fragments everywhere. No single entry of
// the total order is then bigger than a fragment, and the work of a huge
// transaction is spread over its life instead of stalling every commit
// ordered after it.

// FragmentUnit is what a fragment size counts (wsrep_trx_fragment_unit).
type FragmentUnit uint8

// Fragment units.
const (
	// FragmentBytes counts the bytes of the changed rows.
	FragmentBytes FragmentUnit = iota
	// FragmentRows counts changed rows.
	FragmentRows
	// FragmentStatements counts statements that changed rows.
	FragmentStatements
)

// ParseFragmentUnit parses a wsrep_trx_fragment_unit value.
func ParseFragmentUnit(s string) (FragmentUnit, bool) {
	switch s {
	case "bytes", "BYTES":
		return FragmentBytes, true
	case "rows", "ROWS":
		return FragmentRows, true
	case "statements", "STATEMENTS":
		return FragmentStatements, true
	}
	return 0, false
}

// ErrStreamRolledBack is returned when a statement rolls back below what a
// streaming transaction already replicated: the whole transaction is rolled
// back (MySQL 1213, like a deadlock victim).
var ErrStreamRolledBack = fmt.Errorf("%w (a streaming transaction cannot roll back below a replicated fragment: it was rolled back)", ErrDeadlock)

// streamBacklog is how many of a streaming transaction's fragments may wait
// to be added to its provisional batch on its own node before it sends
// another (storage.Engine.AwaitStreamBacklog). The node adds them at the
// lower priority the transaction runs at; producing them faster only
// queues them, and a long queue is what the commit then waits for on
// every node while nothing else applies.
const streamBacklog = 2

// rollbackTimeout bounds how long a rollback waits for its fragment to be
// ordered.
const rollbackTimeout = 10 * time.Second

// streamState is a streaming transaction's progress.
type streamState struct {
	id   writeset.ID // the first fragment's ID
	frag uint64      // fragments replicated
	// shipped is the undo mark when the last fragment was built: the
	// transaction cannot roll back below it alone.
	shipped int
	// dirty are the rows changed since the last fragment, per table.
	dirty map[*tableBuf]map[string]struct{}
}

// since counts the changes since the last fragment.
type since struct {
	rows, bytes, stmts int64
}

// streamable reports whether the transaction may stream: schema changes
// (and TRUNCATE, a schema operation here) replicate as one write-set.
func (t *Txn) streamable() bool {
	return len(t.schemaOps) == 0 && len(t.ddl) == 0 && len(t.autoInc) == 0 && !t.opts.ReadOnly
}

// fragmentDue reports whether the changes since the last fragment fill
// one.
func (t *Txn) fragmentDue() bool {
	unit, size := t.opts.FragmentUnit, t.opts.FragmentSize
	if size <= 0 {
		auto := t.m.cfg.StreamBytes
		if auto <= 0 || (t.stream == nil && t.since.bytes < auto) {
			return false
		}
		unit, size = FragmentBytes, t.m.cfg.StreamFragmentBytes
		if size <= 0 {
			size = auto / 8
		}
	}
	if t.since.rows == 0 || !t.streamable() {
		return false
	}
	switch unit {
	case FragmentRows:
		return t.since.rows >= size
	case FragmentStatements:
		return t.since.stmts >= size
	}
	return t.since.bytes >= size
}

// fragmentIfDue replicates a fragment when the changes since the last one
// fill it.
func (t *Txn) fragmentIfDue(ctx context.Context) error {
	if !t.fragmentDue() {
		return nil
	}
	return t.replicateFragment(ctx)
}

// noteChange counts a buffered row change for the fragment size and
// remembers it for the next fragment.
func (t *Txn) noteChange(b *tableBuf, e *rowEntry) {
	t.since.rows++
	t.since.bytes += rowBytes(e)
	if t.stream == nil {
		return
	}
	d := t.stream.dirty[b]
	if d == nil {
		d = map[string]struct{}{}
		t.stream.dirty[b] = d
	}
	d[string(e.pk)] = struct{}{}
}

// rowBytes estimates the replicated size of a row change.
func rowBytes(e *rowEntry) int64 {
	n := int64(len(e.pk)) + 8
	for _, v := range e.row {
		switch v := v.(type) {
		case string:
			n += int64(len(v))
		case []byte:
			n += int64(len(v))
		default:
			n += 8
		}
	}
	return n
}

// eachRow calls fn for the rows of b the next write-set carries: all of
// them, or for a streaming transaction those changed since its last
// fragment, in key order.
func (t *Txn) eachRow(b *tableBuf, fn func(*rowEntry) error) error {
	if t.stream == nil {
		var err error
		b.rows.Ascend(func(e *rowEntry) bool {
			err = fn(e)
			return err == nil
		})
		return err
	}
	pks := make([]string, 0, len(t.stream.dirty[b]))
	for pk := range t.stream.dirty[b] {
		pks = append(pks, pk)
	}
	slices.Sort(pks)
	for _, pk := range pks {
		e, ok := b.get([]byte(pk))
		if !ok {
			continue // a statement that was rolled back added it
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// rowCount is the number of rows the next write-set carries from b.
func (t *Txn) rowCount(b *tableBuf) int {
	if t.stream == nil {
		return b.rows.Len()
	}
	return len(t.stream.dirty[b])
}

// inflight is a fragment being replicated while its transaction goes on.
type inflight struct {
	ws   *writeset.WriteSet
	done chan struct{} // closed when out and err are set
	out  writeset.Outcome
	err  error
}

// replicateFragment sends the changes since the last fragment as a
// fragment and returns without waiting for it: the transaction goes on
// while the fragment is ordered and certified. One fragment is in flight
// at a time; the next fragment, the commit and a rollback first take its
// outcome (awaitFragment), and a fragment that failed fails that step and
// rolls the transaction back.
func (t *Txn) replicateFragment(ctx context.Context) error {
	return t.replicateFragmentFlags(ctx, 0)
}

// seal ends a streaming transaction's fragments before its commit: the
// rows changed since the last one go in a sealed fragment
// (writeset.FlagStreamSealed), so the commit carries none, and the commit
// waits until this node has added it and written the batch out for
// ingestion (storage's stream.writeAhead). The other nodes, which got the
// fragment at the same time, do the same meanwhile at the transaction's
// lower priority, instead of at the commit's turn while every later
// write-set waits. A transaction that did not stream has nothing to seal.
func (t *Txn) seal(ctx context.Context) error {
	if t.stream == nil {
		return nil
	}
	if err := t.replicateFragmentFlags(ctx, writeset.FlagStreamSealed); err != nil {
		return err
	}
	if err := t.awaitFragment(); err != nil {
		return err
	}
	if t.stream == nil {
		return nil
	}
	if err := t.m.eng.AwaitStreamBacklog(ctx, t.stream.id, 0); err != nil {
		t.rollbackStream()
		return err
	}
	return nil
}

// replicateFragmentFlags is replicateFragment of a fragment with flags
// besides writeset.FlagFragment.
func (t *Txn) replicateFragmentFlags(ctx context.Context, flags writeset.Flags) error {
	if err := t.awaitFragment(); err != nil {
		return err
	}
	if t.stream != nil && t.stream.id != (writeset.ID{}) {
		if err := t.m.eng.AwaitStreamBacklog(ctx, t.stream.id, streamBacklog); err != nil {
			return err
		}
	}
	ws, err := t.writeSet(ctx)
	if err != nil {
		return err
	}
	ws.ID.Seq = t.m.nextID.Add(1)
	ws.Flags |= writeset.FlagFragment | flags
	if t.stream == nil {
		t.stream = &streamState{} // its id is the first fragment's, once sent
		t.m.Streams.Add(1)
	} else {
		ws.Stream = writeset.Stream{ID: t.stream.id, Frag: t.stream.frag}
	}
	t.stream.frag++
	if t.lowered == nil && t.m.cfg.StreamNice > 0 {
		t.lowered = lowprio.Lower(t.m.cfg.StreamNice)
	}
	// Nothing rolls back below the fragment alone (belowShipped), so the
	// undo records of what it ships are dropped: a huge transaction would
	// otherwise keep one per row to its end, for the garbage collector to
	// scan again and again.
	t.stream.shipped = t.undoLen()
	t.undoBase, t.undo = t.stream.shipped, nil
	t.stream.dirty = map[*tableBuf]map[string]struct{}{}
	t.since = since{}
	t.m.Fragments.Add(1)
	t.m.noteReported(ws.ID.Origin, ws.LastSeen)
	f := &inflight{ws: ws, done: make(chan struct{})}
	t.inflight = f
	rctx := context.WithoutCancel(ctx) // the fragment outlives its statement
	go func() {
		defer close(f.done)
		f.out, f.err = t.m.cfg.Replicator.Replicate(rctx, ws)
	}()
	return nil
}

// collect waits for the fragment in flight, if any, and settles what its
// outcome says about the transaction: the id a first fragment got, or the
// end of the transaction when certification failed it (on every node) or
// it was never proposed.
func (t *Txn) collect() *inflight {
	f := t.inflight
	if f == nil {
		return nil
	}
	<-f.done
	t.inflight = nil
	if t.stream == nil {
		return f
	}
	if f.ws.Stream.Frag == 0 {
		t.stream.id = f.ws.Stream.ID // named as it was proposed
	}
	if (f.err == nil && f.out.Rejected == nil && !f.out.Committed) || t.stream.id == (writeset.ID{}) {
		t.stream = nil
	}
	return f
}

// awaitFragment takes the outcome of the fragment in flight; a failure
// rolls the transaction back and is returned.
func (t *Txn) awaitFragment() error {
	f := t.collect()
	if f == nil {
		return nil
	}
	var err error
	switch {
	case f.err != nil:
		err = f.err
	case f.out.Rejected != nil:
		err = f.out.Rejected
	case !f.out.Committed:
		t.m.CertFailures.Add(1)
		err = certError(f.out)
	default:
		return nil
	}
	t.abort()
	return err
}

// restorePriority ends the lower CPU priority a fragment gave the
// statement's goroutine (Config.StreamNice).
func (t *Txn) restorePriority() {
	if t.lowered == nil {
		return
	}
	if !t.lowered() {
		t.m.noteUnrestored()
	}
	t.lowered = nil
}

// rollbackStream ends a streaming transaction on every node: its
// fragments are discarded and its locks released.
func (t *Txn) rollbackStream() {
	t.collect()
	if t.stream == nil {
		return
	}
	ws := &writeset.WriteSet{ID: writeset.ID{Seq: t.m.nextID.Add(1)}, LastSeen: t.m.LowWatermark(),
		Flags: writeset.FlagStreamRollback, Stream: writeset.Stream{ID: t.stream.id, Frag: t.stream.frag}}
	t.stream = nil
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	// Should this fail (no primary component), the origin's restart or
	// removal ends the transaction on the other nodes.
	_, _ = t.m.cfg.Replicator.Replicate(ctx, ws)
}

// belowShipped reports whether rolling back to undo mark would undo rows
// a fragment already replicated.
func (t *Txn) belowShipped(mark int) bool {
	return t.stream != nil && mark < t.stream.shipped
}

// Streaming reports whether the transaction replicated fragments.
func (t *Txn) Streaming() bool { return t.stream != nil }
