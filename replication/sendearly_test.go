package replication

import (
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestLeaderSendsBeforePersisting runs an election and a while of
// heartbeats on three cores, handing Process a sendEarly that checks what
// goes out early: only a leader's messages, never an acknowledgement, a
// vote request or a granted vote (a leader refusing a vote in its own term
// asserts nothing unwritten, so that may go), and at least once an append
// whose entries the leader has not written yet (the point of sending
// early). Everything else still goes out after the write.
func TestLeaderSendsBeforePersisting(t *testing.T) {
	n := newLeaseNet(t)
	unpersisted, early, late, refused := 0, 0, 0, 0
	process := func(id uint64) {
		c := n.cores[id]
		msgs, err := c.Process(func(out []*pb.Message) {
			if st := c.raw.BasicStatus(); st.RaftState != raft.StateLeader {
				t.Fatalf("core %d sent early as %v", id, st.RaftState)
			}
			last, err := c.logs.LastIndex()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range out {
				switch m.GetType() {
				case pb.MsgAppResp, pb.MsgVote, pb.MsgPreVote, pb.MsgHup:
					t.Fatalf("core %d sent %v before persisting", id, m.GetType())
				case pb.MsgVoteResp:
					if !m.GetReject() {
						t.Fatalf("core %d granted a vote before persisting", id)
					}
					refused++
				case pb.MsgApp:
					if ents := m.GetEntries(); len(ents) > 0 && ents[len(ents)-1].GetIndex() > last {
						unpersisted++
					}
				}
			}
			early += len(out)
			n.queue = append(n.queue, out...)
		})
		if err != nil {
			t.Fatal(err)
		}
		late += len(msgs)
		n.queue = append(n.queue, msgs...)
	}
	for i := 0; i < 3000; i++ {
		n.now += time.Millisecond
		in := n.queue
		n.queue = nil
		for _, m := range in {
			n.cores[m.GetTo()].Step(m)
		}
		for id := uint64(1); id <= 3; id++ {
			n.cores[id].Tick()
			process(id)
			if _, err := n.cores[id].ApplyNext(1 << 20); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n.leader() == 0 {
		t.Fatal("no leader elected")
	}
	t.Logf("%d messages sent early (%d vote refusals), %d after the write; %d appends early with entries not yet written", early, refused, late, unpersisted)
	if unpersisted == 0 || late == 0 {
		t.Fatalf("%d appends of unwritten entries sent early, %d messages after the write", unpersisted, late)
	}
}
