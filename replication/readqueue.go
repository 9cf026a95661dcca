package replication

import "time"

// maxReadRounds bounds the ReadIndex rounds in flight. Rounds overlap so
// that a request never waits for an earlier round to finish before its
// own starts (each round costs the leader a heartbeat to every follower);
// past the bound, requests gather for the next round.
const maxReadRounds = 8

// readQueue is the bookkeeping of causal reads: requests waiting for the
// next raft ReadIndex round, and the rounds in flight. It does no IO; the
// Node calls it under readMu and talks to raft.
type readQueue struct {
	pending []*readWaiter // requests for the next round
	rounds  []readRound   // rounds in flight, oldest first
	ctx     uint64        // context of the last round started
}

// readRound is one raft ReadIndex request in flight and the callers it
// answers.
type readRound struct {
	ctx     uint64
	started time.Time
	waiters []*readWaiter
	// link: asked over the read link; reissue: its link broke, ask raft
	link, reissue bool
}

type readWaiter struct {
	ch chan readResult
}

type readResult struct {
	index uint64
	err   error
}

// add queues a request for the next round.
func (q *readQueue) add(w *readWaiter) { q.pending = append(q.pending, w) }

// start makes the pending requests a round (asked over the read link when
// link is set) and returns its context, or ok=false when nothing is
// pending or maxReadRounds are in flight.
func (q *readQueue) start(now time.Time, link bool) (ctx uint64, ok bool) {
	if len(q.pending) == 0 || len(q.rounds) >= maxReadRounds {
		return 0, false
	}
	q.ctx++
	q.rounds = append(q.rounds, readRound{ctx: q.ctx, started: now, waiters: q.pending, link: link})
	q.pending = nil
	return q.ctx, true
}

// unlink marks the rounds asked over the read link (ctx, or every one
// when ctx is 0) to be asked through raft instead; it reports whether it
// marked any.
func (q *readQueue) unlink(ctx uint64) bool {
	marked := false
	for i := range q.rounds {
		r := &q.rounds[i]
		if r.link && (ctx == 0 || r.ctx == ctx) {
			r.link, r.reissue, marked = false, true, true
		}
	}
	return marked
}

// reissue returns the contexts of the rounds unlink marked, unmarking
// them.
func (q *readQueue) reissue() []uint64 {
	var ctxs []uint64
	for i := range q.rounds {
		if r := &q.rounds[i]; r.reissue {
			r.reissue = false
			ctxs = append(ctxs, r.ctx)
		}
	}
	return ctxs
}

// finish returns the callers that raft's answer to round ctx serves: that
// round's, and any earlier round's still listed. Raft answers rounds in
// the order they were asked, so an earlier one was dropped (no leader
// known at that moment), and an index read after a request was made
// serves that request too. An unknown ctx (an answer after its round
// timed out) serves nobody.
func (q *readQueue) finish(ctx uint64) []*readWaiter {
	i := 0
	for i < len(q.rounds) && q.rounds[i].ctx != ctx {
		i++
	}
	if i == len(q.rounds) {
		return nil
	}
	var done []*readWaiter
	for _, r := range q.rounds[:i+1] {
		done = append(done, r.waiters...)
	}
	q.rounds = append(q.rounds[:0], q.rounds[i+1:]...)
	return done
}

// expire removes the rounds started timeout or longer before now and
// returns their callers.
func (q *readQueue) expire(now time.Time, timeout time.Duration) []*readWaiter {
	k := 0
	for k < len(q.rounds) && now.Sub(q.rounds[k].started) >= timeout {
		k++
	}
	var failed []*readWaiter
	for _, r := range q.rounds[:k] {
		failed = append(failed, r.waiters...)
	}
	q.rounds = append(q.rounds[:0], q.rounds[k:]...)
	return failed
}

// drain removes and returns every caller, pending or in flight.
func (q *readQueue) drain() []*readWaiter {
	all := q.pending
	for _, r := range q.rounds {
		all = append(all, r.waiters...)
	}
	q.pending, q.rounds = nil, nil
	return all
}
