package replication

import (
	"encoding/binary"
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/quorum"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Leader leases for causal reads.
//
// A causal read (wsrep_sync_wait) asks the leader for its commit index. By
// raft's safe ReadIndex the leader first confirms it still leads with a
// heartbeat round to a quorum, so a read on a follower costs four network
// hops. A lease saves the middle two: a follower that heard from the
// leader grants no vote for ElectionTicks of its ticks (raft's CheckQuorum
// lease), so once a quorum acknowledged a heartbeat sent at time s, no other
// leader can be elected before s plus that time, and the leader may answer
// at once from its own commit index until then.
//
// Raft's own ReadOnlyLeaseBased mode trusts that without counting: a leader
// cut off from the others keeps answering until CheckQuorum demotes it, up
// to two election timeouts, while a new leader may be elected after one.
// So raft answers at once, and the core holds every answer it gives as
// leader until the lease is proven valid from the send times of
// acknowledged heartbeats, read off the leader's own monotonic clock:
//
//   - Each heartbeat the leader sends carries its send time in its context,
//     which the follower echoes back. An acknowledgement in the leader's
//     current term proves the follower reset its election timer at or
//     after that time.
//   - The lease runs from the send time the quorum acknowledged (the
//     leader counting itself) for leaseTicks(ElectionTicks) ticks, shortened
//     by a tenth for clock rate differences. Ticks are never faster than
//     the tick interval, except that one late tick can be followed at once
//     by an on-time one; leaseTicks leaves room for that.
//   - A leadership transfer makes its target campaign past every lease, so
//     acknowledgements of heartbeats sent before a transfer begins no longer
//     count.
//   - A node that restarts forgets which leader it heard from; it grants no
//     vote until it has ticked ElectionTicks times since its start (see
//     Core.Step), so the lease it gave before the restart still holds.
//
// Answers held while the lease is not proven are released in order once it
// is, or dropped when the node stops leading (the asking node retries).
// An answer released later than asked is still correct: the quorum that
// proves the lease afterwards also proves that no other leader was elected
// in between.

// leaseMagic marks a heartbeat context that carries a send time.
const leaseMagic = 'L'

// leaseTicks is the part of an election timeout of electionTicks ticks a
// lease lasts.
func leaseTicks(electionTicks int) int { return electionTicks - 2 }

// lease is the leader's read lease (raft loop only; no IO, no clock of its
// own).
type lease struct {
	length time.Duration // how long an acknowledged heartbeat holds the lease
	term   uint64        // the term acked belongs to
	floor  time.Duration // acknowledgements of heartbeats sent before it don't count
	acked  map[uint64]time.Duration

	held      []*pb.Message    // answers to followers' reads, in order
	heldLocal []raft.ReadState // answers to this node's reads, in order
}

// newLease returns the lease of a core whose ticks last tick and whose
// election timeout is electionTicks ticks.
func newLease(tick time.Duration, electionTicks int) *lease {
	n := max(leaseTicks(electionTicks), 1)
	return &lease{length: tick * time.Duration(n) * 9 / 10, acked: map[uint64]time.Duration{}}
}

// reset forgets every acknowledgement and drops every held answer (a new
// term, or the node no longer leads).
func (l *lease) reset(term uint64) {
	l.term = term
	clear(l.acked)
	l.held, l.heldLocal = nil, nil
}

// stamp writes now into the heartbeats among msgs, and notes a leadership
// transfer beginning.
func (l *lease) stamp(msgs []*pb.Message, now time.Duration) {
	for _, m := range msgs {
		switch m.GetType() {
		case pb.MsgHeartbeat:
			if len(m.GetContext()) == 0 {
				m.Context = binary.BigEndian.AppendUint64([]byte{leaseMagic}, uint64(now))
			}
		case pb.MsgTimeoutNow:
			l.floor = now
			clear(l.acked)
		}
	}
}

// ack notes a follower's heartbeat acknowledgement.
func (l *lease) ack(m *pb.Message) {
	ctx := m.GetContext()
	if m.GetTerm() != l.term || len(ctx) != 9 || ctx[0] != leaseMagic {
		return
	}
	sent := time.Duration(binary.BigEndian.Uint64(ctx[1:]))
	if sent >= l.floor && sent > l.acked[m.GetFrom()] {
		l.acked[m.GetFrom()] = sent
	}
}

// valid reports whether the lease holds at now for a leader (self) with
// the given voters: a quorum of each voter set, counting self as acked
// now, acknowledged heartbeats sent after now-length.
func (l *lease) valid(self uint64, voters quorum.JointConfig, now time.Duration) bool {
	for _, cfg := range voters {
		if len(cfg) == 0 {
			continue
		}
		times := make([]time.Duration, 0, len(cfg))
		for id := range cfg {
			t, ok := l.acked[id]
			if id == self {
				t, ok = now, true
			}
			if ok {
				times = append(times, t)
			}
		}
		q := len(cfg)/2 + 1
		if len(times) < q {
			return false
		}
		slices.Sort(times)
		if times[len(times)-q]+l.length <= now {
			return false
		}
	}
	return true
}
