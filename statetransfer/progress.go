package statetransfer

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Progress tracks one side of the transfer in flight (or the last one).
type Progress struct {
	mu      sync.Mutex
	log     *slog.Logger
	role    string
	peer    string
	seqno   uint64
	done    uint64
	total   uint64
	resumed uint64 // bytes already there when this attempt started
	started time.Time
	ended   time.Time // when it stopped (zero while active)
	active  bool
	lastLog time.Time
}

// ProgressInfo is a snapshot of a Progress, as /status shows it.
type ProgressInfo struct {
	Active bool   `json:"active"`
	Role   string `json:"role,omitempty"`
	Peer   string `json:"peer,omitempty"`
	Seqno  uint64 `json:"seqno,omitempty"`
	// Bytes and Total count the pairs' key and value bytes.
	Bytes   uint64  `json:"bytes"`
	Total   uint64  `json:"total"`
	Resumed uint64  `json:"resumed_bytes,omitempty"`
	Percent float64 `json:"percent"`
	// Rate is bytes per second over this attempt.
	Rate       float64 `json:"rate_bytes_per_sec"`
	ETASeconds float64 `json:"eta_seconds"`
}

func (p *Progress) start(log *slog.Logger, role, peer string, seqno, done, total uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log, p.role, p.peer, p.seqno = log, role, peer, seqno
	p.done, p.total, p.resumed = done, total, done
	p.started, p.lastLog, p.active, p.ended = time.Now(), time.Now(), true, time.Time{}
}

func (p *Progress) add(n uint64) {
	p.mu.Lock()
	p.done += n
	logNow := time.Since(p.lastLog) >= 2*time.Second
	if logNow {
		p.lastLog = time.Now()
	}
	p.mu.Unlock()
	if logNow {
		i := p.Info()
		p.log.Info("state transfer progress", "role", i.Role, "peer", i.Peer, "seqno", i.Seqno,
			"bytes", i.Bytes, "total", i.Total, "percent", fmt.Sprintf("%.1f", i.Percent),
			"rate_mb_s", fmt.Sprintf("%.1f", i.Rate/1e6), "eta", time.Duration(i.ETASeconds*float64(time.Second)).Round(time.Second))
	}
}

// setTotal replaces the (estimated) total with the exact one.
func (p *Progress) setTotal(total uint64) {
	p.mu.Lock()
	p.total = total
	p.mu.Unlock()
}

func (p *Progress) stop() {
	p.mu.Lock()
	p.active, p.ended = false, time.Now()
	p.mu.Unlock()
}

// Info returns the current progress.
func (p *Progress) Info() ProgressInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := ProgressInfo{Active: p.active, Role: p.role, Peer: p.peer, Seqno: p.seqno, Bytes: p.done, Total: p.total, Resumed: p.resumed}
	if p.total > 0 {
		i.Percent = 100 * float64(min(p.done, p.total)) / float64(p.total)
		if p.active {
			i.Percent = min(i.Percent, 99) // the total may be an estimate
		}
	}
	end := p.ended
	if p.active || end.IsZero() {
		end = time.Now()
	}
	if el := end.Sub(p.started).Seconds(); el > 0 && p.done > p.resumed {
		i.Rate = float64(p.done-p.resumed) / el
		if p.total > p.done {
			i.ETASeconds = float64(p.total-p.done) / i.Rate
		}
	}
	return i
}

// Comment is the progress as wsrep_local_state_comment shows it while a
// joiner receives state, e.g. "Joining: receiving state transfer 42.0%
// (35.1 MB/s, ETA 12s)".
func (i ProgressInfo) Comment() string {
	return fmt.Sprintf("Joining: receiving state transfer %.1f%% (%.1f MB/s, ETA %s)",
		i.Percent, i.Rate/1e6, time.Duration(i.ETASeconds*float64(time.Second)).Round(time.Second))
}
