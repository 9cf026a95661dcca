package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// WaitQuiet waits until the machine's CPUs were at least 80% idle over
// one second, or for at most max. Both systems of a side-by-side run share
// the machine: after a write-heavy run a database keeps working in the
// background (InnoDB purge and flushing, pebble compactions), and the
// next run, of the other system, would pay for it. It returns how long it
// waited.
func WaitQuiet(max time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < max {
		idle0, total0, err := cpuTimes()
		if err != nil {
			return time.Since(start)
		}
		time.Sleep(time.Second)
		idle1, total1, err := cpuTimes()
		if err != nil || total1 == total0 || float64(idle1-idle0)/float64(total1-total0) >= 0.8 {
			return time.Since(start)
		}
	}
	return time.Since(start)
}

// cpuTimes reads the idle (idle + iowait) and total jiffies of all CPUs
// from /proc/stat.
func cpuTimes() (idle, total uint64, err error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return 0, 0, fmt.Errorf("/proc/stat: empty")
	}
	fields := strings.Fields(s.Text())
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", s.Text())
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return idle, total, nil
}
