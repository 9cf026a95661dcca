package lowprio

import "golang.org/x/sys/unix"

// setNice sets the calling thread's nice value (Linux schedules threads,
// so PRIO_PROCESS with a thread id changes that thread only).
func setNice(n int) error {
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), n)
}

// thread returns the calling thread's id and nice value (the system call
// returns 20 - nice).
func thread() (tid, nice int) {
	tid = unix.Gettid()
	p, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		return tid, 0
	}
	return tid, 20 - p
}
