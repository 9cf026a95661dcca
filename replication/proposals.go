package replication

import (
	"slices"
	"time"

	"github.com/certusdb/certus/certify"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// Proposals keeps a node's own write-sets from their proposal to their
// outcome, decides which to propose again and which to give up on, and
// keeps the origin the node writes them under (its incarnation) and the
// earlier origins still to retire. It does no IO, takes no lock and reads
// no clock: the Node drives it under its mutex with the wall clock, the
// simulator with its ticks, so both run the same policy. W is what waits
// for an outcome (a channel on the Node, a client's operation in the
// simulator).
//
// The policy (Tick): a write-set in the raft log stays, since the leader
// of its term commits it or a later leader overwrites it (Overwritten).
// One that is not in the log, because this node dropped it at once (no
// leader known) or because proposalTimeout passed since its proposal
// (raft drops a proposal without telling, e.g. a forwarded one on a
// connection that broke), is proposed again; certification drops a second
// copy. Once the commit index moved past the re-proposal horizon since its
// first proposal, a copy could no longer be certified safely: its outcome
// is given up on. A node outside a primary component for an election
// timeout gives up on every write-set, as Galera does when it turns
// non-Primary.
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
//
// Whenever an outcome is given up on or turns out unknown, the node starts
// a new incarnation (a new origin): should the write-set still commit,
// certification then checks later local transactions against it like
// another node's. The earlier origins are retired (see retire.go) once a
// write-set of the current one was ordered.
type Proposals[W any] struct {
	m map[writeset.ID]*proposal[W]
	// origin is the current incarnation, newOrigin the source of the next
	// ones; retiring are the earlier origins not retired yet, ordered is
	// set once a write-set of origin was applied
	origin    uint64
	newOrigin func() uint64
	retiring  []uint64
	ordered   bool
	// nonPrimarySince is when Tick first saw the node outside a primary
	// component (zero while it is in one)
	nonPrimarySince time.Time
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

// NewProposals returns an empty set writing under a new origin from
// newOrigin; last, unless 0, is the origin of the node's previous run,
// to be retired.
func NewProposals[W any](last uint64, newOrigin func() uint64) *Proposals[W] {
	p := &Proposals[W]{m: map[writeset.ID]*proposal[W]{}, newOrigin: newOrigin, origin: newOrigin()}
	if last != 0 {
		p.retiring = []uint64{last}
	}
	return p
}

// Origin is the origin the node writes under now.
func (p *Proposals[W]) Origin() uint64 { return p.origin }

// rotate starts a new incarnation; the current one is retired later.
func (p *Proposals[W]) rotate() {
	p.retiring = append(p.retiring, p.origin)
	p.origin, p.ordered = p.newOrigin(), false
}

// Submit records the proposal of ws at now, when the commit index was
// commitAt, and returns its encoding to propose; w waits for its outcome.
// The write-set is stamped with the current origin (a retirement keeps the
// origin it ends), and a streaming transaction's fragment with this node
// (self) and, for the first one, its transaction's id.
func (p *Proposals[W]) Submit(ws *writeset.WriteSet, self uint64, w W, now time.Time, commitAt uint64) []byte {
	if ws.Flags&writeset.FlagRetire == 0 {
		ws.ID.Origin = p.origin
	}
	if ws.Flags&writeset.StreamFlags != 0 {
		if ws.Stream.Node == 0 {
			ws.Stream.Node = self
		}
		if ws.Stream.Frag == 0 {
			ws.Stream.ID = ws.ID // the first fragment names its transaction
		}
	}
	data := ws.Encode(nil)
	p.m[ws.ID] = &proposal[W]{waiter: w, data: data, proposed: now, commitAt: commitAt}
	return data
}

// Len is the number of write-sets waiting.
func (p *Proposals[W]) Len() int { return len(p.m) }

// Abandon removes id's write-set, whose waiter gave up on it, and starts a
// new incarnation: its outcome is unknown. It returns the waiter.
func (p *Proposals[W]) Abandon(id writeset.ID) (w W, ok bool) {
	e, ok := p.m[id]
	if !ok {
		return w, false
	}
	delete(p.m, id)
	p.rotate()
	return e.waiter, true
}

// Dropped notes that this node dropped id's proposal at once: the next
// Tick proposes it again.
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
// from: the write-sets logged there are no longer in it, and Tick proposes
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

// Due is what Tick decided.
type Due[W any] struct {
	// Again are the write-sets to propose again (marked proposed at now).
	Again []Reproposal
	// Lost are the waiters of write-sets too old to propose again,
	// NotPrimary those given up on because the node was outside a primary
	// component for an election timeout. They are removed.
	Lost, NotPrimary []W
}

// Tick applies the policy at now, with the election timeout, the commit
// index committed, the re-proposal horizon (Core.ReproposeHorizon) and
// whether the node is in a primary component. Each list is in the order of
// the write-sets' ids.
func (p *Proposals[W]) Tick(now time.Time, election time.Duration, committed, horizon uint64, primary bool) Due[W] {
	var d Due[W]
	switch {
	case primary:
		p.nonPrimarySince = time.Time{}
	case p.nonPrimarySince.IsZero():
		p.nonPrimarySince = now
	case now.Sub(p.nonPrimarySince) > election && len(p.m) > 0:
		d.NotPrimary = p.Clear()
		p.rotate()
		return d
	}
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
			d.Lost = append(d.Lost, e.waiter)
			continue
		}
		d.Again = append(d.Again, Reproposal{ID: id, Data: e.data, Late: !e.dropped})
		e.dropped, e.proposed, e.resent = false, now, true
	}
	if len(d.Lost) > 0 {
		p.rotate()
	}
	return d
}

// Reproposal is a write-set Tick proposes again.
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

// Outcome notes that this node applied a write-set of id and settles id's
// write-set, if it waits, with the outcome of that copy; ok is false when
// id is not waiting.
func (p *Proposals[W]) Outcome(id writeset.ID, out writeset.Outcome) (s Settled[W], ok bool) {
	if id.Origin == p.origin {
		p.ordered = true
	}
	e, ok := p.m[id]
	if !ok {
		return s, false
	}
	delete(p.m, id)
	doubtful := e.resent && (out.Reason == certify.ReasonTooOld.String() || out.Reason == certify.ReasonDuplicate.String())
	if doubtful {
		p.rotate()
	}
	return Settled[W]{Waiter: e.waiter, Outcome: out, Unknown: doubtful}, true
}

// Transferred settles the write-sets whose outcome a state transfer
// brought (decided: the transferred certification records, Core.Decided)
// and returns them in the order of their ids. The others keep waiting:
// they may still be ordered.
func (p *Proposals[W]) Transferred(decided func(writeset.ID) (seqno uint64, v Verdict, ok bool)) []Settled[W] {
	var done []Settled[W]
	rotate := false
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
		unknown := e.resent && v == VerdictFailed
		done = append(done, Settled[W]{Waiter: e.waiter, Outcome: out, Unknown: unknown})
		delete(p.m, id)
		rotate = rotate || unknown
	}
	if rotate {
		p.rotate()
	}
	return done
}

// Retiring returns the earlier origins to retire, once a write-set of the
// current one was ordered (the current one then stands for the node's
// open transactions).
func (p *Proposals[W]) Retiring() []uint64 {
	if !p.ordered {
		return nil
	}
	return slices.Clone(p.retiring)
}

// Retired notes that origin's retirement was ordered.
func (p *Proposals[W]) Retired(origin uint64) {
	p.retiring = slices.DeleteFunc(p.retiring, func(o uint64) bool { return o == origin })
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
