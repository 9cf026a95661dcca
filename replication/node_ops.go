package replication

import (
	"context"
	"encoding/binary"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/certusdb/certus/writeset"
)

// Members returns the cluster's members known to this node.
func (n *Node) Members() []Member { return n.core.Members() }

// Replicate implements txn.Replicator: it orders ws and waits until this
// node has certified it and, if it passed, applied it.
func (n *Node) Replicate(ctx context.Context, ws *writeset.WriteSet) (writeset.Outcome, error) {
	if !n.Primary() {
		return writeset.Outcome{}, ErrNotPrimary
	}
	if !n.admit(ctx) {
		if ctx.Err() != nil {
			return writeset.Outcome{}, ctx.Err()
		}
		return writeset.Outcome{}, ErrStopped
	}
	w := make(waiter, 1)
	n.mu.Lock()
	data := n.props.Submit(ws, n.cfg.Self.ID, w, time.Now(), n.core.Committed())
	n.mu.Unlock()
	n.core.stats.Replicated.Add(1)
	n.core.stats.ReplicatedBytes.Add(uint64(len(data)))
	n.countReplicated(ws)
	select {
	case n.propc <- data:
	case <-n.stopc:
		return writeset.Outcome{}, ErrStopped
	case <-ctx.Done():
		n.abandon(ws.ID)
		return writeset.Outcome{}, ctx.Err()
	}
	select {
	case res := <-w:
		return res.out, res.err
	case <-ctx.Done():
		if !n.abandon(ws.ID) {
			// the outcome came first: the caller gets it, not an unknown
			// (it is sent just after it was taken from the proposals)
			select {
			case res := <-w:
				return res.out, res.err
			default:
			}
		}
		return writeset.Outcome{}, ctx.Err()
	case <-n.stopc:
		return writeset.Outcome{}, ErrStopped
	}
}

func (n *Node) electionTimeout() time.Duration {
	return n.cfg.TickInterval * time.Duration(n.cfg.ElectionTicks)
}

// abandon stops waiting for a write-set whose outcome is unknown
// (Proposals.Abandon); false when it was not waiting any more.
func (n *Node) abandon(id writeset.ID) bool {
	var waiting bool
	n.withProposals(func(p *Proposals[waiter]) { _, waiting = p.Abandon(id) })
	return waiting
}

// tickChecks proposes again the write-sets whose proposal was lost, and
// gives up on those too old to propose again and on all of them after an
// election timeout outside a primary component (Proposals.Tick).
func (n *Node) tickChecks() {
	var due Due[waiter]
	n.withProposals(func(p *Proposals[waiter]) {
		due = p.Tick(time.Now(), n.electionTimeout(), n.core.Committed(), n.core.ReproposeHorizon(), n.core.Primary())
	})
	for _, w := range due.Lost {
		w <- replicated{err: ErrOutcomeUnknown}
	}
	for _, w := range due.NotPrimary {
		w <- replicated{err: ErrNotPrimary}
	}
	for _, r := range due.Again {
		if r.Late {
			n.log.Warn("proposing a write-set again: it is not in the raft log", "id", r.ID.String(), "bytes", len(r.Data))
		}
		n.propose(r.Data)
	}
	n.checkReadTimeout()
	n.checkOrphanStreams()
}

func (n *Node) failAll(err error) {
	n.mu.Lock()
	n.props.Clear()
	n.mu.Unlock()
	n.readMu.Lock()
	all := n.reads.Drain()
	n.readMu.Unlock()
	answer(all, readResult{err: err})
}

// readWaiter is a caller of ReadIndex waiting for its round.
type readWaiter struct {
	ch chan readResult
}

type readResult struct {
	index uint64
	err   error
}

func answer(ws []*readWaiter, res readResult) {
	for _, w := range ws {
		w.ch <- res
	}
}

// ReadIndex returns the cluster's commit index as of the call: every write
// acknowledged before it returns is at or below the index. The leader
// answers from its published lease when it can; other calls share rounds,
// asked over the read link to the leader when there is one, else through
// raft.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	return n.askReadIndex()(ctx)
}

