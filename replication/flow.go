package replication

import (
	"context"
	"sync"
	"time"

	"github.com/certusdb/certus/flowcontrol"
)

// FlowInterval is how often a node looks at its receive queue and, while
// it asks the cluster to slow down, tells the others.
const FlowInterval = 100 * time.Millisecond

// writerWindow is how long an origin counts as writing after its last
// write-set reached the log.
const writerWindow = time.Second

// Flow is a node's flow control: its flowcontrol.Controller, and what the
// node tells it. It counts the origins whose write-sets reached the log
// lately, so that each writing node gets at least an equal share of the
// rate; it notes how long the apply stage has held one entry; and a node
// that is catching up (joining, recovering, receiving a state transfer)
// or was desynced by an operator (wsrep_desync) asks nothing: falling
// behind is then its own business, as in Galera. It reads no clock:
// replication.Node drives it with the wall clock, the simulator with its
// ticks.
type Flow struct {
	*flowcontrol.Controller

	mu      sync.Mutex
	writers map[uint64]time.Time // origin → when its last write-set was logged

	// the entry the apply stage was in at the last look, and since when
	inIdx   uint64
	inSince time.Time
}

// NewFlow returns a node's flow control with settings cfg.
func NewFlow(cfg flowcontrol.Config, now time.Time) *Flow {
	return &Flow{Controller: flowcontrol.New(cfg, now), writers: map[uint64]time.Time{}}
}

// Logged notes that a write-set of origin reached the node's log.
func (f *Flow) Logged(origin uint64, now time.Time) {
	f.mu.Lock()
	f.writers[origin] = now
	f.mu.Unlock()
}

// FlowState is what a node's flow control looks at every FlowInterval.
type FlowState struct {
	Committed, Applied uint64
	// Applying is the entry the apply stage is in (Core.Applying; 0: none)
	Applying uint64
	// CatchingUp: the node is not synced, or is desynced
	CatchingUp bool
}

// Observe looks at the node's receive queue and returns the report to
// send to the other data members, if there is one to send.
func (f *Flow) Observe(now time.Time, st FlowState) (flowcontrol.Report, bool) {
	committed := st.Committed
	if st.CatchingUp {
		committed = st.Applied
	}
	var heldSince time.Time // one entry held the stage since then
	switch {
	case st.Applying == 0 || st.Applying != f.inIdx:
		f.inIdx, f.inSince = st.Applying, now
	default:
		heldSince = f.inSince
	}
	return f.Controller.Observe(now, committed, st.Applied, f.writing(now), heldSince)
}

// writing returns how many origins wrote within writerWindow of now.
func (f *Flow) writing(now time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for o, at := range f.writers {
		if now.Sub(at) > writerWindow {
			delete(f.writers, o)
		}
	}
	return len(f.writers)
}

// flowLoop observes the receive queue every FlowInterval and sends this
// node's flow control report to the other data members when there is one
// to send.
func (n *Node) flowLoop() {
	defer close(n.flowDone)
	t := time.NewTicker(FlowInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-n.stopc:
			return
		}
		r, send := n.rep.ObserveFlow(!n.Recovered() || n.desync.Load())
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
