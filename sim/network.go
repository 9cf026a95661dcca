package sim

import (
	"container/heap"
	"math/rand"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// network is the simulated network: every message gets a delivery tick
// drawn from the seed; it may be dropped or duplicated, and links between
// partitioned nodes drop everything.
type network struct {
	r       *rand.Rand
	q       msgQueue
	seq     uint64
	cut     map[[2]uint64]bool // directed links that drop messages
	faults  NetFaults
	dropped uint64
	duped   uint64
}

// NetFaults are the network's fault probabilities.
type NetFaults struct {
	// Drop is the probability that a message is lost.
	Drop float64
	// Duplicate is the probability that a message is delivered twice.
	Duplicate float64
	// MaxDelay is the largest delivery delay in ticks (messages are
	// reordered when their delays differ).
	MaxDelay int
}

type inflight struct {
	at  int64
	seq uint64
	msg *pb.Message
}

type msgQueue []inflight

func (q msgQueue) Len() int { return len(q) }
func (q msgQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q msgQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *msgQueue) Push(x any)   { *q = append(*q, x.(inflight)) }
func (q *msgQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

func newNetwork(r *rand.Rand, f NetFaults) *network {
	return &network{r: r, cut: map[[2]uint64]bool{}, faults: f}
}

// send schedules msgs sent at tick now.
func (n *network) send(now int64, msgs []*pb.Message) {
	for _, m := range msgs {
		if n.cut[[2]uint64{m.GetFrom(), m.GetTo()}] {
			n.dropped++
			continue
		}
		if n.r.Float64() < n.faults.Drop {
			n.dropped++
			continue
		}
		copies := 1
		if n.r.Float64() < n.faults.Duplicate {
			copies = 2
			n.duped++
		}
		for i := 0; i < copies; i++ {
			delay := int64(1)
			if n.faults.MaxDelay > 1 {
				delay += int64(n.r.Intn(n.faults.MaxDelay))
			}
			n.seq++
			msg := m
			if i > 0 {
				msg = proto.Clone(m).(*pb.Message)
			}
			heap.Push(&n.q, inflight{at: now + delay, seq: n.seq, msg: msg})
		}
	}
}

// due pops the messages to deliver at or before tick now, in order.
func (n *network) due(now int64) []*pb.Message {
	var out []*pb.Message
	for n.q.Len() > 0 && n.q[0].at <= now {
		x := heap.Pop(&n.q).(inflight)
		// a partition also cuts messages already in flight
		if n.cut[[2]uint64{x.msg.GetFrom(), x.msg.GetTo()}] {
			n.dropped++
			continue
		}
		out = append(out, x.msg)
	}
	return out
}

// isolate cuts every link between the two groups (both directions).
func (n *network) isolate(a, b []uint64) {
	for _, x := range a {
		for _, y := range b {
			n.cut[[2]uint64{x, y}] = true
			n.cut[[2]uint64{y, x}] = true
		}
	}
}

// heal removes all partitions.
func (n *network) heal() { n.cut = map[[2]uint64]bool{} }

// partitioned reports whether any link is cut.
func (n *network) partitioned() bool { return len(n.cut) > 0 }
