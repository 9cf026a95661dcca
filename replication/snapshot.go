package replication

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/certusdb/certus/statetransfer"
	"github.com/certusdb/certus/storage"
)

// Snapshots. Certus never ships its state inside raft: when the leader
// must send a follower entries it has compacted, raft sends a snapshot
// whose metadata is the leader's applied position and whose data says
// where to fetch a state at or after it (snapshotData). The follower then
// runs a state transfer (package statetransfer) from one of those donors,
// in its raft loop, and installs the result before raft goes on. The state
// it gets may be newer than the snapshot's index; raft then re-sends the
// entries in between, which the follower skips (see applyEntries).

// StateInstaller receives state transfers (statetransfer.Joiner).
type StateInstaller interface {
	// Pending returns the plan of a transfer interrupted by a stop.
	Pending() (statetransfer.Plan, bool, error)
	// Run transfers a state per plan; finalize adds the caller's writes
	// to the batch that completes it.
	Run(ctx context.Context, plan statetransfer.Plan, finalize func(b *pebble.Batch, m statetransfer.Meta) error) (statetransfer.Meta, error)
}

// snapshotData is the data of a raft snapshot.
type snapshotData struct {
	ClusterUUID string `json:"cluster_uuid"`
	// Donors are the peer addresses of the members that store data.
	Donors []string `json:"donors"`
	// Members are the members at the snapshot's index.
	Members []Member `json:"members"`
}

// replicationStateRanges are the keys of package replication that belong to
// a node's replicated state: membership, cluster UUID, configuration
// id and view, the raft configuration, and certification (horizon and records).
// The raft log and hard state are the node's own.
var replicationStateRanges = func() []storage.KeyRange {
	var rs []storage.KeyRange
	for _, p := range [][]byte{memberPrefix, keyClusterUUID, keyConfID, keyView, keyHorizon, keyConfState, certPrefix} {
		rs = append(rs, storage.KeyRange{Lo: p, Hi: prefixEnd(p)})
	}
	return rs
}()

// StateRanges are the key ranges a state transfer copies.
func StateRanges() []storage.KeyRange {
	return append(storage.StateRanges(), replicationStateRanges...)
}

// TransferRecordKey is where a joiner keeps the progress of a state
// transfer (outside StateRanges).
var TransferRecordKey = []byte{storage.SpaceReplication, 'T'}

// DescribeState reads the raft position of the state in r (a donor's
// checkpoint): its applied seqno, the term of that entry and the raft
// configuration at it.
func DescribeState(r pebble.Reader) (statetransfer.Meta, error) {
	applied, digest, err := storage.StoredState(r)
	if err != nil {
		return statetransfer.Meta{}, err
	}
	m := statetransfer.Meta{Seqno: applied, StateDigest: digest}
	if cs, ok, err := get(r, keyConfState); err != nil {
		return m, err
	} else if ok {
		m.ConfState = cs
	}
	if v, ok, err := get(r, logKey(applied)); err != nil {
		return m, err
	} else if ok {
		e := &pb.Entry{}
		if err := proto.Unmarshal(v, e); err != nil {
			return m, fmt.Errorf("replication: corrupt log entry %d: %w", applied, err)
		}
		m.Term = e.GetTerm()
		return m, nil
	}
	v, ok, err := get(r, keySnapMeta)
	if err != nil {
		return m, err
	}
	if !ok || len(v) != 16 || binary.BigEndian.Uint64(v) != applied {
		return m, fmt.Errorf("replication: no term for applied seqno %d", applied)
	}
	m.Term = binary.BigEndian.Uint64(v[8:])
	return m, nil
}

