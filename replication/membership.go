package replication

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	pb "go.etcd.io/raft/v3/raftpb"
)

// ErrDuplicateName is returned when a joining node's name belongs to
// another member.
var ErrDuplicateName = errors.New("replication: a member with this name already exists")

// promoteLag is how close (in log entries) a learner must be to the
// leader's log to be promoted to a voter.
const promoteLag = 64

// errReplacing refuses, for now, a join that will replace a member (see
// AddMember) while that member is still in the view; the joiner retries.
var errReplacing = errors.New("replication: the member this node replaces is still in the view; waiting until it is silent")

// AddMember adds m to the cluster as a learner (it catches up without
// counting toward quorum; the leader promotes it to voter once it has) and
// waits until this node has applied the change.
//
// A node that joins with the name and peer address of a member replaces
// it: that is the member's host come back with an empty data dir (a lost
// disk, a container whose volume was recreated), as a Galera node whose
// data dir was wiped rejoins with a state transfer. The old member is
// removed first, once the view shows it silent (its process cannot be
// running: the new one holds its address), so a member the cluster still
// hears from is never removed. Another node with a member's name is
// refused (ErrDuplicateName).
func (n *Node) AddMember(ctx context.Context, m Member) ([]Member, error) {
	for {
		st := n.core.Status()
		cc, replaced, done, err := JoinChange(st.Members, st.View, m)
		switch {
		case err != nil:
			return nil, err
		case done:
			return n.Members(), nil
		case replaced != nil:
			n.log.Info("replacing a member: a node with its name and address joins with an empty data dir",
				"name", m.Name, "peer", m.PeerAddr, "old", fmt.Sprintf("%016x", replaced.ID), "new", fmt.Sprintf("%016x", m.ID))
			if err := n.RemoveMember(ctx, replaced.ID); err != nil {
				return nil, err
			}
			continue
		}
		if !n.Primary() {
			return nil, ErrNotPrimary
		}
		select {
		case n.confc <- cc:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-n.stopc:
			return nil, ErrStopped
		}
		deadline := time.After(2 * n.electionTimeout())
		for {
			got, ok := n.core.Member(m.ID)
			if ok && got.PeerAddr == m.PeerAddr {
				n.log.Info("member added", "id", fmt.Sprintf("%016x", m.ID), "name", m.Name, "peer", m.PeerAddr)
				return n.Members(), nil
			}
			select {
			case <-time.After(20 * time.Millisecond):
				continue
			case <-deadline:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-n.stopc:
				return nil, ErrStopped
			}
			break // proposal may have been dropped (another change pending): retry
		}
	}
}

// JoinChange decides what adding m to members takes (see AddMember), with
// the view the node has (Core.Status().View): done when m is a member at
// its address; replaced, the member m replaces, to remove first; else the
// configuration change to propose (m as a learner, or a member's new
// address). errReplacing while the member m replaces is in the view,
// ErrDuplicateName when another member has m's name at another address.
func JoinChange(members []Member, view []uint64, m Member) (cc *pb.ConfChangeV2, replaced *Member, done bool, err error) {
	if m.ID == 0 {
		return nil, nil, false, errors.New("replication: member without id")
	}
	var existing *Member
	for _, o := range members {
		switch {
		case o.ID == m.ID:
			existing = &o
		case !strings.EqualFold(o.Name, m.Name):
		case o.PeerAddr != m.PeerAddr:
			return nil, nil, false, fmt.Errorf("%w: node %q is member %016x (peer %s); remove it before adding a node with the same name", ErrDuplicateName, m.Name, o.ID, o.PeerAddr)
		case view == nil || slices.Contains(view, o.ID):
			return nil, nil, false, errReplacing
		default:
			return nil, &o, false, nil
		}
	}
	if existing != nil && existing.PeerAddr == m.PeerAddr {
		return nil, nil, true, nil
	}
	ctxData, _ := json.Marshal(ccContext{Member: m})
	cc = &pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{{Type: pb.ConfChangeAddLearnerNode.Enum(), NodeId: new(m.ID)}}, Context: ctxData}
	if existing != nil {
		// a known member with a new address: update, keep its role
		cc.Changes[0].Type = pb.ConfChangeUpdateNode.Enum()
	}
	return cc, nil, false, nil
}

// RemoveChange is the configuration change that removes member id.
func RemoveChange(id uint64) *pb.ConfChangeV2 {
	return &pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{{Type: pb.ConfChangeRemoveNode.Enum(), NodeId: new(id)}}}
}

