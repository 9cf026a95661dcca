package replication

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/certusdb/certus/writeset"
)

// TestLearnCommit holds back the leader's messages to one follower once it
// has logged a write-set, so that the follower does not know the entry
// committed, and hands it commit notices: only one from its leader, in its
// term, for an entry of that term in its log and past its commit index
// commits it, and the heartbeat answer raft gives to it does not leave the
// node.
func TestLearnCommit(t *testing.T) {
	n := newLeaseNet(t)
	n.until("a leader", 1000, func() bool { return n.leader() != 0 })
	lead := n.leader()
	for i := 0; i < 50; i++ {
		n.step()
	}
	f := lead%3 + 1
	lc, fc := n.cores[lead], n.cores[f]
	ws := &writeset.WriteSet{ID: writeset.ID{Origin: 7, Seq: 1}, LastSeen: lc.Applied()}
	if err := lc.Propose(ws.Encode(nil)); err != nil {
		t.Fatal(err)
	}
	n.process(lead)
	idx, _ := lc.logs.LastIndex()
	n.until("the entry in the follower's log", 20, func() bool { last, _ := fc.logs.LastIndex(); return last >= idx })
	n.drop = func(m *pb.Message) bool { return m.GetFrom() == lead && m.GetTo() == f }
	n.until("the entry committed on the leader", 20, func() bool { return lc.Committed() >= idx })
	for i := 0; i < 10; i++ {
		n.step()
	}
	if got := fc.Committed(); got >= idx {
		t.Fatalf("the follower knows commit %d without the leader's messages; the test needs it below %d", got, idx)
	}
	term := lc.Term()
	last, _ := fc.logs.LastIndex()
	for _, tc := range []struct {
		name              string
		lead, term, index uint64
	}{
		{"another node", f%3 + 1, term, idx},
		{"itself", f, term, idx},
		{"an older term", lead, term - 1, idx},
		{"a newer term", lead, term + 1, idx},
		{"past its log", lead, term, last + 1},
		{"at its commit", lead, term, fc.Committed()},
		{"below its commit", lead, term, fc.Committed() - 1},
	} {
		if fc.LearnCommit(tc.lead, tc.term, tc.index) {
			t.Errorf("%s: took the notice", tc.name)
		}
		n.process(f)
		if got := fc.Committed(); got >= idx {
			t.Fatalf("%s: the follower committed up to %d", tc.name, got)
		}
	}
	if !fc.LearnCommit(lead, term, idx) {
		t.Fatal("the follower refused a notice from its leader for an entry of its term")
	}
	n.queue = nil
	n.process(f)
	if got := fc.Committed(); got != idx {
		t.Fatalf("after the notice the follower's commit index is %d, want %d", got, idx)
	}
	for _, m := range n.queue {
		if isNoticeAnswer(m) {
			t.Fatalf("the answer to the notice was sent: %v", m)
		}
	}
	if _, err := fc.ApplyNext(1 << 20); err != nil {
		t.Fatal(err)
	}
	if got := fc.Applied(); got < idx {
		t.Fatalf("the follower applied up to %d, want %d", got, idx)
	}
	if got := fc.stats.CommitNotices.Load(); got != 1 {
		t.Fatalf("CommitNotices = %d, want 1", got)
	}
}
