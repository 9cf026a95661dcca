package replication

import (
	"context"
	"time"

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
	data := n.rep.Submit(ws, w)
	select {
	case n.propc <- data:
	case <-n.stopc:
		return writeset.Outcome{}, ErrStopped
	case <-ctx.Done():
		n.rep.Abandon(ws.ID)
		return writeset.Outcome{}, ctx.Err()
	}
	select {
	case res := <-w:
		return res.out, res.err
	case <-ctx.Done():
		if !n.rep.Abandon(ws.ID) {
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

// failAll forgets the write-sets waiting (their callers wait for their
// context or Stop) and answers the causal reads with err.
func (n *Node) failAll(err error) { n.rep.Clear(err) }

// readWaiter is a caller of ReadIndex waiting for its round.
type readWaiter struct {
	ch chan readResult
}

type readResult struct {
	index uint64
	err   error
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
	r := &readWaiter{ch: make(chan readResult, 1)}
	if idx, ok := n.rep.Read(r); ok {
		return func(context.Context) (uint64, error) { return idx, nil }
	}
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

// wakeLoop makes the raft loop run the replica's Loop.
func (n *Node) wakeLoop() {
	select {
	case n.loopc <- struct{}{}:
	default:
	}
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

// finishLinkRead implements Receiver (Replica.LinkAnswer).
func (n *Node) finishLinkRead(lead, ctx, index, term uint64) {
	n.rep.LinkAnswer(lead, ctx, index, term)
}

// readLinkDown implements Receiver (Replica.LinkDown).
func (n *Node) readLinkDown() { n.rep.LinkDown() }

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
	st.Waiting = n.rep.Waiting()
	return st
}

// Stats returns the node's counters.
func (n *Node) Stats() *Stats { return n.core.Stats() }

// AutoIncrementStride returns the AUTO_INCREMENT increment and this
// node's offset.
func (n *Node) AutoIncrementStride() (increment, offset uint64) { return n.core.AutoIncrementStride() }

// ClusterUUID is the cluster's state UUID ("" until known).
func (n *Node) ClusterUUID() string { return n.core.ClusterUUID() }