// snapshot builds the raft snapshot the leader sends to a follower that
// needs compacted entries: the applied position, and the data members to
// fetch a state from (followers first: the leader is the busiest).
func (c *Core) snapshot() (*pb.Snapshot, error) {
	// the applied seqno and the configuration must be of one moment
	c.applyMu.Lock()
	defer c.applyMu.Unlock()
	applied := c.eng.Applied()
	term, err := c.logs.Term(applied)
	if err != nil {
		return nil, raft.ErrSnapshotTemporarilyUnavailable
	}
	c.mu.Lock()
	members := c.membersLocked()
	sd := snapshotData{ClusterUUID: c.clusterUUID, Members: members}
	lead := c.lead
	c.mu.Unlock()
	var leader []string
	for _, m := range members {
		if m.Arbitrator || m.PeerAddr == "" {
			continue
		}
		if m.ID == lead {
			leader = append(leader, m.PeerAddr)
		} else {
			sd.Donors = append(sd.Donors, m.PeerAddr)
		}
	}
	sd.Donors = append(sd.Donors, leader...)
	data, _ := json.Marshal(sd)
	return &pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{
		Index: new(applied), Term: new(term), ConfState: c.logs.ConfState(),
	}}, nil
}

// installSnapshot makes the state at the snapshot's index (or later) this
// node's: it runs a state transfer and waits for it.
func (c *Core) installSnapshot(snap *pb.Snapshot) error {
	// The apply stage stops while the state is replaced; what it had not
	// applied yet is older than the snapshot and part of the new state.
	c.applyMu.Lock()
	defer c.applyMu.Unlock()
	c.qmu.Lock()
	c.queue = nil
	c.qmu.Unlock()
	c.dropAhead()
	md := snap.GetMetadata()
	var sd snapshotData
	if err := json.Unmarshal(snap.GetData(), &sd); err != nil {
		return fmt.Errorf("replication: unreadable snapshot data: %w", err)
	}
	if c.cfg.Arbitrator {
		return c.installPosition(md, sd)
	}
	var donors []string
	for _, d := range sd.Donors {
		if d != c.cfg.Self.PeerAddr {
			donors = append(donors, d)
		}
	}
	mdBytes, err := proto.Marshal(md)
	if err != nil {
		return err
	}
	c.log.Info("the log this node needs is compacted on the leader: receiving a state transfer",
		"snapshot_index", md.GetIndex(), "applied", c.eng.Applied(), "donors", donors)
	// never a state older than this node's: raft can send a second
	// snapshot right after a transfer brought a state past the first's
	// index, and a donor behind this node would take applied back
	minSeqno := max(md.GetIndex(), c.eng.Applied())
	return c.transfer(statetransfer.Plan{MinSeqno: minSeqno, Donors: donors, Context: mdBytes})
}

// installPosition is an arbitrator's snapshot install: there is no data to
// fetch, only the raft position, configuration and members to take.
func (c *Core) installPosition(md *pb.SnapshotMetadata, sd snapshotData) error {
	csKV, err := confStateKV(md.GetConfState())
	if err != nil {
		return err
	}
	extra := []storage.KV{csKV, {Key: keyClusterUUID, Value: []byte(sd.ClusterUUID)}}
	for _, m := range sd.Members {
		data, _ := json.Marshal(m)
		extra = append(extra, storage.KV{Key: memberKey(m.ID), Value: data})
	}
	if err := c.eng.MarkApplied(md.GetIndex(), extra); err != nil {
		return err
	}
	b := c.eng.DB().NewBatch()
	defer b.Close()
	if err := c.finalizeTransfer(b, md); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	hs := c.transferHardState(md)
	c.logs.resetDone(md.GetIndex(), md.GetTerm(), md.GetConfState())
	c.logs.setHardState(hs)
	if err := c.loadState(); err != nil {
		return err
	}
	c.setStride(md.GetConfState().GetVoters())
	c.log.Info("took the cluster's position from a snapshot", "seqno", md.GetIndex())
	if c.cfg.OnMembers != nil {
		c.cfg.OnMembers(c.Members(), nil)
	}
	return nil
}

