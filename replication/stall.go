package replication

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"
)

// stallLog warns when the raft loop stops for long enough that followers
// may start an election (or a leader's followers may): the log line says
// what stopped (not scheduled, or persisting the log) and for how long, so
// that a leader change under load can be explained.
type stallLog struct {
	warned time.Time
}

func (s *stallLog) note(n *Node, what string, d time.Duration) {
	limit := n.electionTimeout() / 2
	if d < limit || time.Since(s.warned) < 5*time.Second {
		return
	}
	s.warned = time.Now()
	n.log.Warn(what+"; past half an election timeout peers may elect another leader", "for", d.Round(time.Millisecond), "election_timeout", n.electionTimeout())
}

// watchStalls writes every goroutine's stack into Config.StallDumpDir
// when the raft loop has been in Process (persisting raft's output) for
// over a quarter of an election timeout, at most once a minute: early
// enough to catch the stall while it lasts.
func (n *Node) watchStalls() {
	t := time.NewTicker(n.electionTimeout() / 10)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-t.C:
		case <-n.stopc:
			return
		}
		began := n.processing.Load()
		if began == 0 || time.Since(time.Unix(0, began)) < n.electionTimeout()/4 || time.Since(last) < time.Minute {
			continue
		}
		last = time.Now()
		path := filepath.Join(n.cfg.StallDumpDir, "stall-"+last.UTC().Format("20060102T150405")+".txt")
		if err := dumpGoroutines(path); err != nil {
			n.log.Warn("the raft loop is stalled; writing the goroutine dump failed", "err", err)
			continue
		}
		n.log.Warn("the raft loop is stalled persisting its output; every goroutine's stack is in the file", "file", path,
			"for", time.Since(time.Unix(0, began)).Round(time.Millisecond))
	}
}

// dumpGoroutines writes every goroutine's stack into path.
func dumpGoroutines(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("goroutine").WriteTo(f, 2); err != nil {
		f.Close()
		return fmt.Errorf("goroutine dump: %w", err)
	}
	return f.Close()
}