// RemoveMember removes a member from the cluster.
func (n *Node) RemoveMember(ctx context.Context, id uint64) error {
	for {
		if _, ok := n.core.Member(id); !ok {
			return nil
		}
		select {
		case n.confc <- RemoveChange(id):
		case <-ctx.Done():
			return ctx.Err()
		case <-n.stopc:
			return ErrStopped
		}
		select {
		case <-time.After(n.electionTimeout()):
		case <-ctx.Done():
			return ctx.Err()
		case <-n.stopc:
			return ErrStopped
		}
	}
}

// reportUnreachable tells raft a peer could not be reached (from the
// transport, on any goroutine).
func (n *Node) reportUnreachable(id uint64) {
	select {
	case n.unreachc <- id:
	default:
	}
}

// Removed is closed when this node's removal from the cluster applies.
func (n *Node) Removed() <-chan struct{} { return n.removedc }

// leadRequest asks the raft loop to move leadership: to this node (take)
// or away from it; reply tells whether the request went out (nil) or why
// not.
type leadRequest struct {
	take  bool
	reply chan error
}

// errNoTransfer: this node does not lead, or no member can take over.
var errNoTransfer = errors.New("replication: no leadership to hand over")

// errNoLeader: no leader is known (an election is under way).
var errNoLeader = errors.New("replication: no leader known")

// askLead hands a request to the raft loop and returns its reply.
func (n *Node) askLead(ctx context.Context, take bool) error {
	req := leadRequest{take: take, reply: make(chan error, 1)}
	select {
	case n.handoffc <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.stopc:
		return ErrStopped
	}
	return <-req.reply
}

// HandOffLeadership transfers leadership away from this node, when it
// leads, and waits (up to an election timeout) until another member leads.
func (n *Node) HandOffLeadership(ctx context.Context) {
	if n.askLead(ctx, false) != nil {
		return
	}
	n.waitLeader(ctx, func(lead uint64) bool { return lead != 0 && lead != n.cfg.Self.ID })
}

// waitLeader waits up to an election timeout until done(leader) holds;
// it reports whether it did.
func (n *Node) waitLeader(ctx context.Context, done func(lead uint64) bool) bool {
	deadline := time.After(n.electionTimeout())
	for {
		if done(n.core.Status().Leader) {
			return true
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		case <-n.stopc:
			return false
		}
	}
}

// ErrCannotLead is returned by TakeLeadership when this node cannot lead:
// it is an arbitrator or a learner.
var ErrCannotLead = errors.New("replication: this node cannot lead")

// TakeLeadership makes this node the cluster's leader and waits until it
// leads: it asks the leader to hand leadership over (the leader first
// brings this node's log up to its own), and asks again after every
// election timeout (raft gives a transfer up after one) until ctx ends.
// Operators use it to put the leader where the writes are (followers
// forward every proposal to it) or to move it before maintenance.
func (n *Node) TakeLeadership(ctx context.Context) error {
	self := func(lead uint64) bool { return lead == n.cfg.Self.ID }
	for {
		switch err := n.askLead(ctx, true); {
		case errors.Is(err, errNoLeader):
		case err != nil:
			return err
		}
		if n.waitLeader(ctx, self) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// ErrCannotLeave is returned by Leave when no member could remove this
// node (no primary component, or the node is the last member).
var ErrCannotLeave = errors.New("replication: no member could remove this node")

// Leave removes this node from the cluster: it hands leadership over if it
// leads, then asks another member to remove it and waits until the removal
// applied there. The data dir is marked so the node cannot come back with
// it.
func (n *Node) Leave(ctx context.Context) error {
	tr, ok := n.cfg.Transport.(*TCPTransport)
	if !ok {
		return fmt.Errorf("%w: a cluster of one cannot shrink", ErrCannotLeave)
	}
	n.HandOffLeadership(ctx)
	var errs []error
	for _, m := range n.Members() {
		if m.ID == n.cfg.Self.ID || m.PeerAddr == "" {
			continue
		}
		err := tr.requestRemoval(ctx, m.PeerAddr)
		if err == nil {
			if err := n.eng.DB().Set(keyRemoved, []byte{1}, pebble.Sync); err != nil {
				return err
			}
			n.removedOnce.Do(func() { close(n.removedc) })
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("%w: %v", ErrCannotLeave, errors.Join(errs...))
}
