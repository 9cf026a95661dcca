package replication

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/certusdb/certus/certify"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// applyStream certifies and applies a write-set of a streaming transaction
// (see storage/stream.go and certify): a fragment joins the transaction's
// provisional batch, the last fragment commits it, a rollback or a failed
// fragment discards it. Its certification record is what a replay needs: a
// commit with every key it recorded, the others with none.
func (c *Core) applyStream(idx uint64, ws *writeset.WriteSet, data []byte) error {
	start := c.now()
	v := c.cert.Certify(idx, ws)
	certified := c.now()
	out := writeset.Outcome{Seqno: idx}
	ended := c.eng.EndStreams(v.Aborted)
	rec := *ws
	rec.Keys = nil
	if v.Record != nil {
		rec = *v.Record
	}
	rec.Flags &^= writeset.StreamFlags
	verdict := VerdictCommitted
	if !v.OK {
		verdict = VerdictFailed
	}
	extra := append([]storage.KV{c.horizonKV(), certRecordKV(idx, &rec, verdict)}, ended...)
	var err error
	switch {
	case !v.OK:
		out.Reason = v.Reason.String()
		if v.Reason != certify.ReasonDuplicate {
			c.stats.CertFailuresAll.Add(1)
		}
		err = c.eng.MarkApplied(idx, extra)
	case ws.Flags&writeset.FlagFragment != 0:
		out.Committed = true
		err = c.eng.ApplyFragment(idx, ws, data, extra)
	case ws.Flags&writeset.FlagStreamCommit != 0:
		onReject := append([]storage.KV{c.horizonKV(), certRecordKV(idx, &rec, VerdictRejected)}, ended...)
		var res storage.ApplyResult
		res, err = c.eng.CommitStream(idx, ws, extra, onReject)
		out.Rejected, out.Committed = res.Rejected, res.Rejected == nil
	default: // a rollback
		out.Committed = true
		err = c.eng.MarkApplied(idx, extra)
	}
	if err != nil {
		return fmt.Errorf("apply streaming write-set at seqno %d: %w", idx, err)
	}
	if done := c.now(); done.Sub(start) > slowApply && c.cfg.Now != nil {
		c.log.Info("slow apply: later commits waited for this fragment", "seqno", idx, "bytes", len(data), "ops", len(ws.Ops),
			"commit", ws.Flags&writeset.FlagStreamCommit != 0, "keys_recorded", recordedKeys(v),
			"certify", certified.Sub(start).Round(time.Millisecond), "apply", done.Sub(certified).Round(time.Millisecond))
	}
	if v.Reason != certify.ReasonDuplicate && c.cfg.OnApplied != nil {
		c.cfg.OnApplied(ws, out)
	}
	return nil
}

// restoreStreams reopens in the certification index the streaming
// transactions whose fragments the engine holds.
func (c *Core) restoreStreams() error {
	stored, err := c.eng.StoredStreams()
	if err != nil {
		return err
	}
	for _, frags := range stored {
		c.cert.RestoreStream(frags)
	}
	if len(stored) > 0 {
		c.log.Info("streaming transactions restored", "open", len(stored))
	}
	return nil
}

// recordedKeys is the number of keys a stream commit recorded, for logs.
func recordedKeys(v certify.Verdict) int {
	if v.Record == nil {
		return 0
	}
	return len(v.Record.Keys)
}

// OrphanTimeout is how long a node may be out of the leader's reach before
// the leader rolls back its streaming transactions, as Galera does when a
// node leaves the primary view (its evs.inactive_timeout is 15 s). Should
// the node come back, their next fragment or commit fails (1213).
const OrphanTimeout = 15 * time.Second

// InactiveMembers returns, on the leader, the members that have not
// answered it within the last election timeout; nil elsewhere. It runs on
// the goroutine driving the core.
func (c *Core) InactiveMembers() []uint64 {
	if c.raftState != raft.StateLeader {
		return nil
	}
	var out []uint64
	for id, pr := range c.raw.Status().Progress {
		if id != c.cfg.Self.ID && !pr.RecentActive {
			out = append(out, id)
		}
	}
	return out
}

// Orphans decides, on the leader, whose streaming transactions to roll
// back: those of the members out of its reach (Core.InactiveMembers) for
// longer than Timeout. It reads no clock: the replica asks it every
// ReplicaConfig.OrphanCheck with the time its driver gives.
type Orphans struct {
	Timeout time.Duration
	since   map[uint64]time.Time // when each inactive member was first seen so
}

