package storage

import (
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/certusdb/certus/internal/lowprio"
)

// Compactions at a lower CPU priority. Pebble compacts in goroutines of
// its own, and on a busy node each compaction of a small database
// rewrites most of it (L0 flushes span every table, so an L0 compaction
// overlaps all of the bottom level): every few seconds, on every node at
// about the same moment, a goroutine took a full share of the CPU from the
// sessions, and their throughput fell by half for that second. A
// compaction's goroutine runs it from CompactionBegin to CompactionEnd, so
// the listener lowers that goroutine's thread for the compaction's length.
//
// A compaction that falls behind must not stop writes: one that takes
// urgentL0Tables or more L0 tables (L0 is deep: flushes are piling up)
// runs at normal priority, as do flushes, which writes wait for.

// urgentL0Tables is the number of L0 input tables from which a compaction
// runs at normal priority (the engine stops writes at 32 L0 sublevels).
const urgentL0Tables = 8

// compactionNice lowers compactions' goroutines to a nice value.
type compactionNice struct {
	nice    int
	mu      sync.Mutex
	restore map[int]func() bool // by compaction job
}

// listener returns the event listener that applies c.
func (c *compactionNice) listener() pebble.EventListener {
	return pebble.EventListener{
		CompactionBegin: c.begin,
		CompactionEnd:   c.end,
	}
}

func (c *compactionNice) begin(info pebble.CompactionInfo) {
	for _, in := range info.Input {
		if in.Level == 0 && len(in.Tables) >= urgentL0Tables {
			return
		}
	}
	restore := lowprio.Lower(c.nice)
	c.mu.Lock()
	c.restore[info.JobID] = restore
	c.mu.Unlock()
}

func (c *compactionNice) end(info pebble.CompactionInfo) {
	c.mu.Lock()
	restore := c.restore[info.JobID]
	delete(c.restore, info.JobID)
	c.mu.Unlock()
	if restore != nil {
		// Without the right to raise the priority again, the thread
		// stays lowered and ends with the compaction's goroutine.
		restore()
	}
}
