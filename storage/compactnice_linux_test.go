package storage

import (
	"runtime"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/sys/unix"

	"github.com/certusdb/certus/internal/lowprio"
)

// A compaction runs at the configured nice value from CompactionBegin to
// CompactionEnd on its goroutine's thread, unless its L0 tables overlap
// urgentL0Depth deep: then L0 is deep, and it keeps normal priority. Many
// L0 tables side by side are not deep.
func TestCompactionNice(t *testing.T) {
	if unix.Geteuid() != 0 {
		t.Skip("restoring a thread's priority needs root")
	}
	// n tables of L0 that all contain key "m" (stacked), or n side by side
	l0 := func(n int, stacked bool) []pebble.LevelInfo {
		tables := make([]pebble.TableInfo, n)
		for i := range tables {
			lo, hi := []byte{'a' + byte(i)}, []byte{'a' + byte(i), 'z'}
			if stacked {
				lo, hi = []byte("m"), []byte("m")
			}
			tables[i].Smallest.UserKey, tables[i].Largest.UserKey = lo, hi
		}
		return []pebble.LevelInfo{{Level: 0, Tables: tables}, {Level: 6, Tables: make([]pebble.TableInfo, 3)}}
	}
	for _, tc := range []struct {
		name   string
		input  []pebble.LevelInfo
		lowers bool
	}{
		{"L0 to the base level", l0(4, true), true},
		{"below L0", []pebble.LevelInfo{{Level: 5}, {Level: 6}}, true},
		{"deep L0", l0(urgentL0Depth, true), false},
		{"wide L0", l0(3*urgentL0Depth, false), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &compactionNice{nice: 10, restore: map[int]func() bool{}}
			l := c.listener()
			done := make(chan [3]int)
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				before := lowprio.ThreadNice()
				l.CompactionBegin(pebble.CompactionInfo{JobID: 7, Input: tc.input})
				during := lowprio.ThreadNice()
				l.CompactionEnd(pebble.CompactionInfo{JobID: 7, Input: tc.input, Done: true})
				done <- [3]int{before, during, lowprio.ThreadNice()}
			}()
			n := <-done
			want := n[0]
			if tc.lowers {
				want = 10
			}
			if n[1] != want || n[2] != n[0] {
				t.Fatalf("nice before %d, during %d (want %d), after %d (want %d)", n[0], n[1], want, n[2], n[0])
			}
			if len(c.restore) != 0 {
				t.Fatalf("%d compactions left lowered", len(c.restore))
			}
		})
	}
}
