package lowprio

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Run gives fn a thread of the given nice value and one more scheduler
// slot while any call runs; the caller's thread and GOMAXPROCS are as
// before afterwards.
func TestRun(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	before := ThreadNice()
	errBoom := errors.New("boom")
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make([]int, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := Run(before+5, func() error {
				<-start
				results[i] = ThreadNice()
				if got := runtime.GOMAXPROCS(0); got != procs+1 {
					t.Errorf("GOMAXPROCS %d during Run, want %d", got, procs+1)
				}
				return errBoom
			})
			if err != errBoom {
				t.Errorf("Run returned %v, want fn's error", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	for i, n := range results {
		if n != before+5 {
			t.Errorf("call %d ran at nice %d, want %d", i, n, before+5)
		}
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after Run, want %d", got, procs)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if n := ThreadNice(); n != before {
		t.Errorf("a thread outside Run is at nice %d, want %d", n, before)
	}
}

// Lower lowers the calling goroutine's thread and adds a scheduler slot
// until restore; restore gives both back (as root, which may raise a
// thread's priority again) and is safe to call twice.
func TestLower(t *testing.T) {
	if unix.Geteuid() != 0 {
		t.Skip("restoring a thread's priority needs root")
	}
	procs := runtime.GOMAXPROCS(0)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := ThreadNice()
	restore := Lower(before + 4)
	if n := ThreadNice(); n != before+4 {
		t.Fatalf("nice %d after Lower, want %d", n, before+4)
	}
	if got := runtime.GOMAXPROCS(0); got != procs+1 {
		t.Fatalf("GOMAXPROCS %d while lowered, want %d", got, procs+1)
	}
	if !restore() || !restore() {
		t.Fatal("restore reported false as root")
	}
	if n := ThreadNice(); n != before {
		t.Fatalf("nice %d after restore, want %d", n, before)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Fatalf("GOMAXPROCS %d after restore, want %d", got, procs)
	}
}