// Check notes at now the members inactive (open: whether the node has
// open streaming transactions at all) and returns, in order, those out of
// reach for longer than the timeout.
func (o *Orphans) Check(now time.Time, open bool, inactive []uint64) []uint64 {
	if !open {
		o.since = nil
		return nil
	}
	since := map[uint64]time.Time{}
	var orphans []uint64
	for _, id := range inactive {
		t, ok := o.since[id]
		if !ok {
			t = now
		}
		since[id] = t
		if now.Sub(t) > o.Timeout {
			orphans = append(orphans, id)
		}
	}
	o.since = since
	slices.Sort(orphans)
	return orphans
}

// Look is Check with what core, the leader's, knows at now (raft loop).
func (o *Orphans) Look(now time.Time, core *Core) []uint64 {
	var inactive []uint64
	open := core.eng.OpenStreams() > 0
	if open {
		inactive = core.InactiveMembers()
	}
	return o.Check(now, open, inactive)
}

// RollbackBatch names whose open streaming transactions the node rolls
// back (Replica.Rollbacks).
type RollbackBatch struct {
	Nodes []uint64
	// Stale: the node's own, begun before its restart (else those of
	// members out of the leader's reach)
	Stale bool
}

// Rollbacks decides whose streaming transactions the node rolls back now
// (ok false: none). Once the node recovered after its start, those it
// began before: the sessions that ran them are gone, so they can never
// commit, and their locks would hold back every other node's writes to
// their rows. And on the leader, looked at every ReplicaConfig.OrphanCheck,
// those of the members out of its reach for ReplicaConfig.Orphans
// (Orphans), unless earlier rollbacks are still in flight. The driver
// reads them with RollbacksOf away from the raft loop, submits each, and
// calls RolledBack as each one ends. Raft loop.
func (r *Replica[W, R]) Rollbacks(recovered bool) (b RollbackBatch, ok bool) {
	if recovered && !r.staleDone {
		r.staleDone = true
		b = RollbackBatch{Nodes: []uint64{r.self}, Stale: true}
	} else if now := r.cfg.Now(); now.Sub(r.orphanChecked) >= r.cfg.OrphanCheck {
		r.orphanChecked = now
		if orphans := r.orphans.Look(now, r.core); r.rollingBack.Load() == 0 {
			b.Nodes = orphans
		}
	}
	if len(b.Nodes) == 0 {
		return b, false
	}
	r.rollingBack.Add(1) // the batch, until RollbacksOf counts its write-sets
	return b, true
}

// RollbacksOf returns the rollbacks of b's open streaming transactions,
// to submit. It reads every stored fragment, so it runs away from the
// raft loop (any goroutine).
func (r *Replica[W, R]) RollbacksOf(b RollbackBatch) []*writeset.WriteSet {
	stored, err := r.core.eng.StoredStreams()
	if err != nil {
		r.log.Error("reading streaming transactions", "err", err)
	}
	out := StreamRollbacks(stored, b.Nodes, r.core.Applied())
	for _, ws := range out {
		ws.ID.Seq = r.rollbackSeq.Add(1)
	}
	r.rollingBack.Add(int64(len(out)) - 1)
	return out
}

// RolledBack notes that a rollback RollbacksOf returned ended (whatever
// its outcome).
func (r *Replica[W, R]) RolledBack() { r.rollingBack.Add(-1) }

// StreamRollbacks returns the rollbacks of the open streaming transactions
// of stored (storage's StoredStreams) that were begun on one of nodes, in
// the order of their IDs: write-sets without an ID (the proposer numbers
// them) that saw the log up to lastSeen.
func StreamRollbacks(stored map[writeset.ID][]*writeset.WriteSet, nodes []uint64, lastSeen uint64) []*writeset.WriteSet {
	var out []*writeset.WriteSet
	for _, id := range slices.SortedFunc(maps.Keys(stored), writeset.ID.Compare) {
		if began := stored[id][0].Stream.Node; slices.Contains(nodes, began) {
			out = append(out, &writeset.WriteSet{LastSeen: lastSeen, Flags: writeset.FlagStreamRollback,
				Stream: writeset.Stream{ID: id, Node: began, Frag: uint64(len(stored[id]))}})
		}
	}
	return out
}
