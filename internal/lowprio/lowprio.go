// Package lowprio runs work that should yield to the clients (a state
// transfer's stream, a huge transaction) at a lower CPU priority than the
// goroutines serving them.
//
// Go schedules every goroutine of a process alike, so a busy background
// goroutine takes its full share of the process's CPU from the clients'
// goroutines. Run and Lower give the work an OS thread of its own with a
// raised nice value and the process one more scheduler slot while it runs:
// the kernel then gives that thread less CPU than any client's thread when
// the machine is busy, and the clients keep their slots.
package lowprio

import (
	"runtime"
	"sync"
)

var (
	mu      sync.Mutex
	running int // calls of Run and lowered goroutines
)

// Run calls fn on a thread of its own with the given nice value (1..19;
// higher is lower priority) and returns its error. The thread ends with fn,
// so its priority never passes to other goroutines.
func Run(nice int, fn func() error) error {
	addSlot()
	defer removeSlot()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		_ = setNice(nice)
		done <- fn()
	}()
	return <-done
}

// Lower lowers the calling goroutine's CPU priority: it locks the goroutine
// to its thread and gives the thread the nice value (1..19) until the
// returned restore is called, from the same goroutine. Restoring needs the
// right to raise a thread's priority again (root, CAP_SYS_NICE or
// RLIMIT_NICE); without it, or when called from another goroutine, restore
// reports false and the goroutine stays on its thread, at the lower
// priority, until it exits.
func Lower(nice int) (restore func() bool) {
	runtime.LockOSThread()
	tid, before := thread()
	if err := setNice(nice); err != nil {
		runtime.UnlockOSThread()
		return func() bool { return true }
	}
	addSlot()
	done := false
	return func() bool {
		if done {
			return true
		}
		done = true
		removeSlot()
		if now, _ := thread(); now != tid || setNice(before) != nil {
			return false
		}
		runtime.UnlockOSThread()
		return true
	}
}

// ThreadNice is the calling thread's nice value (0 where thread priorities
// are not supported). A goroutine reads its own thread's only while it is
// locked to it (runtime.LockOSThread, or inside Run or Lower).
func ThreadNice() int {
	_, nice := thread()
	return nice
}

// addSlot gives the process one more scheduler slot for a thread of lower
// priority, so that while the kernel holds it back it does not keep one
// of the slots the clients' goroutines run in.
func addSlot() {
	mu.Lock()
	if running == 0 {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	}
	running++
	mu.Unlock()
}

// removeSlot undoes addSlot.
func removeSlot() {
	mu.Lock()
	running--
	if running == 0 {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) - 1)
	}
	mu.Unlock()
}
