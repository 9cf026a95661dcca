package replication

import (
	"encoding/binary"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/certusdb/certus/certify"
	"github.com/certusdb/certus/flowcontrol"
	"github.com/certusdb/certus/writeset"
)

// Replica is the logic of one node without its IO: its Core, and what the
// node decides about its own work on top of it: its write-sets from
// submission to outcome (Proposals), its causal reads' ReadIndex rounds
// (ReadQueue, over a read link or through raft), the streaming
// transactions it rolls back (Rollbacks) and what its flow control looks
// at (ObserveFlow). A driver feeds it
// events (a tick, a submission, a read, a read link's answer or loss) and
// carries out what it asks for through ReplicaConfig's functions: answer a
// waiter, send a read link's request, run Loop on the goroutine driving the
// core, record a new origin. Node drives it with goroutines, the wall
// clock and sockets; the simulator drives N of them in one goroutine with
// its ticks and its network. No policy lives in either driver.
//
// W waits for a write-set's outcome, R for a read's index. Methods marked
// "raft loop" run only on the goroutine driving the core; the others may
// be called from any goroutine.
type Replica[W, R any] struct {
	core *Core
	cfg  ReplicaConfig[W, R]
	self uint64
	log  *slog.Logger

	// origin is props' current origin, for Origin's callers (mu is held
	// to change it)
	origin atomic.Uint64
	mu     sync.Mutex
	props  *Proposals[W]

	readMu sync.Mutex
	reads  ReadQueue[R]
	notice commitNotice

	// streaming transactions' rollbacks (Rollbacks, raft loop): whether
	// the stale ones were proposed, when the orphans were last looked
	// for, how many rollbacks are in flight, and their ids' Seq
	staleDone     bool
	orphanChecked time.Time
	orphans       Orphans
	rollingBack   atomic.Int64
	rollbackSeq   atomic.Uint64
}

// ReplicaConfig configures a Replica.
type ReplicaConfig[W, R any] struct {
	// Core configures the core. The replica takes its OnLogged,
	// OnOverwritten, OnTransferred and OnReadState; an OnApplied given
	// here runs before the replica answers the write-set's waiter.
	Core CoreConfig
	// Now is the clock the policy's timeouts read.
	Now func() time.Time
	// LastOrigin is the origin of the node's previous run (0: none), to
	// retire; NewOrigin gives the origins of its incarnations.
	LastOrigin uint64
	NewOrigin  func() uint64
	// Flow is the node's flow control (nil: none); the replica tells it
	// of the write-sets that reach the log.
	Flow *Flow
	// Answer ends w's wait: with the write-set's outcome, or with
	// ErrOutcomeUnknown or ErrNotPrimary. It must not block.
	Answer func(w W, out writeset.Outcome, err error)
	// AnswerRead ends r's wait with the cluster's commit index as of its
	// request, or with an error (ErrSyncWaitTimeout, ErrNotPrimary, the
	// node's failure). It must not block.
	AnswerRead func(r R, index uint64, err error)
	// SendReadLink asks leader to for round ctx over the read link; false
	// when no link to it is up (the round goes through raft). Nil: the
	// node has no read links.
	SendReadLink func(to, ctx uint64) bool
	// Wake asks the driver to call Loop soon on the raft loop. It must
	// not block and may be called from any goroutine.
	Wake func()
	// Rotated is told, outside the replica's locks, of every new origin
	// (the node records it, so that a restart retires it). Optional.
	Rotated func(origin uint64)
	// Orphans is how long a member may be out of the leader's reach
	// before it rolls back the member's streaming transactions, and
	// OrphanCheck how often it looks (Rollbacks; defaults OrphanTimeout
	// and a second).
	Orphans, OrphanCheck time.Duration
}

