package replication

import "time"

// maxReadRounds bounds the ReadIndex rounds in flight. Rounds overlap so
// that a request never waits for an earlier round to finish before its
// own starts (each round costs the leader a heartbeat to every follower);
// past the bound, requests gather for the next round.
const maxReadRounds = 8

// ReadQueue is the bookkeeping of causal reads: requests waiting for the
// next raft ReadIndex round, and the rounds in flight. It does no IO; the
// Node calls it under readMu and talks to raft, the simulator calls it
// with its clock. W is a request's waiter.
type ReadQueue[W any] struct {
	pending []W            // requests for the next round
	rounds  []readRound[W] // rounds in flight, oldest first
	ctx     uint64         // context of the last round started
}

// readRound is one raft ReadIndex request in flight and the callers it
// answers.
type readRound[W any] struct {
	ctx     uint64
	started time.Time
	waiters []W
	// link: asked over the read link; reissue: its link broke, ask raft
	link, reissue bool
}

// Add queues a request for the next round.
func (q *ReadQueue[W]) Add(w W) { q.pending = append(q.pending, w) }

// Len is the number of requests pending or in flight.
func (q *ReadQueue[W]) Len() int {
	n := len(q.pending)
	for _, r := range q.rounds {
		n += len(r.waiters)
	}
	return n
}

// Start makes the pending requests a round (asked over the read link when
// link is set) and returns its context, or ok=false when nothing is
// pending or maxReadRounds are in flight.
func (q *ReadQueue[W]) Start(now time.Time, link bool) (ctx uint64, ok bool) {
	if len(q.pending) == 0 || len(q.rounds) >= maxReadRounds {
		return 0, false
	}
	q.ctx++
	q.rounds = append(q.rounds, readRound[W]{ctx: q.ctx, started: now, waiters: q.pending, link: link})
	q.pending = nil
	return q.ctx, true
}

// Unlink marks the rounds asked over the read link (ctx, or every one
// when ctx is 0) to be asked through raft instead; it reports whether it
// marked any.
func (q *ReadQueue[W]) Unlink(ctx uint64) bool {
	marked := false
	for i := range q.rounds {
		r := &q.rounds[i]
		if r.link && (ctx == 0 || r.ctx == ctx) {
			r.link, r.reissue, marked = false, true, true
		}
	}
	return marked
}

// Reissue returns the contexts of the rounds Unlink marked, unmarking
// them.
func (q *ReadQueue[W]) Reissue() []uint64 {
	var ctxs []uint64
	for i := range q.rounds {
		if r := &q.rounds[i]; r.reissue {
			r.reissue = false
			ctxs = append(ctxs, r.ctx)
		}
	}
	return ctxs
}

// Finish returns the callers that raft's answer to round ctx serves: that
// round's, and any earlier round's still listed. Raft answers rounds in
// the order they were asked, so an earlier one was dropped (no leader
// known at that moment), and an index read after a request was made
// serves that request too. An unknown ctx (an answer after its round
// timed out) serves nobody.
func (q *ReadQueue[W]) Finish(ctx uint64) []W {
	i := 0
	for i < len(q.rounds) && q.rounds[i].ctx != ctx {
		i++
	}
	if i == len(q.rounds) {
		return nil
	}
	var done []W
	for _, r := range q.rounds[:i+1] {
		done = append(done, r.waiters...)
	}
	q.rounds = append(q.rounds[:0], q.rounds[i+1:]...)
	return done
}

// Expire removes the rounds started timeout or longer before now and
// returns their callers.
func (q *ReadQueue[W]) Expire(now time.Time, timeout time.Duration) []W {
	k := 0
	for k < len(q.rounds) && now.Sub(q.rounds[k].started) >= timeout {
		k++
	}
	var failed []W
	for _, r := range q.rounds[:k] {
		failed = append(failed, r.waiters...)
	}
	q.rounds = append(q.rounds[:0], q.rounds[k:]...)
	return failed
}

// Drain removes and returns every caller, pending or in flight.
func (q *ReadQueue[W]) Drain() []W {
	all := q.pending
	for _, r := range q.rounds {
		all = append(all, r.waiters...)
	}
	q.pending, q.rounds = nil, nil
	return all
}
