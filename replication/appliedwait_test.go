package replication

import "testing"

func TestAppliedWaitsWakeOnlyTheReached(t *testing.T) {
	var a appliedWaits
	chs := map[uint64]chan struct{}{}
	for _, s := range []uint64{5, 3, 7, 9} {
		chs[s] = a.add(s)
	}
	twin := a.add(3) // a second wait for the same seqno
	gone := a.add(6)
	a.remove(gone)
	closed := func(ch chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	for _, step := range []struct {
		applied uint64
		woken   []uint64
		waiting []uint64
		listed  int
	}{
		{2, nil, []uint64{3, 5, 7, 9}, 5},
		{4, []uint64{3}, []uint64{5, 7, 9}, 3},
		{7, []uint64{3, 5, 7}, []uint64{9}, 1},
		{100, []uint64{3, 5, 7, 9}, nil, 0},
	} {
		a.release(step.applied)
		for _, s := range step.woken {
			if !closed(chs[s]) {
				t.Fatalf("applied %d: the wait for %d was not woken", step.applied, s)
			}
		}
		for _, s := range step.waiting {
			if closed(chs[s]) {
				t.Fatalf("applied %d: the wait for %d was woken", step.applied, s)
			}
		}
		if closed(twin) != (step.applied >= 3) {
			t.Fatalf("applied %d: the second wait for 3 woken: %v", step.applied, closed(twin))
		}
		if len(a.w) != step.listed {
			t.Fatalf("applied %d: %d waits listed, want %d", step.applied, len(a.w), step.listed)
		}
	}
	if closed(gone) {
		t.Fatal("a removed wait was woken")
	}
}
