package replication

import (
	"slices"
	"time"

	"github.com/certusdb/certus/certify"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// Proposals keeps a node's own write-sets from their proposal to their
// outcome, and decides which to propose again and which to give up on.
// It does no IO, takes no lock and reads no clock: the Node drives it
// under its mutex with the wall clock, the simulator with its ticks, so
// both run the same policy. W is what waits for an outcome (a channel on
// the Node, a client's operation in the simulator).
//
// The policy (Due): a write-set in the raft log stays, since the leader of
// its term commits it or a later leader overwrites it (Overwritten). One
// that is not in the log, because this node dropped it at once (no leader
// known) or because proposalTimeout passed since its proposal (raft drops
// a proposal without telling, e.g. a forwarded one on a connection that
// broke), is proposed again; certification drops a second copy. Once the
// commit index moved past the re-proposal horizon since its first
// proposal, a copy could no longer be certified safely: its outcome is
// given up on, and the node must start a new origin (rotateOrigin).
//
// The commit index a node knows can lag far behind the cluster's (it was
// cut off, then caught up by a state transfer), so a copy can still be
// proposed past that horizon. Such a copy fails certification as too old
// (or as a duplicate of a decision this node did not see); that failure
// says nothing of an earlier copy, which may have committed where the
// certification records no longer reach. So those failures of a write-set
// proposed more than once, and any failure of one that a state transfer
// reports (its reason is not transferred), are unknown outcomes (Outcome,
// Transferred). A key conflict is not: certification looks for the id
// among its decisions first, and those reach back past the read position
// the copy was checked from.
type Proposals[W any] struct {
	m map[writeset.ID]*proposal[W]
}

type proposal[W any] struct {
	waiter   W
	data     []byte
	proposed time.Time
	// logged is set while the write-set is in this node's raft log, at
	// index, since it was last proposed.
	logged bool
	index  uint64
	// dropped is set when this node dropped the proposal at once.
	dropped bool
	// commitAt is the commit index when the write-set was first proposed.
	commitAt uint64
	// resent is set once the write-set was proposed again.
	resent bool
}

// NewProposals returns an empty set.
func NewProposals[W any]() *Proposals[W] {
	return &Proposals[W]{m: map[writeset.ID]*proposal[W]{}}
}

// Add records the proposal of data, the encoded write-set id, at now, when
// the commit index was commitAt; w waits for its outcome.
func (p *Proposals[W]) Add(id writeset.ID, data []byte, w W, now time.Time, commitAt uint64) {
	p.m[id] = &proposal[W]{waiter: w, data: data, proposed: now, commitAt: commitAt}
}

// Len is the number of write-sets waiting.
func (p *Proposals[W]) Len() int { return len(p.m) }

// Take removes id's write-set, whose outcome arrived or whose waiter gave
// up, and returns its waiter.
func (p *Proposals[W]) Take(id writeset.ID) (w W, ok bool) {
	e, ok := p.m[id]
	if !ok {
		return w, false
	}
	delete(p.m, id)
	return e.waiter, true
}

// Dropped notes that this node dropped id's proposal at once: the next
// Due proposes it again.
func (p *Proposals[W]) Dropped(id writeset.ID) {
	if e := p.m[id]; e != nil {
		e.dropped = true
	}
}

// Logged notes that id's write-set reached this node's raft log at index.
func (p *Proposals[W]) Logged(id writeset.ID, index uint64) {
	if e := p.m[id]; e != nil {
		e.logged, e.index, e.dropped = true, index, false
	}
}

// Overwritten notes that a new leader replaced this node's log from index
// from: the write-sets logged there are no longer in it, and Due proposes
// them again once proposalTimeout has passed since their proposal. It
// returns how many there were.
func (p *Proposals[W]) Overwritten(from uint64) int {
	n := 0
	for _, e := range p.m {
		if e.logged && e.index >= from {
			e.logged = false
			n++
		}
	}
	return n
}

// Due applies the policy at now, with the election timeout, the commit
// index committed and the re-proposal horizon (Core.ReproposeHorizon): it
// returns the write-sets to propose again (marked proposed at now) and the
// waiters of those given up on (removed). Both in the order of their ids.
func (p *Proposals[W]) Due(now time.Time, election time.Duration, committed, horizon uint64) (again []Reproposal, lost []W) {
	// the node calls this every tick under its mutex: only the few that
	// are due are put in order
	var due []writeset.ID
	for id, e := range p.m {
		if !e.logged && (e.dropped || now.Sub(e.proposed) > proposalTimeout(election, len(e.data))) {
			due = append(due, id)
		}
	}
	slices.SortFunc(due, writeset.ID.Compare)
	for _, id := range due {
		e := p.m[id]
		if committed > e.commitAt+horizon {
			delete(p.m, id)
			lost = append(lost, e.waiter)
			continue
		}
		again = append(again, Reproposal{ID: id, Data: e.data, Late: !e.dropped})
		e.dropped, e.proposed, e.resent = false, now, true
	}
	return again, lost
}

// Reproposal is a write-set Due proposes again.
type Reproposal struct {
	ID   writeset.ID
	Data []byte
	// Late is set when raft lost the proposal (it was not dropped at once).
	Late bool
}

// proposalTimeout is how long a proposal of size bytes may take to reach
// the raft log before it counts as lost: an election timeout, plus time to
// forward, persist and send back a big write-set at 2 MB/s (a busy 2-core
// node took over 6 s for 60 MB; proposing it again then only adds load).
// It grows with the size even after a leader change: a 60 MB write-set
// sent again one election timeout after each change kept the leaders busy
// enough to lose their terms again (bench bigtxn, twice).
func proposalTimeout(election time.Duration, size int) time.Duration {
	return election + time.Duration(size)*time.Second/(2<<20)
}

// Settled is a write-set's waiter and its outcome; Unknown is set when
// the outcome is not known after all (see Proposals).
type Settled[W any] struct {
	Waiter  W
	Outcome writeset.Outcome
	Unknown bool
}

// Outcome settles id's write-set with the outcome of a copy of it this
// node applied; ok is false when id is not waiting.
func (p *Proposals[W]) Outcome(id writeset.ID, out writeset.Outcome) (s Settled[W], ok bool) {
	e, ok := p.m[id]
	if !ok {
		return s, false
	}
	delete(p.m, id)
	doubtful := e.resent && (out.Reason == certify.ReasonTooOld.String() || out.Reason == certify.ReasonDuplicate.String())
	return Settled[W]{Waiter: e.waiter, Outcome: out, Unknown: doubtful}, true
}

// Transferred settles the write-sets whose outcome a state transfer
// brought (decided: the transferred certification records, Core.Decided)
// and returns them in the order of their ids. The others keep waiting:
// they may still be ordered.
func (p *Proposals[W]) Transferred(decided func(writeset.ID) (seqno uint64, v Verdict, ok bool)) []Settled[W] {
	var done []Settled[W]
	for _, id := range p.ids() {
		seqno, v, ok := decided(id)
		if !ok {
			continue
		}
		out := writeset.Outcome{Seqno: seqno}
		switch v {
		case VerdictCommitted:
			out.Committed = true
		case VerdictRejected:
			out.Rejected = storage.ErrApplyRejected
		default:
			out.Reason = "key conflict (learned from a state transfer)"
		}
		e := p.m[id]
		done = append(done, Settled[W]{Waiter: e.waiter, Outcome: out, Unknown: e.resent && v == VerdictFailed})
		delete(p.m, id)
	}
	return done
}

// Waiters are the waiters of the write-sets waiting, in the order of their
// ids.
func (p *Proposals[W]) Waiters() []W {
	var all []W
	for _, id := range p.ids() {
		all = append(all, p.m[id].waiter)
	}
	return all
}

// Clear removes every write-set and returns their waiters, in the order
// of their ids.
func (p *Proposals[W]) Clear() []W {
	all := p.Waiters()
	clear(p.m)
	return all
}

// ids are the waiting write-sets' ids in order, so that the simulator's
// runs repeat.
func (p *Proposals[W]) ids() []writeset.ID {
	ids := make([]writeset.ID, 0, len(p.m))
	for id := range p.m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, writeset.ID.Compare)
	return ids
}
