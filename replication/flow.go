package replication

import (
	"context"
	"sync"
	"time"

	"github.com/certusdb/certus/flowcontrol"
)

// flowInterval is how often a node looks at its receive queue and, while
// it asks the cluster to slow down, tells the others.
const flowInterval = 100 * time.Millisecond

// writerWindow is how long an origin counts as writing after its last
// write-set reached the log.
const writerWindow = time.Second

// writers tracks the origins whose write-sets reached the log recently, so
// flow control can give each writing node at least an equal share.
type writers struct {
	mu   sync.Mutex
	seen map[uint64]time.Time
}

func (w *writers) note(origin uint64, now time.Time) {
	w.mu.Lock()
	if w.seen == nil {
		w.seen = map[uint64]time.Time{}
	}
	w.seen[origin] = now
	w.mu.Unlock()
}

// count returns how many origins wrote within writerWindow of now.
func (w *writers) count(now time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	for o, at := range w.seen {
		if now.Sub(at) > writerWindow {
			delete(w.seen, o)
		}
	}
	return len(w.seen)
}

// flowLoop observes the receive queue every flowInterval and sends this
// node's flow control report to the other data members when there is one
// to send. A node that is not synced (joining, recovering, receiving a
// state transfer) asks nothing: catching up is its own business. Nor does
// a node an operator desynced (wsrep_desync), as in Galera.
func (n *Node) flowLoop() {
	defer close(n.flowDone)
	t := time.NewTicker(flowInterval)
	defer t.Stop()
	// the entry the apply stage was in at the last look, and since when
	var inIdx uint64
	var inSince time.Time
	for {
		select {
		case <-t.C:
		case <-n.stopc:
			return
		}
		now := time.Now()
		applied := n.eng.Applied()
		committed := n.core.Committed()
		if !n.Recovered() || n.core.Transferring() || n.desync.Load() {
			committed = applied
		}
		var heldSince time.Time // one entry held the stage since then
		switch idx := n.core.Applying(); {
		case idx == 0 || idx != inIdx:
			inIdx, inSince = idx, now
		default:
			heldSince = inSince
		}
		r, send := n.flow.Observe(now, committed, applied, n.writers.count(now), heldSince)
		if !send || n.cfg.Transport == nil {
			continue
		}
		data := r.Encode(nil)
		for _, m := range n.core.Members() {
			if m.ID != n.cfg.Self.ID && !m.Arbitrator {
				n.cfg.Transport.SendFlow(m.ID, data)
			}
		}
	}
}

// SetDesync sets wsrep_desync: a desynced node may fall behind without
// asking the cluster to slow down (it stops asking at once).
func (n *Node) SetDesync(on bool) { n.desync.Store(on) }

// receiveFlow takes a flow control report from member from.
func (n *Node) receiveFlow(from uint64, data []byte) error {
	r, err := flowcontrol.DecodeReport(data)
	if err != nil {
		return err
	}
	n.flow.Receive(time.Now(), from, r)
	return nil
}

// admit waits until flow control admits one more local commit; false:
// the node stopped or ctx ended first.
func (n *Node) admit(ctx context.Context) bool {
	since := time.Now()
	for {
		d := n.flow.Admit(time.Now(), since)
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-n.stopc:
			t.Stop()
			return false
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// FlowStatus returns the node's flow control state.
func (n *Node) FlowStatus() flowcontrol.Status { return n.flow.Status(time.Now()) }

// SetFlowConfig changes the node's flow control settings.
func (n *Node) SetFlowConfig(cfg flowcontrol.Config) { n.flow.SetConfig(cfg) }

// ResetAverages starts the averages of FlowStatus and of parallel apply
// (Stats.DepsDistance, Stats.ApplyWindow) anew (FLUSH STATUS).
func (n *Node) ResetAverages() {
	n.flow.ResetAverages(time.Now())
	st := n.core.Stats()
	st.DepsDistance.Store(0)
	st.DepsCount.Store(0)
	st.ApplyWindow.Store(0)
	st.ApplyWindowCount.Store(0)
}

// SetApplyDelay makes the apply stage take d longer per entry: a slow node
// for fault tests (0 ends it).
func (n *Node) SetApplyDelay(d time.Duration) { n.applyDelay.Store(int64(d)) }
