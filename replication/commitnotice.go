package replication

import (
	"bytes"
	"sync"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Commit notices.
//
// A follower's causal read waits for the leader's commit index over the
// read link and then for its own apply stage to reach it. The entries are
// usually in the follower's log by then (the leader sent them a round trip
// before it could commit them), but raft tells the follower they are
// committed only with the leader's next append or heartbeat, which comes
// over the raft stream, behind the entries queued there and through the
// poller: under scenario d's load about 0.6 ms of a 2.8 ms wait. The read
// link's answer already says the same thing sooner: the leader answers from a
// proven lease, under which the entry at its commit index belongs to its
// own term (publishLease requires an entry of the term committed, and a
// leader appends only entries of its term). So the answer carries that
// term, and the follower's raft loop (LearnCommit) commits up to the index
// when its own log holds an entry of that term there: by raft's log
// matching property that entry and every one before it are the leader's,
// which are committed. It steps the notice into raft as the heartbeat the
// leader would have sent (raft's only way in), with a context of its own
// whose answer is dropped (the leader has nothing to learn from it).

// noticeCtx marks the heartbeat LearnCommit steps, and the answer raft
// gives to it (lease contexts are 9 bytes, raft's read contexts 8).
var noticeCtx = []byte{'N'}

// LearnCommit commits this follower's log up to index, told by lead, the
// leader of term, that index is committed and that its entry there belongs
// to term. It does nothing (false) unless this node follows lead in term,
// its log holds an entry of term at index and index is past its commit
// index. Raft loop only.
func (c *Core) LearnCommit(lead, term, index uint64) bool {
	st := c.raw.BasicStatus()
	if st.RaftState != raft.StateFollower || st.Lead != lead || st.GetTerm() != term || index <= st.GetCommit() {
		return false
	}
	if t, err := c.logs.Term(index); err != nil || t != term {
		return false
	}
	self := c.cfg.Self.ID
	c.Step(&pb.Message{Type: pb.MsgHeartbeat.Enum(), From: &lead, To: &self, Term: &term, Commit: &index, Context: noticeCtx})
	c.stats.CommitNotices.Add(1)
	return true
}

// withoutNoticeAnswers returns msgs without the answers to LearnCommit's
// heartbeats (copied when it drops any: raft's slice stays as it is).
func withoutNoticeAnswers(msgs []*pb.Message) []*pb.Message {
	for i, m := range msgs {
		if isNoticeAnswer(m) {
			out := append([]*pb.Message(nil), msgs[:i]...)
			for _, m := range msgs[i+1:] {
				if !isNoticeAnswer(m) {
					out = append(out, m)
				}
			}
			return out
		}
	}
	return msgs
}

func isNoticeAnswer(m *pb.Message) bool {
	return m.GetType() == pb.MsgHeartbeatResp && bytes.Equal(m.GetContext(), noticeCtx)
}

// commitNotice is the newest commit index a read link's answer told a
// follower (see LearnCommit), waiting for the raft loop.
type commitNotice struct {
	mu                sync.Mutex
	lead, term, index uint64
	pending           bool
}

// note records that lead, leading term, answered a read with index.
func (cn *commitNotice) note(lead, term, index uint64) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if term > cn.term || term == cn.term && index > cn.index || !cn.pending {
		cn.lead, cn.term, cn.index, cn.pending = lead, term, index, true
	}
}

// take returns the pending notice, if any, and clears it.
func (cn *commitNotice) take() (lead, term, index uint64, ok bool) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	ok, cn.pending = cn.pending, false
	return cn.lead, cn.term, cn.index, ok
}
