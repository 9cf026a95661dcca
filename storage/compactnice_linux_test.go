package storage

import (
	"runtime"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/sys/unix"
)

// threadNice is the calling thread's nice value (the raw getpriority
// system call returns 20 - nice).
func threadNice(t *testing.T) int {
	p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	return 20 - p
}

// A compaction runs at the configured nice value from CompactionBegin to
// CompactionEnd on its goroutine's thread, unless it takes urgentL0Tables
// or more L0 tables: then L0 is deep, and it keeps normal priority.
func TestCompactionNice(t *testing.T) {
	if unix.Geteuid() != 0 {
		t.Skip("restoring a thread's priority needs root")
	}
	l0 := func(n int) []pebble.LevelInfo {
		return []pebble.LevelInfo{{Level: 0, Tables: make([]pebble.TableInfo, n)}, {Level: 6, Tables: make([]pebble.TableInfo, 3)}}
	}
	for _, tc := range []struct {
		name   string
		input  []pebble.LevelInfo
		lowers bool
	}{
		{"L0 to the base level", l0(4), true},
		{"below L0", []pebble.LevelInfo{{Level: 5}, {Level: 6}}, true},
		{"deep L0", l0(urgentL0Tables), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &compactionNice{nice: 10, restore: map[int]func() bool{}}
			l := c.listener()
			done := make(chan [3]int)
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				before := threadNice(t)
				l.CompactionBegin(pebble.CompactionInfo{JobID: 7, Input: tc.input})
				during := threadNice(t)
				l.CompactionEnd(pebble.CompactionInfo{JobID: 7, Input: tc.input, Done: true})
				done <- [3]int{before, during, threadNice(t)}
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
