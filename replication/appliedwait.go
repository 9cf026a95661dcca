package replication

import (
	"slices"
	"sync"
)

// AppliedWaits holds waiters for seqnos, each released once its seqno is
// applied, in seqno order and, for one seqno, in the order they came.
// replication.Node keeps WaitApplied's callers here (a channel each); the
// simulator its causal reads that know their index. A broadcast at every
// applied batch woke every waiting session each time, most of them to
// wait again: a causal read some entries behind woke once per entry.
type AppliedWaits[W comparable] struct {
	mu sync.Mutex
	w  []appliedWait[W] // by seqno
}

type appliedWait[W comparable] struct {
	seqno  uint64
	waiter W
}

// Add registers waiter to be released once seqno is applied.
func (a *AppliedWaits[W]) Add(seqno uint64, waiter W) {
	a.mu.Lock()
	i, _ := slices.BinarySearchFunc(a.w, seqno, func(w appliedWait[W], s uint64) int {
		if w.seqno <= s {
			return -1 // after the waits for seqno that came before
		}
		return 1
	})
	a.w = slices.Insert(a.w, i, appliedWait[W]{seqno, waiter})
	a.mu.Unlock()
}

// Remove drops waiter (it gave up).
func (a *AppliedWaits[W]) Remove(waiter W) {
	a.mu.Lock()
	a.w = slices.DeleteFunc(a.w, func(w appliedWait[W]) bool { return w.waiter == waiter })
	a.mu.Unlock()
}

// Release calls release, outside the lock, for each waiter of a seqno up
// to applied, and forgets them.
func (a *AppliedWaits[W]) Release(applied uint64, release func(W)) {
	a.mu.Lock()
	k := 0
	for k < len(a.w) && a.w[k].seqno <= applied {
		k++
	}
	if k == 0 {
		a.mu.Unlock()
		return
	}
	done := slices.Clone(a.w[:k])
	a.w = slices.Delete(a.w, 0, k)
	a.mu.Unlock()
	for _, w := range done {
		release(w.waiter)
	}
}

// Len is the number of waiters.
func (a *AppliedWaits[W]) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.w)
}