// NewReplica opens the core on cfg.Core and starts the node's first
// incarnation.
func NewReplica[W, R any](cfg ReplicaConfig[W, R]) (*Replica[W, R], error) {
	r := &Replica[W, R]{cfg: cfg, self: cfg.Core.Self.ID, log: cfg.Core.Logger}
	if r.log == nil {
		r.log = slog.Default()
	}
	if cfg.Orphans == 0 {
		cfg.Orphans = OrphanTimeout
	}
	if cfg.OrphanCheck == 0 {
		cfg.OrphanCheck = time.Second
	}
	r.cfg, r.orphans = cfg, Orphans{Timeout: cfg.Orphans}
	r.rollbackSeq.Store(1 << 63) // ids no transaction of an incarnation uses
	r.props = NewProposals[W](cfg.LastOrigin, cfg.NewOrigin)
	r.origin.Store(r.props.Origin())
	cc := cfg.Core
	applied := cc.OnApplied
	cc.OnApplied = func(ws *writeset.WriteSet, out writeset.Outcome) {
		if applied != nil {
			applied(ws, out)
		}
		r.applied(ws, out)
	}
	cc.OnLogged, cc.OnOverwritten, cc.OnTransferred, cc.OnReadState = r.logged, r.overwritten, r.transferred, r.readState
	core, err := NewCore(cc)
	if err != nil {
		return nil, err
	}
	r.core = core
	return r, nil
}

// Core is the replica's raft, log, certification and apply.
func (r *Replica[W, R]) Core() *Core { return r.core }

// Origin is the origin the node's write-sets carry now.
func (r *Replica[W, R]) Origin() uint64 { return r.origin.Load() }

// withProposals runs f on the proposals under r.mu; a new incarnation f
// started is published (Origin) and, once r.mu is released, reported
// (Rotated).
func (r *Replica[W, R]) withProposals(f func(p *Proposals[W])) {
	r.mu.Lock()
	f(r.props)
	o := r.props.Origin()
	rotated := o != r.origin.Load()
	if rotated {
		r.origin.Store(o)
	}
	r.mu.Unlock()
	if rotated && r.cfg.Rotated != nil {
		r.cfg.Rotated(o)
	}
}

// Submit records ws, whose outcome w waits for, and returns its encoding
// for Propose. It stamps ws with the current origin (Proposals.Submit).
func (r *Replica[W, R]) Submit(ws *writeset.WriteSet, w W) []byte {
	r.mu.Lock()
	data := r.props.Submit(ws, r.self, w, r.cfg.Now(), r.core.Committed())
	r.mu.Unlock()
	st := &r.core.stats
	st.Replicated.Add(1)
	st.ReplicatedBytes.Add(uint64(len(data)))
	var keyBytes, dataBytes int
	for _, k := range ws.Keys {
		keyBytes += len(k.Key)
	}
	for _, op := range ws.Ops {
		dataBytes += len(op.Key) + len(op.Value) + len(op.Payload)
	}
	st.ReplicatedKeys.Add(uint64(len(ws.Keys)))
	st.ReplicatedKeyBytes.Add(uint64(keyBytes))
	st.ReplicatedDataBytes.Add(uint64(dataBytes))
	return data
}

// Propose proposes a submitted write-set; one the core drops at once (no
// leader known) is proposed again at the next tick. Raft loop.
func (r *Replica[W, R]) Propose(data []byte) {
	if r.core.Propose(data) == nil {
		return
	}
	if id, ok := writeset.PeekID(data); ok {
		r.mu.Lock()
		r.props.Dropped(id)
		r.mu.Unlock()
	}
}

// Abandon stops waiting for a write-set whose waiter gave up (its
// outcome is unknown: Proposals.Abandon); false when it was not waiting
// any more (its outcome was answered first).
func (r *Replica[W, R]) Abandon(id writeset.ID) bool {
	var waiting bool
	r.withProposals(func(p *Proposals[W]) { _, waiting = p.Abandon(id) })
	return waiting
}

// Tick runs the node's periodic policy after the core's tick: it proposes
// again the write-sets whose proposal was lost, gives up on those too old
// to propose again and on all of them after an election timeout outside a
// primary component (Proposals.Tick), and fails the read rounds that got
// no answer for an election timeout. Raft loop.
func (r *Replica[W, R]) Tick() {
	now, c := r.cfg.Now(), r.core
	var due Due[W]
	r.withProposals(func(p *Proposals[W]) {
		due = p.Tick(now, c.ElectionTimeout(), c.Committed(), c.ReproposeHorizon(), c.Primary())
	})
	for _, w := range due.Lost {
		r.cfg.Answer(w, writeset.Outcome{}, ErrOutcomeUnknown)
	}
	for _, w := range due.NotPrimary {
		r.cfg.Answer(w, writeset.Outcome{}, ErrNotPrimary)
	}
	for _, p := range due.Again {
		if p.Late {
			r.log.Warn("proposing a write-set again: it is not in the raft log", "id", p.ID.String(), "bytes", len(p.Data))
		}
		r.Propose(p.Data)
	}
	r.readMu.Lock()
	failed := r.reads.Expire(now, c.ElectionTimeout())
	r.readMu.Unlock()
	if len(failed) == 0 {
		return
	}
	err := ErrSyncWaitTimeout
	if !c.Primary() {
		err = ErrNotPrimary
	}
	for _, w := range failed {
		r.cfg.AnswerRead(w, 0, err)
	}
	r.startRead(true)
}

