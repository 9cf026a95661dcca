package replication

import (
	"encoding/binary"
	"math"
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
// the given voters.
func (l *lease) valid(self uint64, voters quorum.JointConfig, now time.Duration) bool {
	return now < l.until(self, voters)
}

// until is when the lease ends for a leader (self) with the given voters:
// in each voter set, the quorum's oldest acknowledged heartbeat send time
// (self counting as acked at any time) plus the lease's length; 0 when a
// set has no acknowledging quorum.
func (l *lease) until(self uint64, voters quorum.JointConfig) time.Duration {
	const always = time.Duration(math.MaxInt64)
	end := always
	for _, cfg := range voters {
		if len(cfg) == 0 {
			continue
		}
		times := make([]time.Duration, 0, len(cfg))
		for id := range cfg {
			t, ok := l.acked[id]
			if id == self {
				t, ok = always, true
			}
			if ok {
				times = append(times, t)
			}
		}
		q := len(cfg)/2 + 1
		if len(times) < q {
			return 0
		}
		slices.Sort(times)
		if t := times[len(times)-q]; t != always {
			end = min(end, t+l.length)
		}
	}
	return end
}

// Reads from a published lease.
//
// A follower's causal read still crosses the raft loops of both nodes and
// queues behind the log entries on their streams. While this node leads
// under a proven lease it publishes that lease (a leaseGrant), and
// LeaseRead answers from any goroutine with the commit index: the leader's
// own sessions without a raft round, a follower's over its read link (see
// readlink.go) straight from the connection's goroutine. The grant is
// published from the raft loop and withdrawn before anything that ends it
// leaves the node (a step down, a new term, a leadership transfer's
// MsgTimeoutNow). The commit index a core records is updated before a
// Ready's messages go out and its entries are applied, so every commit
// acknowledged anywhere is at or below it. LeaseRead checks the grant
// again after reading the index: the index was read while no other leader
// could exist.

// leaseGrant is a published lease: this node leads term, and no other
// leader can be elected before until (the core's clock).
type leaseGrant struct {
	term  uint64
	until time.Duration
}

// publishLease publishes or withdraws the grant (raft loop). A grant needs
// leadership of the lease's term, no leadership transfer under way, an
// entry of the term committed (raft's condition for answering reads), and
// a quorum's acknowledgements.
func (c *Core) publishLease() {
	l := c.lease
	st := c.raw.BasicStatus()
	term := st.GetTerm()
	if st.RaftState != raft.StateLeader || st.LeadTransferee != raft.None || term != l.term || !c.committedInTerm(term, st.GetCommit()) {
		if c.grant.Load() != nil {
			c.grant.Store(nil)
		}
		c.votersKnown = false // a snapshot may change them without a conf change entry
		return
	}
	if !c.votersKnown {
		c.voters, c.votersKnown = c.raw.Status().Config.Voters, true
	}
	until := l.until(c.cfg.Self.ID, c.voters)
	if g := c.grant.Load(); g == nil || g.term != term || g.until != until {
		c.grant.Store(&leaseGrant{term: term, until: until})
	}
}

// committedInTerm reports whether the entry at commit belongs to term
// (raft loop; remembered once true).
func (c *Core) committedInTerm(term, commit uint64) bool {
	if c.termCommitted == term {
		return true
	}
	if t, err := c.logs.Term(commit); err != nil || t != term {
		return false
	}
	c.termCommitted = term
	return true
}

// LeaseRead returns the cluster's commit index as of the call when this
// node leads under a published lease, without a raft round, and the term
// it leads, to which the entry at index belongs (see LearnCommit); ok is
// false otherwise (ask raft). Safe from any goroutine.
func (c *Core) LeaseRead() (index, term uint64, ok bool) {
	g := c.grant.Load()
	if g == nil {
		return 0, 0, false
	}
	c.mu.Lock()
	term, index = c.term, c.commitIndex
	c.mu.Unlock()
	if term != g.term || c.grant.Load() != g || c.cfg.Clock() >= g.until {
		return 0, 0, false
	}
	c.stats.LeaseReads.Add(1)
	return index, term, true
}