// FinishPendingTransfer completes a state transfer that a stop
// interrupted, then opens the core. It must be called, and return nil,
// before the core is driven when NewCore found one pending.
func (c *Core) FinishPendingTransfer() error {
	if c.pending == nil {
		return nil
	}
	if err := c.transfer(*c.pending); err != nil {
		return err
	}
	if err := c.open(); err != nil {
		return err
	}
	c.mu.Lock()
	c.pending = nil
	c.mu.Unlock()
	if c.cfg.OnMembers != nil {
		c.cfg.OnMembers(c.Members(), nil)
	}
	return nil
}

// transfer runs the state transfer of plan and installs its result.
func (c *Core) transfer(plan statetransfer.Plan) error {
	if c.cfg.Joiner == nil {
		return fmt.Errorf("replication: a state transfer is needed but this node cannot receive one")
	}
	md := &pb.SnapshotMetadata{}
	if err := proto.Unmarshal(plan.Context, md); err != nil {
		return fmt.Errorf("replication: corrupt state transfer plan: %w", err)
	}
	c.mu.Lock()
	c.transferring = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.transferring = false
		c.mu.Unlock()
	}()
	meta, err := c.cfg.Joiner.Run(c.cfg.Context, plan, func(b *pebble.Batch, m statetransfer.Meta) error {
		return c.finalizeTransfer(b, md)
	})
	if err != nil {
		return fmt.Errorf("replication: state transfer: %w", err)
	}
	return c.afterTransfer(md, meta)
}

// finalizeTransfer adds to the batch completing a transfer: the raft log
// replaced by the snapshot's position, and a hard state that commits it.
func (c *Core) finalizeTransfer(b *pebble.Batch, md *pb.SnapshotMetadata) error {
	if err := c.logs.resetTo(b, md.GetIndex(), md.GetTerm()); err != nil {
		return err
	}
	data, err := proto.Marshal(c.transferHardState(md))
	if err != nil {
		return err
	}
	return b.Set(keyHardState, data, nil)
}

// transferHardState is the hard state after installing md: it commits
// md's index, in md's term at least.
func (c *Core) transferHardState(md *pb.SnapshotMetadata) *pb.HardState {
	hs, _, _ := c.logs.InitialState()
	if hs.GetCommit() < md.GetIndex() {
		hs.Commit = new(md.GetIndex())
	}
	if hs.GetTerm() < md.GetTerm() {
		hs.Term, hs.Vote = new(md.GetTerm()), new(uint64(0))
	}
	return hs
}

// afterTransfer reloads everything derived from the state a transfer
// installed.
func (c *Core) afterTransfer(md *pb.SnapshotMetadata, meta statetransfer.Meta) error {
	cs := &pb.ConfState{}
	if err := proto.Unmarshal(meta.ConfState, cs); err != nil {
		return fmt.Errorf("replication: transferred configuration: %w", err)
	}
	hs := c.transferHardState(md)
	c.logs.resetDone(md.GetIndex(), md.GetTerm(), cs)
	c.logs.setHardState(hs)
	if err := c.eng.Reload(); err != nil {
		return err
	}
	if c.raw == nil {
		return nil // open() restores the rest
	}
	if err := c.loadState(); err != nil {
		return err
	}
	c.setStride(cs.GetVoters())
	if err := c.replayCertification(c.eng.Applied()); err != nil {
		return err
	}
	c.compactedAt = c.eng.Applied()
	c.log.Info("state transfer installed", "seqno", c.eng.Applied(), "snapshot_index", md.GetIndex(), "voters", cs.GetVoters())
	if c.cfg.OnMembers != nil {
		c.cfg.OnMembers(c.Members(), nil)
	}
	if c.cfg.OnTransferred != nil {
		c.cfg.OnTransferred()
	}
	return nil
}

// Transferring reports whether a state transfer is being received.
func (c *Core) Transferring() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.transferring || c.pending != nil
}
