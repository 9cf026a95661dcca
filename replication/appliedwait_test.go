package replication

import (
	"slices"
	"testing"
)

// TestAppliedWaitsReleaseOnlyTheReached releases waiters as seqnos are
// applied: only those reached, in seqno order and, for one seqno, in the
// order they came; a removed waiter never.
func TestAppliedWaitsReleaseOnlyTheReached(t *testing.T) {
	var a AppliedWaits[string]
	for _, w := range []struct {
		seqno uint64
		name  string
	}{{5, "5"}, {3, "3a"}, {7, "7"}, {9, "9"}, {3, "3b"}, {6, "gone"}} {
		a.Add(w.seqno, w.name)
	}
	a.Remove("gone")
	for _, step := range []struct {
		applied  uint64
		released []string
		left     int
	}{
		{2, nil, 5},
		{4, []string{"3a", "3b"}, 3},
		{7, []string{"5", "7"}, 1},
		{100, []string{"9"}, 0},
	} {
		var got []string
		a.Release(step.applied, func(w string) { got = append(got, w) })
		if !slices.Equal(got, step.released) {
			t.Fatalf("applied %d: released %v, want %v", step.applied, got, step.released)
		}
		if a.Len() != step.left {
			t.Fatalf("applied %d: %d waiting, want %d", step.applied, a.Len(), step.left)
		}
	}
}
