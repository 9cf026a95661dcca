// Package lowprio runs background work (a state transfer's stream) at a
// lower CPU priority than the goroutines serving clients.
//
// Go schedules every goroutine of a process alike, so a busy background
// goroutine takes its full share of the process's CPU from the clients'
// goroutines. Run gives the work its own OS thread with a raised nice value
// and the process one more scheduler slot while it runs: the kernel then
// gives that thread less CPU than any client's thread when the machine is
// busy, and the clients keep their slots.
package lowprio

import (
	"runtime"
	"sync"
)

var (
	mu      sync.Mutex
	running int // calls of Run in progress
)

// Run calls fn on a thread of its own with the given nice value (1..19;
// higher is lower priority) and returns its error. The thread ends with fn,
// so its priority never passes to other goroutines.
func Run(nice int, fn func() error) error {
	mu.Lock()
	if running == 0 {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	}
	running++
	mu.Unlock()
	defer func() {
		mu.Lock()
		running--
		if running == 0 {
			runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) - 1)
		}
		mu.Unlock()
	}()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		setNice(nice)
		done <- fn()
	}()
	return <-done
}
