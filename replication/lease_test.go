package replication

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/certusdb/certus/storage"
)

// leaseNet is three cores on a network the test cuts and a clock it moves:
// one step is a millisecond, in which every running core ticks once.
type leaseNet struct {
	t       *testing.T
	fs      map[uint64]vfs.FS
	engs    map[uint64]*storage.Engine
	cores   map[uint64]*Core
	cut     map[uint64]bool // cut off from every other core
	stopped map[uint64]bool // not ticking (a stopped process): its clock runs on
	now     time.Duration
	queue   []*pb.Message
	// answers are the read answers given on each core: request context
	// -> index
	answers map[uint64]map[uint64]uint64
	// onQueued, when set, is each core's CoreConfig.OnQueued
	onQueued func(id uint64)
	// drop, when set, loses the messages it returns true for
	drop func(m *pb.Message) bool
}

func newLeaseNet(t *testing.T) *leaseNet {
	n := &leaseNet{t: t, fs: map[uint64]vfs.FS{}, engs: map[uint64]*storage.Engine{}, cores: map[uint64]*Core{},
		cut: map[uint64]bool{}, stopped: map[uint64]bool{}, answers: map[uint64]map[uint64]uint64{}}
	for id := uint64(1); id <= 3; id++ {
		n.fs[id] = vfs.NewMem()
		n.start(id)
	}
	t.Cleanup(func() {
		for _, e := range n.engs {
			e.Close()
		}
	})
	return n
}

func (n *leaseNet) members() []Member {
	var ms []Member
	for id := uint64(1); id <= 3; id++ {
		ms = append(ms, Member{ID: id, Name: fmt.Sprintf("n%d", id), PeerAddr: fmt.Sprintf("test:%d", id)})
	}
	return ms
}

// start opens (or reopens, as after a restart) core id on its storage.
func (n *leaseNet) start(id uint64) {
	if e := n.engs[id]; e != nil {
		e.Close()
	}
	eng, err := storage.Open(storage.Config{Dir: "db", FS: n.fs[id], CacheBytes: 1 << 20, MemTableBytes: 4 << 20})
	if err != nil {
		n.t.Fatal(err)
	}
	n.engs[id] = eng
	n.answers[id] = map[uint64]uint64{}
	c, err := NewCore(CoreConfig{
		Self: n.members()[id-1], ClusterName: "lease", Engine: eng, Bootstrap: n.members(), ClusterUUID: "lease-test", SyncLog: true,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnReadState: func(rs raft.ReadState) { n.answers[id][binary.BigEndian.Uint64(rs.RequestCtx)] = rs.Index },
		OnQueued: func() {
			if n.onQueued != nil {
				n.onQueued(id)
			}
		},
		Clock:        func() time.Duration { return n.now },
		TickInterval: time.Millisecond,
	})
	if err != nil {
		n.t.Fatal(err)
	}
	if err := c.FinishPendingTransfer(); err != nil {
		n.t.Fatal(err)
	}
	n.cores[id] = c
}

// step moves the clock a tick and delivers what was sent in the last one.
func (n *leaseNet) step() {
	n.now += time.Millisecond
	in := n.queue
	n.queue = nil
	for _, m := range in {
		if n.cut[m.GetFrom()] || n.cut[m.GetTo()] || n.stopped[m.GetTo()] || n.drop != nil && n.drop(m) {
			continue
		}
		n.cores[m.GetTo()].Step(m)
	}
	for id := uint64(1); id <= 3; id++ {
		c := n.cores[id]
		if !n.stopped[id] {
			c.Tick()
		}
		n.process(id)
		if _, err := c.ApplyNext(1 << 20); err != nil {
			n.t.Fatal(err)
		}
	}
}

func (n *leaseNet) process(id uint64) {
	msgs, err := n.cores[id].Process(func(early []*pb.Message) { n.queue = append(n.queue, early...) })
	if err != nil {
		n.t.Fatal(err)
	}
	n.queue = append(n.queue, msgs...)
}