// askReadIndex asks for the cluster's commit index as of the call and
// returns the wait for the answer: the leader's own index from its lease
// at once, else a share of a round (see ReadIndex).
func (n *Node) askReadIndex() func(context.Context) (uint64, error) {
	if idx, _, ok := n.core.LeaseRead(); ok {
		return func(context.Context) (uint64, error) { return idx, nil }
	}
	r := &readWaiter{ch: make(chan readResult, 1)}
	n.readMu.Lock()
	n.reads.Add(r)
	n.readMu.Unlock()
	n.startRead(false)
	return func(ctx context.Context) (uint64, error) {
		select {
		case res := <-r.ch:
			return res.index, res.err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// readLinker is implemented by transports that can ask the leader for a
// read index outside raft (TCPTransport; see readlink.go).
type readLinker interface {
	// SendReadIndex asks member to for its commit index, to be answered
	// through Node.finishLinkRead or, when it has no lease, through raft.
	// It returns false when no link to it is up (one is being set up).
	SendReadIndex(to, ctx uint64) bool
}

// startRead starts a round for the pending requests (see ReadQueue.Start):
// over the read link to a leader elsewhere, from any goroutine; else
// through raft, which only the raft loop (onLoop) may ask, so other
// goroutines wake it.
func (n *Node) startRead(onLoop bool) {
	lead := n.core.Lead()
	link, _ := n.cfg.Transport.(readLinker)
	useLink := link != nil && lead != raft.None && lead != n.cfg.Self.ID
	if !useLink && !onLoop {
		n.wakeReads()
		return
	}
	n.readMu.Lock()
	ctx, ok := n.reads.Start(time.Now(), useLink)
	n.readMu.Unlock()
	if !ok {
		return
	}
	n.core.stats.ReadIndexRounds.Add(1)
	if useLink {
		if link.SendReadIndex(lead, ctx) {
			n.core.stats.ReadLinkRounds.Add(1)
			return
		}
		n.readMu.Lock()
		n.reads.Unlink(ctx)
		n.readMu.Unlock()
		n.wakeReads()
		return
	}
	n.core.ReadIndex(binary.BigEndian.AppendUint64(nil, ctx))
}

// wakeReads makes the raft loop start a round and ask raft for the rounds
// whose read link broke.
func (n *Node) wakeReads() {
	select {
	case n.readc <- struct{}{}:
	default:
	}
}

// loopReads is the raft loop's part of causal reads: rounds whose read
// link broke go to raft, then a new round starts.
func (n *Node) loopReads() {
	n.readMu.Lock()
	ctxs := n.reads.Reissue()
	n.readMu.Unlock()
	for _, ctx := range ctxs {
		n.core.ReadIndex(binary.BigEndian.AppendUint64(nil, ctx))
	}
	n.startRead(true)
}

// finishRead answers the callers raft's ReadState serves (raft loop).
func (n *Node) finishRead(rs raft.ReadState) {
	if len(rs.RequestCtx) != 8 {
		return
	}
	n.finishRound(binary.BigEndian.Uint64(rs.RequestCtx), rs.Index)
	n.startRead(true)
}

// leaseRead implements Receiver (Core.LeaseRead).
func (n *Node) leaseRead() (index, term uint64, ok bool) { return n.core.LeaseRead() }

// countPeerBytes implements Receiver.
func (n *Node) countPeerBytes(received, sent int) {
	if received > 0 {
		n.core.stats.ReceivedBytes.Add(uint64(received))
	}
	if sent > 0 {
		n.core.stats.SentBytes.Add(uint64(sent))
	}
}

// finishLinkRead answers the callers of round ctx, which lead, leading
// term, answered with index over the read link, and tells the raft loop
// that index is committed (see LearnCommit).
func (n *Node) finishLinkRead(lead, ctx, index, term uint64) {
	n.noteCommit(lead, term, index)
	n.finishRound(ctx, index)
	n.startRead(false)
}

// readLinkDown sends the rounds asked over a read link that broke through
// raft.
func (n *Node) readLinkDown() {
	n.readMu.Lock()
	marked := n.reads.Unlink(0)
	n.readMu.Unlock()
	if marked {
		n.wakeReads()
	}
}

func (n *Node) finishRound(ctx, index uint64) {
	n.readMu.Lock()
	done := n.reads.Finish(ctx)
	n.readMu.Unlock()
	answer(done, readResult{index: index})
}

// checkReadTimeout fails the ReadIndex rounds that got no answer (no
// leader, or the request was lost) after an election timeout; callers
// retry.
func (n *Node) checkReadTimeout() {
	n.readMu.Lock()
	failed := n.reads.Expire(time.Now(), n.electionTimeout())
	n.readMu.Unlock()
	if len(failed) == 0 {
		return
	}
	err := ErrSyncWaitTimeout
	if !n.Primary() {
		err = ErrNotPrimary
	}
	answer(failed, readResult{err: err})
	n.startRead(true)
}

// countReplicated adds a local write-set's keys and row changes to the
// statistics.
func (n *Node) countReplicated(ws *writeset.WriteSet) {
	var keyBytes, dataBytes int
	for _, k := range ws.Keys {
		keyBytes += len(k.Key)
	}
	for _, op := range ws.Ops {
		dataBytes += len(op.Key) + len(op.Value) + len(op.Payload)
	}
	n.core.stats.ReplicatedKeys.Add(uint64(len(ws.Keys)))
	n.core.stats.ReplicatedKeyBytes.Add(uint64(keyBytes))
	n.core.stats.ReplicatedDataBytes.Add(uint64(dataBytes))
}

// WaitApplied blocks until the node has applied seqno.
func (n *Node) WaitApplied(ctx context.Context, seqno uint64) error {
	if n.eng.Applied() >= seqno {
		return nil
	}
	ch := make(chan struct{})
	n.appliedWaits.Add(seqno, ch)
	if n.eng.Applied() >= seqno { // applied before the wait was listed
		n.appliedWaits.Remove(ch)
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		n.appliedWaits.Remove(ch)
		return ctx.Err()
	case <-n.stopc:
		return ErrStopped
	}
}

// StartSyncWait starts a causal wait (wsrep_sync_wait) at the call and
// returns its end: a call of the result waits until this node has applied
// everything committed in the cluster when StartSyncWait was called. The
// question to the leader travels meanwhile, so what the caller does in
// between overlaps it (at BEGIN: the transaction's first read waits). A
// result never called costs nothing more.
func (n *Node) StartSyncWait() func(context.Context) error {
	answer := n.askReadIndex()
	return func(ctx context.Context) error {
		start := time.Now()
		idx, err := answer(ctx)
		if err != nil {
			return err
		}
		known := time.Now()
		err = n.WaitApplied(ctx, idx)
		end := time.Now()
		st := &n.core.stats
		st.SyncWaits.Add(1)
		st.SyncWaitNanos.Add(uint64(end.Sub(start)))
		st.SyncWaitApplyNanos.Add(uint64(end.Sub(known)))
		return err
	}
}

// syncLoop makes the log durable periodically when SyncLog is off.
func (n *Node) syncLoop() {
	defer close(n.syncDone)
	t := time.NewTicker(n.cfg.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := n.eng.Sync(); err != nil {
				n.log.Error("background log sync failed", "err", err)
			}
		case <-n.stopc:
			_ = n.eng.Sync()
			return
		}
	}
}

// Primary reports whether the node is in a primary component.
func (n *Node) Primary() bool { return n.core.Primary() }

// Status returns the node's state.
func (n *Node) Status() Status {
	st := n.core.Status()
	n.mu.Lock()
	st.Waiting = n.props.Len()
	n.mu.Unlock()
	return st
}

// Stats returns the node's counters.
func (n *Node) Stats() *Stats { return n.core.Stats() }

// AutoIncrementStride returns the AUTO_INCREMENT increment and this
// node's offset.
func (n *Node) AutoIncrementStride() (increment, offset uint64) { return n.core.AutoIncrementStride() }

// ClusterUUID is the cluster's state UUID ("" until known).
func (n *Node) ClusterUUID() string { return n.core.ClusterUUID() }
