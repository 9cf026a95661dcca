package storage

import (
	"bytes"
	"slices"
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
// A compaction that falls behind must not stop writes: one whose L0
// input tables overlap urgentL0Depth deep or more at some key (L0 is deep
// there: flushes are piling up, and reads go through every one of them)
// runs at normal priority, as do flushes, which writes wait for. The
// number of L0 tables says little: each flush splits into a table per key
// space (rows, raft log, stored fragments), so a compaction of a few
// shallow flushes took 8–16 tables, kept normal priority, and after a
// big transaction's commit it rewrote the ingested rows on every node at
// once at the sessions' priority.

// urgentL0Depth is the depth of overlapping L0 input tables from which a
// compaction runs at normal priority (the engine stops writes at 32 L0
// sublevels).
const urgentL0Depth = 8

// l0Depth is the largest number of tables that contain one key.
func l0Depth(tables []pebble.TableInfo) int {
	type edge struct {
		key []byte
		end bool // the table's largest key: it leaves after the key
	}
	edges := make([]edge, 0, 2*len(tables))
	for _, t := range tables {
		edges = append(edges, edge{t.Smallest.UserKey, false}, edge{t.Largest.UserKey, true})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := bytes.Compare(a.key, b.key); c != 0 {
			return c
		}
		switch {
		case a.end == b.end:
			return 0
		case b.end:
			return -1 // tables starting at a key contain it with those ending there
		}
		return 1
	})
	depth, most := 0, 0
	for _, e := range edges {
		if e.end {
			depth--
		} else {
			depth++
			most = max(most, depth)
		}
	}
	return most
}

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
		if in.Level == 0 && l0Depth(in.Tables) >= urgentL0Depth {
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