// leader returns the core that leads in the highest term, or 0.
func (n *leaseNet) leader() uint64 {
	var lead, term uint64
	for id, c := range n.cores {
		st := c.raw.BasicStatus()
		if st.RaftState == raft.StateLeader && st.GetTerm() > term {
			lead, term = id, st.GetTerm()
		}
	}
	return lead
}

// until steps until cond holds, failing after max steps.
func (n *leaseNet) until(what string, max int, cond func() bool) {
	for i := 0; i < max; i++ {
		if cond() {
			return
		}
		n.step()
	}
	n.t.Fatalf("no %s after %d ticks", what, max)
}

// TestLeaseNoStaleRead cuts the leader off and stops its ticks, lets the
// two others elect a leader and commit, then asks the old leader, which
// still believes it leads, for a read index: it must not answer from its
// expired lease. In the second case a follower restarts right after it
// acknowledged the leader and the other follower campaigns at once: the
// restarted node must not vote while the lease it gave may still run. In
// the third the leader hands leadership over, whose campaign passes every
// lease, and is cut off before it learns the new term.
func TestLeaseNoStaleRead(t *testing.T) {
	for _, tc := range []string{"cut off", "restart", "transfer"} {
		t.Run(tc, func(t *testing.T) {
			n := newLeaseNet(t)
			n.until("leader", 500, func() bool { return n.leader() != 0 })
			old := n.leader()
			for i := 0; i < 50; i++ { // the first term's entry commits, leases run
				n.step()
			}
			f, g := old%3+1, (old+1)%3+1 // the other two
			oldCommit := n.cores[old].Committed()
			switch tc {
			case "cut off":
				n.cut[old], n.stopped[old] = true, true
			case "restart":
				// f restarts right after acknowledging the old leader,
				// and g's election timer fires
				n.cut[old], n.stopped[old] = true, true
				n.start(f)
				if err := n.cores[g].raw.Campaign(); err != nil {
					t.Fatal(err)
				}
			case "transfer":
				// the old leader hands leadership to f (whose campaign
				// passes g's lease), then is cut off before it learns
				// of the new term
				if !n.cores[old].TransferLeadership() {
					t.Fatal("no transfer")
				}
				n.process(old)
				n.step() // delivers MsgTimeoutNow
				n.cut[old], n.stopped[old] = true, true
			}
			n.until("new leader committing", 2000, func() bool {
				l := n.leader()
				return l != 0 && l != old && n.cores[l].Committed() > oldCommit
			})
			newCommit := n.cores[n.leader()].Committed()
			// the old leader resumes, still cut off: it believes it leads
			n.stopped[old] = false
			if n.cores[old].raw.BasicStatus().RaftState != raft.StateLeader {
				t.Fatal("the old leader stepped down: the test no longer probes its lease")
			}
			n.cores[old].ReadIndex(binary.BigEndian.AppendUint64(nil, 1))
			for i := 0; i < 100; i++ {
				if idx, _, ok := n.cores[old].LeaseRead(); ok && idx < newCommit {
					t.Fatalf("the cut-off old leader read index %d from its published lease; the new leader had committed %d", idx, newCommit)
				}
				n.step()
			}
			if idx, ok := n.answers[old][1]; ok && idx < newCommit {
				t.Fatalf("the cut-off old leader answered a read with index %d; the new leader had committed %d", idx, newCommit)
			}
			if n.cores[old].stats.LeaseHeld.Load() == 0 {
				t.Fatal("the old leader never held an answer")
			}
			// reads through the new leader are answered, from its lease
			lead := n.leader()
			n.cores[lead].ReadIndex(binary.BigEndian.AppendUint64(nil, 2))
			n.until("read answer", 50, func() bool { _, ok := n.answers[lead][2]; return ok })
			n.until("published lease", 50, func() bool { _, _, ok := n.cores[lead].LeaseRead(); return ok })
			if idx, _, _ := n.cores[lead].LeaseRead(); idx < newCommit {
				t.Fatalf("the new leader read index %d from its lease, below its commit %d", idx, newCommit)
			}
		})
	}
}
