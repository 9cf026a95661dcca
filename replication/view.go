package replication

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"

	"github.com/certusdb/certus/storage"
)

// Views. Galera's wsrep_cluster_size counts the members of the primary
// component's current view: a member that stops answering leaves the view
// after a few seconds, so the size is what monitoring watches to see a
// node go down. The raft configuration (the voters) keeps such a member
// until it is removed, so the leader orders views itself: every heartbeat
// interval it takes the voters it heard from within
// CoreConfig.ViewTimeoutTicks (ViewTimeout on a Node; raft's RecentActive,
// which a reply to anything sets) and, when that set differs from the last
// view, proposes the new one; a member that answers again is back in the
// next view at once. A view is an entry of its own in the log, applied in
// order on every node like Galera's view change: each node reports the
// same view at the same seqno, and every view bumps wsrep_cluster_conf_id.
// It changes no data and never holds up a write-set.

// viewMagic starts an encoded view (write-sets start with "CWS1").
var viewMagic = [4]byte{'C', 'V', 'W', '1'}

// keyView stores the last applied view (replicated state).
var keyView = []byte{storage.SpaceReplication, 'V'}

// ViewTimeout is how long a voter of a running node (Node) may stay silent
// before it leaves the view: Galera's evs.suspect_timeout, long enough
// that a busy member's late replies do not make the view flap.
const ViewTimeout = 5 * time.Second

// encodeView encodes a view: magic, count, member ids, CRC-32C.
func encodeView(ids []uint64) []byte {
	b := append([]byte(nil), viewMagic[:]...)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, id)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// decodeView parses an encoded view; isView is false when data is not
// one, ok false when it is one but damaged.
func decodeView(data []byte) (ids []uint64, isView, ok bool) {
	if len(data) < 4 || [4]byte(data[:4]) != viewMagic {
		return nil, false, false
	}
	if len(data) < 9 || crc32.Checksum(data[:len(data)-4], crcTable) != binary.BigEndian.Uint32(data[len(data)-4:]) {
		return nil, true, false
	}
	body := data[4 : len(data)-4]
	n, k := binary.Uvarint(body)
	if k <= 0 || (len(body)-k)%8 != 0 || n != uint64(len(body)-k)/8 { // not 8*n, which wraps
		return nil, true, false
	}
	body = body[k:]
	for i := uint64(0); i < n; i++ {
		ids = append(ids, binary.BigEndian.Uint64(body[8*i:]))
	}
	return ids, true, true
}

// watchView, on the leader, proposes a new view when the voters it heard
// from recently differ from the last view (see Views). It runs on the
// raft loop, from Tick.
func (c *Core) watchView() {
	if c.raftState != raft.StateLeader || c.cfg.Arbitrator {
		// an arbitrator hands leadership over at once and keeps no view
		c.viewHeard = nil
		return
	}
	if c.ticks%uint64(c.cfg.HeartbeatTicks) != 0 {
		return
	}
	c.mu.Lock()
	last := c.view
	c.mu.Unlock()
	if c.viewHeard == nil {
		c.viewHeard = map[uint64]uint64{}
		c.viewProposed = 0
	}
	// viewHeard holds the tick + 1 (0: never): a new leader counts the
	// members of the last view (every voter before the first view) as
	// heard when it took over, so a view changes only by what happens
	// from then on
	c.raw.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if _, known := c.viewHeard[id]; pr.RecentActive || (!known && (last == nil || slices.Contains(last, id))) {
			c.viewHeard[id] = c.ticks + 1
		}
	})
	silent := uint64(c.cfg.ViewTimeoutTicks)
	var view []uint64
	for _, id := range c.logs.ConfState().GetVoters() {
		if h := c.viewHeard[id]; id == c.cfg.Self.ID || (h != 0 && c.ticks+1-h <= silent) {
			view = append(view, id)
		}
	}
	slices.Sort(view)
	same := slices.Equal(view, last)
	if same || (c.viewProposed != 0 && c.ticks-c.viewProposed < uint64(c.cfg.ElectionTicks)) {
		return // unchanged, or a proposal is still on its way
	}
	if c.Propose(encodeView(view)) == nil {
		c.viewProposed = c.ticks
	}
}

// applyView applies a view entry (see Views).
func (c *Core) applyView(idx uint64, ids []uint64, data []byte) error {
	c.cert.Skip(idx)
	c.mu.Lock()
	c.view = ids
	c.confID++
	confID := c.confID
	c.mu.Unlock()
	return c.eng.MarkApplied(idx, []storage.KV{c.horizonKV(), {Key: keyView, Value: data},
		{Key: keyConfID, Value: binary.BigEndian.AppendUint64(nil, confID)}})
}

// loadView reads the last applied view.
func (c *Core) loadView() error {
	v, ok, err := get(c.eng.DB(), keyView)
	if err != nil || !ok {
		return err
	}
	ids, _, valid := decodeView(v)
	if !valid {
		c.log.Warn("ignoring a damaged stored view; the leader orders a new one")
		return nil
	}
	c.mu.Lock()
	c.view = ids
	c.mu.Unlock()
	return nil
}
