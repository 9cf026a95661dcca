package replication

import (
	"errors"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
)

// TestJoinChange walks the join decision: a new node is added as a
// learner, a member at a new address is updated, a member already there is
// done, and a node with a member's name replaces it only at the same
// address and once the view no longer holds it.
func TestJoinChange(t *testing.T) {
	members := []Member{{ID: 1, Name: "a", PeerAddr: "h1:4567"}, {ID: 2, Name: "b", PeerAddr: "h2:4567"}}
	view := []uint64{1, 2}
	for _, c := range []struct {
		name     string
		m        Member
		view     []uint64
		change   pb.ConfChangeType
		replaced uint64
		done     bool
		err      error
	}{
		{name: "new node", m: Member{ID: 3, Name: "c", PeerAddr: "h3:4567"}, view: view, change: pb.ConfChangeAddLearnerNode},
		{name: "member again", m: Member{ID: 2, Name: "b", PeerAddr: "h2:4567"}, view: view, done: true},
		{name: "member moved", m: Member{ID: 2, Name: "b", PeerAddr: "h9:4567"}, view: view, change: pb.ConfChangeUpdateNode},
		{name: "name taken elsewhere", m: Member{ID: 3, Name: "B", PeerAddr: "h3:4567"}, view: view, err: ErrDuplicateName},
		{name: "replacement while the old one is heard", m: Member{ID: 3, Name: "b", PeerAddr: "h2:4567"}, view: view, err: errReplacing},
		{name: "replacement before any view", m: Member{ID: 3, Name: "b", PeerAddr: "h2:4567"}, err: errReplacing},
		{name: "replacement of a silent member", m: Member{ID: 3, Name: "b", PeerAddr: "h2:4567"}, view: []uint64{1}, replaced: 2},
		{name: "no id", m: Member{Name: "c", PeerAddr: "h3:4567"}, view: view, err: errors.New("replication: member without id")},
	} {
		cc, replaced, done, err := JoinChange(members, c.view, c.m)
		switch {
		case c.err != nil:
			if err == nil || !errors.Is(err, c.err) && err.Error() != c.err.Error() {
				t.Errorf("%s: err %v, want %v", c.name, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case done != c.done:
			t.Errorf("%s: done %v", c.name, done)
		case c.replaced != 0:
			if replaced == nil || replaced.ID != c.replaced || cc != nil {
				t.Errorf("%s: replaced %v, change %v", c.name, replaced, cc)
			}
		case !c.done:
			if cc == nil || cc.Changes[0].GetType() != c.change || cc.Changes[0].GetNodeId() != c.m.ID {
				t.Errorf("%s: change %v, want %v of %d", c.name, cc, c.change, c.m.ID)
			}
		}
	}
}