// logged notes that a local write-set reached the raft log (OnLogged).
func (r *Replica[W, R]) logged(id writeset.ID, index uint64) {
	if r.cfg.Flow != nil {
		r.cfg.Flow.Logged(id.Origin, r.cfg.Now())
	}
	r.mu.Lock()
	r.props.Logged(id, index)
	r.mu.Unlock()
}

// overwritten marks the local write-sets whose entries a new leader
// replaced as no longer in the log (OnOverwritten).
func (r *Replica[W, R]) overwritten(from uint64) {
	r.mu.Lock()
	lost := r.props.Overwritten(from)
	r.mu.Unlock()
	if lost > 0 {
		r.log.Info("a new leader replaced local write-sets in the log: they will be proposed again", "write_sets", lost, "from_index", from)
	}
}

// applied answers the local transaction waiting for ws, if any
// (OnApplied).
func (r *Replica[W, R]) applied(ws *writeset.WriteSet, out writeset.Outcome) {
	var s Settled[W]
	var ok bool
	r.withProposals(func(p *Proposals[W]) { s, ok = p.Outcome(ws.ID, out) })
	if !ok {
		return
	}
	if s.Unknown {
		r.log.Warn("a write-set proposed again failed certification as too old or a duplicate: an earlier copy may have committed, so its outcome is unknown", "id", ws.ID.String(), "seqno", out.Seqno, "reason", out.Reason)
	} else if !out.Committed && out.Rejected == nil && out.Reason != certify.ReasonKey.String() {
		// key conflicts are the workload's business; the others (too
		// old, schema change) say something about the cluster
		r.log.Info("a local transaction failed certification", "seqno", out.Seqno, "reason", out.Reason, "keys", len(ws.Keys))
	}
	r.settle(s)
}

// transferred answers the local transactions whose write-sets a state
// transfer covered: their outcome is in the transferred certification
// records. The others keep waiting (they may still be ordered).
func (r *Replica[W, R]) transferred() {
	var done []Settled[W]
	r.withProposals(func(p *Proposals[W]) { done = p.Transferred(r.core.Decided) })
	for _, s := range done {
		r.settle(s)
	}
}

func (r *Replica[W, R]) settle(s Settled[W]) {
	switch {
	case s.Unknown:
		r.cfg.Answer(s.Waiter, writeset.Outcome{}, ErrOutcomeUnknown)
		return
	case !s.Outcome.Committed && s.Outcome.Rejected == nil:
		r.core.stats.CertFailures.Add(1)
	}
	r.cfg.Answer(s.Waiter, s.Outcome, nil)
}

// Retiring returns the earlier origins to retire now (Proposals.Retiring).
func (r *Replica[W, R]) Retiring() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.props.Retiring()
}

// Retired notes that origin's retirement was ordered.
func (r *Replica[W, R]) Retired(origin uint64) {
	r.mu.Lock()
	r.props.Retired(origin)
	r.mu.Unlock()
}

// Waiting is the number of write-sets waiting for their outcome.
func (r *Replica[W, R]) Waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.props.Len()
}

// Waiters returns what waits for each write-set, in no order.
func (r *Replica[W, R]) Waiters() []W {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.props.Waiters()
}

// Clear forgets every write-set and returns their waiters, unanswered
// (the node failed or crashed), and answers every read with err.
func (r *Replica[W, R]) Clear(err error) []W {
	r.mu.Lock()
	ws := r.props.Clear()
	r.mu.Unlock()
	r.readMu.Lock()
	all := r.reads.Drain()
	r.readMu.Unlock()
	for _, w := range all {
		r.cfg.AnswerRead(w, 0, err)
	}
	return ws
}

