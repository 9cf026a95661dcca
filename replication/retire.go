package replication

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// Incarnations. A node writes under a random origin id that it replaces
// at every start and whenever it gives up on a write-set whose outcome it
// cannot learn (Proposals), so that write-set, should it still commit, is
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

// lastOrigin is the origin the node's last run left in eng (0: none).
func lastOrigin(eng *storage.Engine) uint64 {
	if v, ok, err := get(eng.DB(), keyOrigin); err == nil && ok && len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// randomOrigin returns a new origin id.
func randomOrigin() uint64 {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1
}

// saveOrigin records the node's current origin in the data dir, so the
// incarnation a restart ends is retired too. It writes the current one,
// not the one it was told of: two rotations racing leave the newest.
func (n *Node) saveOrigin(uint64) {
	n.originMu.Lock()
	defer n.originMu.Unlock()
	if err := n.eng.DB().Set(keyOrigin, binary.BigEndian.AppendUint64(nil, n.rep.Origin()), pebble.Sync); err != nil {
		n.log.Warn("cannot record this node's origin; a restart will not retire it", "err", err)
	}
}

// RetireOrigins orders the retirement of this node's earlier incarnations,
// once the current one has a write-set in the log (Proposals.Retiring).
// The node calls it periodically; it costs nothing when there is nothing
// to retire.
func (n *Node) RetireOrigins(ctx context.Context) error {
	for _, old := range n.rep.Retiring() {
		if _, err := n.Replicate(ctx, Retirement(old, uint64(time.Now().UnixNano()))); err != nil {
			return err
		}
		n.rep.Retired(old)
		n.log.Debug("retired an earlier incarnation of this node", "origin", old)
	}
	return nil
}

// Retirement returns the write-set that retires origin; k tells apart the
// retirements of one origin (a node uses its clock).
func Retirement(origin, k uint64) *writeset.WriteSet {
	return &writeset.WriteSet{ID: writeset.ID{Origin: origin, Seq: retireSeq | k&(1<<62-1)}, Flags: writeset.FlagRetire}
}
