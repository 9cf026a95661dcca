package sim

import (
	"encoding/binary"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/certusdb/certus/replication"
)

// Read links, as a node's TCP transport keeps them: a follower asks the
// leader for its commit index over a link of its own, and the leader
// answers from its published lease or steps the request into raft
// (replication.AnswerReadLink). The answer finishes the round and commits
// the follower's log up to the index (replication.Core.LearnCommit).
// Requests and answers cross the simulated network, delayed, dropped,
// duplicated and cut like raft's messages. A link to a node that is down
// is not up, so the round goes through raft at once; the links to a node
// break when it crashes, and the rounds asked over them go through raft
// (replication.ReadQueue.Unlink, Reissue).

// linkRequestCtx and linkAnswerCtx mark a read link's request (a raft
// MsgReadIndex) and answer.
var (
	linkRequestCtx = []byte("sim: read link request")
	linkAnswerCtx  = []byte("sim: read link answer")
)

func isLinkRequest(m *pb.Message) bool { return string(m.GetContext()) == string(linkRequestCtx) }
func isLinkAnswer(m *pb.Message) bool  { return string(m.GetContext()) == string(linkAnswerCtx) }

// sendReadLink asks leader to for round ctx over the read link; false
// when no link to it is up.
func (n *node) sendReadLink(to, ctx uint64) bool {
	if x := n.w.node(to); x == nil || !x.up {
		return false
	}
	n.links[to] = true
	n.w.linkRounds++
	n.w.net.send(n.w.tick, []*pb.Message{{Type: pb.MsgReadIndex.Enum(), From: &n.id, To: &to, Context: linkRequestCtx,
		Entries: []*pb.Entry{{Data: binary.BigEndian.AppendUint64(nil, ctx)}}}})
	return true
}

// answerReadLink is the leader's side of a request.
func (n *node) answerReadLink(m *pb.Message) {
	if len(m.GetEntries()) != 1 || len(m.GetEntries()[0].GetData()) != 8 {
		n.w.fail("n%d: malformed read link request", n.id)
		return
	}
	a, step := replication.AnswerReadLink(n.core.LeaseRead, n.id, m.GetFrom(), m.GetEntries()[0].GetData())
	if step != nil {
		n.core.Step(step)
		return
	}
	from := m.GetFrom()
	n.w.net.send(n.w.tick, []*pb.Message{{Type: pb.MsgReadIndexResp.Enum(), From: &n.id, To: &from, Term: &a.Term, Index: &a.Index, Context: linkAnswerCtx,
		Entries: []*pb.Entry{{Data: binary.BigEndian.AppendUint64(nil, a.Ctx)}}}})
}

// finishLinkRead is the follower's side of an answer
// (replication.Replica.LinkAnswer).
func (n *node) finishLinkRead(m *pb.Message) {
	n.rep.LinkAnswer(m.GetFrom(), binary.BigEndian.Uint64(m.GetEntries()[0].GetData()), m.GetIndex(), m.GetTerm())
}

// linksDown breaks the read links to node id, which went down: the rounds
// asked over them go through raft (replication.Replica.LinkDown).
func (w *world) linksDown(id uint64) {
	for _, n := range w.nodes {
		if !n.up || !n.links[id] {
			continue
		}
		delete(n.links, id)
		n.rep.LinkDown()
	}
}
