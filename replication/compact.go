package replication

import (
	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// compactEvery is how many applied entries pass between compaction checks.
const compactEvery = 256

// Holds on compaction beyond LogRetentionBytes, for followers that still
// need entries. A lagging follower is worth up to 4 times the retention
// (it then catches up from the log instead of by a state transfer); one
// that was sent a snapshot within transferHoldTicks is worth up to
// transferHoldBytes (at least), so that it can continue from the log after
// its transfer instead of needing another one: a joiner that never syncs
// is what this prevents.
const (
	transferHoldBytes = 1 << 30
	transferHoldTicks = 30 * 60 * 20 // 30 minutes of 50 ms ticks
)

// maybeCompact bounds the raft log and the certification records. The log
// keeps the newest LogRetentionBytes of entries (Galera's gcache): a
// follower that needs older ones gets a state transfer. The leader keeps
// more for followers that still need it (see transferHoldBytes).
// Certification records are kept for the certification window only.
func (c *Core) maybeCompact() error {
	applied := c.eng.Applied()
	retain := c.cfg.LogRetentionBytes
	due := applied >= c.compactedAt+compactEvery ||
		(applied >= c.compactedAt+compactEvery/16 && c.logs.Bytes() > 2*retain)
	if !due {
		return nil
	}
	c.compactedAt = applied
	point := min(c.logs.RetentionPoint(retain), applied)
	first, _ := c.logs.FirstIndex()
	if c.raftState == raft.StateLeader {
		point = min(point, c.holdForFollowers(first, retain))
	}
	if point >= first {
		if err := c.logs.Compact(point); err != nil {
			return err
		}
		c.stats.Compactions.Add(1)
	}
	if w := c.cfg.Cert.Window; applied > w && applied-w+1 > c.certPrunedTo+compactEvery {
		floor := applied - w + 1
		b := c.eng.DB().NewBatch()
		defer b.Close()
		if err := pruneCertRecords(b, floor); err != nil {
			return err
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
		c.certPrunedTo = floor
	}
	return nil
}

// holdForFollowers returns the highest index the leader may compact to
// and still serve the entries its followers need (within the holds).
func (c *Core) holdForFollowers(first, retain uint64) uint64 {
	point := uint64(1<<64 - 1)
	for id, pr := range c.raw.Status().Progress {
		if id == c.cfg.Self.ID {
			continue
		}
		need := pr.Next - 1 // the follower needs the entries after it
		if pr.State == tracker.StateSnapshot {
			need = pr.PendingSnapshot
		}
		if need+1 < first {
			continue // compacted already: it needs a state transfer anyway
		}
		limit := 4 * retain
		if sent, ok := c.snapSent[id]; ok {
			caughtUp := pr.Match >= sent.index && c.logs.BytesAfter(pr.Match) <= retain
			if caughtUp || c.ticks-sent.tick > transferHoldTicks {
				delete(c.snapSent, id) // caught up, or given up on
			} else {
				limit = max(limit, transferHoldBytes)
			}
		}
		if c.logs.BytesAfter(need) <= limit {
			point = min(point, need)
		}
	}
	return point
}
