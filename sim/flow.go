package sim

import (
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/certusdb/certus/flowcontrol"
	"github.com/certusdb/certus/replication"
)

// flowLimit is the receive queue limit of the nodes' flow control: small,
// for the sim's short runs.
const flowLimit = 20

// flowTicks is how often, in ticks, a node looks at its receive queue.
const flowTicks = int64(replication.FlowInterval / simTick)

// slowApplyTicks is how often the slow member applies a write-set.
const slowApplyTicks = 4

// flowCtx marks the messages that carry a flow control report (after the
// mark); the network delays, drops, duplicates and cuts them as it does
// raft's messages.
var flowCtx = []byte("sim: flow report ")

func isFlowReport(m *pb.Message) bool {
	return len(m.GetContext()) >= len(flowCtx) && string(m.GetContext()[:len(flowCtx)]) == string(flowCtx)
}

// observeFlow looks at the node's receive queue (Replica.ObserveFlow), as a
// node's flow loop does, and sends the report, if there is one, to the
// other nodes.
func (n *node) observeFlow() {
	r, send := n.rep.ObserveFlow(!n.ready())
	if !send {
		return
	}
	ctx := r.Encode(append([]byte(nil), flowCtx...)) // one report for every node
	var out []*pb.Message
	for _, o := range n.w.nodes {
		if o.id != n.id {
			out = append(out, &pb.Message{Type: pb.MsgUnreachable.Enum(), From: &n.id, To: &o.id, Context: ctx})
		}
	}
	n.w.net.send(n.w.tick, out)
}

// receiveFlow hands a report to the node's flow control.
func (n *node) receiveFlow(m *pb.Message) {
	if n.flow == nil {
		return
	}
	r, err := flowcontrol.DecodeReport(m.GetContext()[len(flowCtx):])
	if err != nil {
		n.w.fail("n%d: flow report from n%d: %v", n.id, m.GetFrom(), err)
		return
	}
	n.flow.Receive(n.w.now(), m.GetFrom(), r)
}

// slowNow reports whether the node is the slow member, and the run in the
// middle half where it is slow.
func (n *node) slowNow() bool {
	t := n.w.tick
	return n.id == n.w.slow && !n.w.quiet && t >= int64(n.w.cfg.Ticks/4) && t < int64(n.w.cfg.Ticks*3/4)
}

// admitted asks the node's flow control to admit the client's next write,
// as replication.Node.Replicate does before each; false: it waits.
func (c *client) admitted() bool {
	n := c.n
	if n.flow == nil {
		return true
	}
	now := n.w.now()
	if c.waitingSince.IsZero() {
		c.waitingSince = now
	}
	if n.flow.Admit(now, c.waitingSince) > 0 {
		n.w.throttled++
		return false
	}
	c.waitingSince = time.Time{}
	return true
}
