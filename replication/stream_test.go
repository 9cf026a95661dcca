package replication

import (
	"slices"
	"testing"
	"time"
)

// TestOrphans: a member's streams are orphaned once it was inactive for
// longer than the timeout without a break; coming back, or the node having
// no open streams, starts its time again.
func TestOrphans(t *testing.T) {
	o := Orphans{Timeout: 15 * time.Second}
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	steps := []struct {
		at       int
		open     bool
		inactive []uint64
		want     []uint64
	}{
		{0, true, []uint64{3, 2}, nil},
		{10, true, []uint64{2, 3}, nil},
		{15, true, []uint64{3, 2}, nil}, // exactly the timeout: not yet
		{16, true, []uint64{3, 2}, []uint64{2, 3}},
		{17, true, []uint64{3}, []uint64{3}}, // 2 answered again
		{18, true, []uint64{2, 3}, []uint64{3}},
		{19, false, []uint64{2, 3}, nil}, // no open streams: nothing is counted
		{20, true, []uint64{3}, nil},
		{36, true, []uint64{3}, []uint64{3}},
	}
	for _, s := range steps {
		if got := o.Check(at(s.at), s.open, s.inactive); !slices.Equal(got, s.want) {
			t.Fatalf("at %ds, inactive %v: orphans %v, want %v", s.at, s.inactive, got, s.want)
		}
	}
}