// Read asks for the cluster's commit index as of the call for w: the
// leader answers from its published lease at once (ok), else w joins a
// round, asked over the read link to the leader when there is one, else
// through raft, and AnswerRead answers it.
func (r *Replica[W, R]) Read(w R) (index uint64, ok bool) {
	if idx, _, ok := r.core.LeaseRead(); ok {
		return idx, true
	}
	r.readMu.Lock()
	r.reads.Add(w)
	r.readMu.Unlock()
	r.startRead(false)
	return 0, false
}

// startRead starts a round for the pending reads (ReadQueue.Start): over
// the read link to a leader elsewhere, from any goroutine; else through
// raft, which only the raft loop (onLoop) may ask, so other goroutines
// wake it.
func (r *Replica[W, R]) startRead(onLoop bool) {
	lead := r.core.Lead()
	useLink := r.cfg.SendReadLink != nil && lead != raft.None && lead != r.self
	if !useLink && !onLoop {
		r.cfg.Wake()
		return
	}
	r.readMu.Lock()
	ctx, ok := r.reads.Start(r.cfg.Now(), useLink)
	r.readMu.Unlock()
	if !ok {
		return
	}
	r.core.stats.ReadIndexRounds.Add(1)
	if useLink {
		if r.cfg.SendReadLink(lead, ctx) {
			r.core.stats.ReadLinkRounds.Add(1)
			return
		}
		r.readMu.Lock()
		r.reads.Unlink(ctx)
		r.readMu.Unlock()
		r.cfg.Wake()
		return
	}
	r.core.ReadIndex(binary.BigEndian.AppendUint64(nil, ctx))
}

// Loop is the raft loop's part of what other goroutines asked for (Wake):
// it commits up to the newest commit notice a read link brought, asks raft
// for the rounds whose read link broke, and starts a round. Raft loop.
func (r *Replica[W, R]) Loop() {
	if lead, term, index, ok := r.notice.take(); ok {
		r.core.LearnCommit(lead, term, index)
	}
	r.readMu.Lock()
	ctxs := r.reads.Reissue()
	r.readMu.Unlock()
	for _, ctx := range ctxs {
		r.core.ReadIndex(binary.BigEndian.AppendUint64(nil, ctx))
	}
	r.startRead(true)
}

// readState answers the reads raft's ReadState serves (OnReadState).
func (r *Replica[W, R]) readState(rs raft.ReadState) {
	if len(rs.RequestCtx) != 8 {
		return
	}
	r.finishRound(binary.BigEndian.Uint64(rs.RequestCtx), rs.Index)
	r.startRead(true)
}

// LinkAnswer takes lead's answer to round ctx over the read link: index,
// committed in lead's term term. It answers the round's reads and has the
// raft loop commit up to index (Core.LearnCommit).
func (r *Replica[W, R]) LinkAnswer(lead, ctx, index, term uint64) {
	if index > r.core.Committed() {
		r.notice.note(lead, term, index)
		r.cfg.Wake()
	}
	r.finishRound(ctx, index)
	r.startRead(false)
}

// LinkDown sends the rounds asked over a read link that broke through
// raft.
func (r *Replica[W, R]) LinkDown() {
	r.readMu.Lock()
	marked := r.reads.Unlink(0)
	r.readMu.Unlock()
	if marked {
		r.cfg.Wake()
	}
}

func (r *Replica[W, R]) finishRound(ctx, index uint64) {
	r.readMu.Lock()
	done := r.reads.Finish(ctx)
	r.readMu.Unlock()
	for _, w := range done {
		r.cfg.AnswerRead(w, index, nil)
	}
}

// ObserveFlow looks at the node's receive queue (Flow.Observe) and
// returns the report to send to the other data members, if there is one;
// catchingUp: the node is recovering or desynced (a state transfer in
// progress counts as well). Any goroutine.
func (r *Replica[W, R]) ObserveFlow(catchingUp bool) (flowcontrol.Report, bool) {
	if r.cfg.Flow == nil {
		return flowcontrol.Report{}, false
	}
	applied := r.core.Applied() // first: the commit index read after it is not behind it
	return r.cfg.Flow.Observe(r.cfg.Now(), FlowState{
		Committed: r.core.Committed(), Applied: applied, Applying: r.core.Applying(),
		CatchingUp: catchingUp || r.core.Transferring(),
	})
}

// Reading is the number of reads waiting for their round.
func (r *Replica[W, R]) Reading() int {
	r.readMu.Lock()
	defer r.readMu.Unlock()
	return r.reads.Len()
}
