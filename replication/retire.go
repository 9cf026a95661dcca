package replication

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// Incarnations. A node writes under a random origin id that it replaces
// (rotateOrigin) at every start and whenever it abandons a write-set whose
// outcome it cannot learn, so that write-set, should it still commit, is
// certified against later local transactions like another node's. The
// certification index holds its horizon at the lowest LastSeen of the
// origins in its window, so an old incarnation, which never reports again,
// would hold it there for a whole window (100,000 seqnos): meanwhile the
// index keeps every key written, up to MaxKeys, and a restart or a state
// transfer replays them all. A node therefore retires its earlier
// incarnations: it orders one write-set with writeset.FlagRetire under each
// old origin, after a write-set of the current incarnation was ordered (the
// current one then stands for the node's open transactions, whose lowest
// position it reports). The current origin is kept in the data dir, so the
// incarnation a restart ends is retired too.

// keyOrigin is this node's current origin (its own, not replicated).
var keyOrigin = []byte{storage.SpaceReplication, 'O'}

// retireSeq is the ID.Seq of retirement write-sets: above the ids an
// incarnation gives its transactions and its streams' rollbacks.
const retireSeq = 3 << 62

// initOrigin starts this run's incarnation and schedules the retirement of
// the one the last run left in the data dir.
func (n *Node) initOrigin() {
	if n.eng != nil {
		if v, ok, err := get(n.eng.DB(), keyOrigin); err == nil && ok && len(v) == 8 {
			n.origin.Store(binary.BigEndian.Uint64(v))
		}
	}
	n.rotateOrigin()
}

// rotateOrigin starts a new incarnation: write-sets from earlier ones count
// as another node's, so an abandoned commit can never escape certification.
// The old one is retired later (RetireOrigins).
func (n *Node) rotateOrigin() {
	var b [8]byte
	_, _ = crand.Read(b[:])
	origin := binary.LittleEndian.Uint64(b[:]) | 1
	n.mu.Lock()
	if old := n.origin.Load(); old != 0 {
		n.retiring = append(n.retiring, old)
	}
	n.origin.Store(origin)
	n.originOrdered.Store(false)
	n.mu.Unlock()
	if n.eng != nil {
		if err := n.eng.DB().Set(keyOrigin, binary.BigEndian.AppendUint64(nil, origin), pebble.Sync); err != nil {
			n.log.Warn("cannot record this node's origin; a restart will not retire it", "err", err)
		}
	}
}

// noteOrdered records that a write-set of origin reached the log.
func (n *Node) noteOrdered(origin uint64) {
	if origin == n.origin.Load() && !n.originOrdered.Load() {
		n.originOrdered.Store(true)
	}
}

// RetireOrigins orders the retirement of this node's earlier incarnations,
// once the current one has a write-set in the log. The node calls it
// periodically; it costs nothing when there is nothing to retire.
func (n *Node) RetireOrigins(ctx context.Context) error {
	if !n.originOrdered.Load() {
		return nil
	}
	n.mu.Lock()
	olds := slices.Clone(n.retiring)
	n.mu.Unlock()
	for _, old := range olds {
		ws := &writeset.WriteSet{ID: writeset.ID{Origin: old, Seq: retireSeq | uint64(time.Now().UnixNano())&(1<<62-1)}, Flags: writeset.FlagRetire}
		if _, err := n.Replicate(ctx, ws); err != nil {
			return err
		}
		n.mu.Lock()
		n.retiring = slices.DeleteFunc(n.retiring, func(o uint64) bool { return o == old })
		n.mu.Unlock()
		n.log.Debug("retired an earlier incarnation of this node", "origin", old)
	}
	return nil
}
