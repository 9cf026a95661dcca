package lowprio

import "golang.org/x/sys/unix"

// setNice sets the calling thread's nice value (Linux schedules threads,
// so PRIO_PROCESS with a thread id changes that thread only).
func setNice(n int) {
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), n)
}
