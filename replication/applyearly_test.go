package replication

import (
	"testing"

	"github.com/certusdb/certus/writeset"
)

// TestAppliesWhileWriting proposes a write-set on the leader of three
// cores (syncing their logs) at every tick and applies what Process queues
// before its log write (OnQueued) at once, as a node's apply stage may:
// those entries must all have been persisted before, the followers must
// have taken that path (the commit of earlier entries arrives with new
// ones), and every core must end with everything applied.
func TestAppliesWhileWriting(t *testing.T) {
	n := newLeaseNet(t)
	early := map[uint64]int{}
	n.onQueued = func(id uint64) {
		c := n.cores[id]
		last, err := c.logs.LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		c.qmu.Lock()
		for _, q := range c.queue {
			if q.e.GetIndex() > last {
				t.Errorf("core %d queued entry %d before writing it (last written %d)", id, q.e.GetIndex(), last)
			}
		}
		c.qmu.Unlock()
		k, err := c.ApplyNext(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		early[id] += k
	}
	n.until("a leader", 1000, func() bool { return n.leader() != 0 })
	lead := n.leader()
	for seq := uint64(1); seq <= 300; seq++ {
		ws := &writeset.WriteSet{ID: writeset.ID{Origin: 7, Seq: seq}, LastSeen: n.cores[lead].Applied()}
		if err := n.cores[lead].Propose(ws.Encode(nil)); err != nil {
			t.Fatal(err)
		}
		n.step()
	}
	want := n.cores[lead].Committed()
	n.until("every entry applied", 100, func() bool {
		for _, c := range n.cores {
			if c.Applied() < want {
				return false
			}
		}
		return true
	})
	t.Logf("entries applied before the log write: %v (leader %d, commit %d)", early, lead, want)
	for id := range n.cores {
		if id != lead && early[id] == 0 {
			t.Errorf("follower %d never applied an entry while writing new ones", id)
		}
	}
}
