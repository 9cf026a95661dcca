package replication

import (
	"slices"
	"sync"
)

// appliedWaits are the callers of WaitApplied, each woken once the seqno
// it waits for is applied. A broadcast at every applied batch woke every
// waiting session each time, most of them to wait again: a causal read
// some entries behind woke once per entry.
type appliedWaits struct {
	mu sync.Mutex
	w  []appliedWait // by seqno
}

type appliedWait struct {
	seqno uint64
	ch    chan struct{}
}

// add registers a wait for seqno and returns the channel closed when it
// is applied.
func (a *appliedWaits) add(seqno uint64) chan struct{} {
	ch := make(chan struct{})
	a.mu.Lock()
	i, _ := slices.BinarySearchFunc(a.w, seqno, func(w appliedWait, s uint64) int {
		switch {
		case w.seqno < s:
			return -1
		case w.seqno > s:
			return 1
		}
		return 0
	})
	a.w = slices.Insert(a.w, i, appliedWait{seqno, ch})
	a.mu.Unlock()
	return ch
}

// remove drops the wait of ch (its caller gave up).
func (a *appliedWaits) remove(ch chan struct{}) {
	a.mu.Lock()
	a.w = slices.DeleteFunc(a.w, func(w appliedWait) bool { return w.ch == ch })
	a.mu.Unlock()
}

// release wakes the waits for seqnos up to applied.
func (a *appliedWaits) release(applied uint64) {
	a.mu.Lock()
	k := 0
	for k < len(a.w) && a.w[k].seqno <= applied {
		close(a.w[k].ch)
		k++
	}
	if k > 0 {
		a.w = slices.Delete(a.w, 0, k)
	}
	a.mu.Unlock()
}
