package replication

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/quorum"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"

	"github.com/certusdb/certus/certify"
	"github.com/certusdb/certus/statetransfer"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// CoreConfig configures a Core. Every field is read once by NewCore.
type CoreConfig struct {
	// Self is this node; Self.ID is its raft id (not 0).
	Self Member
	// ClusterName is recorded with a bootstrapped cluster.
	ClusterName string
	// Engine is the node's storage; the raft log lives in the same pebble.
	Engine *storage.Engine
	// Bootstrap, on empty storage, starts a new cluster with these
	// members (every one of them must bootstrap with the same list and
	// ClusterUUID). Empty: an empty core waits to be added to a running
	// cluster.
	Bootstrap []Member
	// ClusterUUID names a bootstrapped cluster (default: random).
	ClusterUUID string
	// ElectionTicks is raft's election timeout in ticks (default 20).
	ElectionTicks int
	// HeartbeatTicks is the leader's heartbeat interval in ticks
	// (default 2).
	HeartbeatTicks int
	// ViewTimeoutTicks is how long, in ticks, a voter may stay silent
	// before the leader orders a view without it (see Views; default two
	// election timeouts).
	ViewTimeoutTicks int
	// SyncLog fsyncs log appends before they are acknowledged.
	SyncLog bool
	// Cert configures certification (default certify.Defaults()).
	Cert certify.Config
	// LogRetentionBytes bounds the raft log kept for followers that fall
	// behind (like Galera's gcache.size; default 128 MiB): a follower that
	// needs older entries gets a state transfer instead. The leader keeps
	// more, up to 4 times as much, while a follower is in a state transfer.
	LogRetentionBytes uint64
	// Joiner receives state transfers when raft hands this node a
	// snapshot; nil means none can be installed.
	Joiner StateInstaller
	// Arbitrator makes the node a voter that stores no data (like
	// Galera's garbd): it keeps the raft log, takes part in elections and
	// commits, and hands leadership to a data member when it gets it.
	Arbitrator bool
	// PrepareAheadBytes is the size from which a write-set's batch is
	// built as soon as its entry reaches this node's log, by whoever calls
	// PrepareAhead, instead of in its turn on the apply stage (0: never).
	PrepareAheadBytes int
	// Context ends a state transfer in progress when the node stops.
	Context context.Context
	// Logger receives the core's log (default slog.Default()).
	Logger *slog.Logger
	// OnApplied is called, in log order on the goroutine driving the core,
	// for every write-set after it was certified and, if it passed,
	// applied. A second copy of an already decided write-set is not
	// reported.
	OnApplied func(ws *writeset.WriteSet, out writeset.Outcome)
	// Now reads the clock, only to log where a slow apply's time went
	// (nil: never logged). No decision of the core depends on it.
	Now func() time.Time
	// OnLogged is called, on the goroutine driving the core, for every
	// write-set appended to this node's raft log, with the index of its
	// entry. A proposer that never sees its write-set logged knows
	// the proposal was lost (raft drops proposals without telling, e.g. a
	// forwarded one on a broken connection) and proposes it again; one in
	// the log stays there until it commits or OnOverwritten says a new
	// leader replaced it.
	OnLogged func(id writeset.ID, index uint64)
	// OnOverwritten is called, on the goroutine driving the core, when a
	// new leader replaced this node's log entries from index from on,
	// before OnLogged reports the entries that replaced them. A write-set
	// logged there was lost unless it is logged again.
	OnOverwritten func(from uint64)
	// OnReadState is called for every answered ReadIndex request.
	OnReadState func(rs raft.ReadState)
	// OnQueued, when set, is called on the goroutine driving the core
	// when Process queued committed entries for the apply stage before it
	// syncs the log (entries persisted earlier; see Process), so the
	// driver can wake the apply stage without waiting for the fsync. The
	// entries Process queues after it are the driver's to notice
	// (ApplyQueue).
	OnQueued func()
	// Clock, when set, reads a monotonic clock (any origin) and lets the
	// leader answer ReadIndex requests from a lease proven by acknowledged
	// heartbeats (see lease.go) instead of a heartbeat round per request.
	// Nil: every request takes a round (raft's ReadOnlySafe).
	Clock func() time.Duration
	// TickInterval is the real time between two Ticks; with Clock it
	// sets the lease's length.
	TickInterval time.Duration
	// OnMembers is called after a configuration change with the members
	// and the ids removed by it.
	OnMembers func(members []Member, removed []uint64)
	// OnTransferred is called, on the goroutine driving the core, after a
	// state transfer moved the applied seqno past write-sets that were
	// never reported through OnApplied; Decided tells what became of them.
	OnTransferred func()
}

// Core is the IO-free replication state machine of one node: raft, the
// raft log, certification and apply. It is driven by one goroutine through
// Tick, Step, Propose and Process; Process persists what raft asks, applies
// committed entries and returns the messages to send. It keeps no timers
// and reads no clock but CoreConfig.Clock, so N cores can run in one
// process on a simulated network (package sim) exactly as they run in
// production (Node).
type Core struct {
	cfg  CoreConfig
	log  *slog.Logger
	eng  *storage.Engine
	raw  *raft.RawNode
	logs *LogStore
	cert *certify.Index

	ticks                uint64
	promoting            map[uint64]uint64 // learner -> tick a promotion was proposed
	campaignAfterAdvance bool
	pending              *statetransfer.Plan // an interrupted state transfer to finish first
	recoverTo            atomic.Uint64       // the commit index known at start: local recovery ends there
	compactedAt          uint64              // applied seqno at the last compaction check
	snapSent             map[uint64]snapSent // followers sent a snapshot (leader)
	certPrunedTo         uint64              // certification records below it are deleted
	viewHeard            map[uint64]uint64   // leader: the tick + 1 each member was last heard from (nil: not leading)
	viewProposed         uint64              // leader: the tick of the last view proposal
	// savedTerm and savedVote are the term and vote of the last hard state
	// Process persisted (zero before the first): a Ready that changes
	// either sends its messages only once it is persisted.
	savedTerm, savedVote uint64

	stride atomic.Uint64 // AUTO_INCREMENT increment<<32 | offset, read at every statement

	mu          sync.Mutex // guards the fields read by other goroutines
	members     map[uint64]Member
	clusterUUID string
	confID      uint64
	view        []uint64 // the last applied view's members, sorted (see Views)
	lead        uint64
	term        uint64
	raftState   raft.StateType
	commitIndex uint64
	certHorizon uint64
	certKeys    int
	// transferring is set while a state transfer is received.
	transferring bool

	// The apply stage. Process queues committed entries; ApplyNext
	// certifies and applies them in order, on its own goroutine, so a long
	// apply never delays raft's ticks, heartbeats and log writes.
	applyMu sync.Mutex // held while an entry is applied (and by a state transfer)
	qmu     sync.Mutex
	// applying is the index of the entry being applied, 0 between entries
	applying atomic.Uint64
	// ahead jobs (write-sets prepared ahead of the apply stage) in log
	// order: aheadJobs[:aheadNext] were dispatched (their dependencies
	// noted in deps), the rest wait for PrepareAhead
	aheadMu   sync.Mutex
	aheadJobs []*aheadJob
	aheadNext int
	deps      depTracker
	parallel  atomic.Bool // every write-set gets an ahead job (parallel apply)
	// originLast is, per origin, the index of its last write-set logged
	// since start; originFloor the last index of the log at start;
	// lastUntracked the last write-set logged without an ahead job (raft
	// loop only). An ahead job waits for its origin's earlier write-sets:
	// they never conflict with it, so its read positions do not cover them.
	originLast    map[uint64]uint64
	originFloor   uint64
	lastUntracked uint64
	queue         []queued // committed entries not applied yet, in log order

	lease *lease // nil without Clock
	// grant is the lease published for LeaseRead (nil: none); voters the
	// voter sets it is computed for (when votersKnown) and termCommitted
	// the last term known to have a committed entry (raft loop only)
	grant         atomic.Pointer[leaseGrant]
	voters        quorum.JointConfig
	votersKnown   bool
	termCommitted uint64

	stats Stats
}

func (c *CoreConfig) defaults() {
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 20
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = 2
	}
	if c.ViewTimeoutTicks == 0 {
		c.ViewTimeoutTicks = 2 * c.ElectionTicks
	}
	if c.Cert.Window == 0 {
		c.Cert = certify.Defaults()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.LogRetentionBytes == 0 {
		c.LogRetentionBytes = DefaultLogRetentionBytes
	}
	if c.Context == nil {
		c.Context = context.Background()
	}
}

// DefaultLogRetentionBytes is the default LogRetentionBytes.
const DefaultLogRetentionBytes = 128 << 20

// NewCore opens the replication state on cfg.Engine: it restores the raft
// log, membership and the certification index as they were at the applied
// seqno, and bootstraps a new cluster when asked to on empty storage. When
// a state transfer was interrupted (the node stopped in the middle of it),
// the state is incomplete: the core then only opens once
// FinishPendingTransfer has completed the transfer.
func NewCore(cfg CoreConfig) (*Core, error) {
	cfg.defaults()
	logs, err := OpenLogStore(cfg.Engine.DB())
	if err != nil {
		return nil, err
	}
	c := &Core{
		cfg: cfg, log: cfg.Logger, eng: cfg.Engine, logs: logs,
		cert:       certify.New(cfg.Cert),
		promoting:  map[uint64]uint64{},
		members:    map[uint64]Member{},
		snapSent:   map[uint64]snapSent{},
		originLast: map[uint64]uint64{},
	}
	logs.setSnapshotter(c.snapshot)
	if cfg.Joiner != nil {
		plan, pending, err := cfg.Joiner.Pending()
		if err != nil {
			return nil, err
		}
		if pending {
			c.pending = &plan
			c.log.Info("a state transfer was interrupted; it must finish before the node can run", "min_seqno", plan.MinSeqno)
			return c, nil
		}
	}
	if err := c.open(); err != nil {
		return nil, err
	}
	return c, nil
}

// open restores the state on storage and starts raft.
func (c *Core) open() error {
	cfg, logs := c.cfg, c.logs
	if err := c.loadState(); err != nil {
		return err
	}
	c.setStride(logs.ConfState().GetVoters())
	applied := cfg.Engine.Applied()
	if !cfg.Arbitrator {
		if err := c.replayCertification(applied); err != nil {
			return err
		}
	}
	// A state transfer may have brought the data past the raft position
	// it was sent at; raft learns the entries in between again (they are
	// skipped, see applyEntries), so it must not count them applied.
	hs, _, _ := logs.InitialState()
	first, _ := logs.FirstIndex()
	raftApplied := max(min(applied, hs.GetCommit()), first-1)
	c.recoverTo.Store(hs.GetCommit())
	readOnlyOption := raft.ReadOnlySafe
	if cfg.Clock != nil && cfg.TickInterval > 0 {
		readOnlyOption = raft.ReadOnlyLeaseBased // every answer is held until the lease is proven
		c.lease = newLease(cfg.TickInterval, cfg.ElectionTicks)
	}
	raw, err := raft.NewRawNode(&raft.Config{
		ID:                        cfg.Self.ID,
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             cfg.HeartbeatTicks,
		Storage:                   logs,
		Applied:                   raftApplied,
		MaxSizePerMsg:             1 << 20,
		MaxCommittedSizePerReady:  16 << 20,
		MaxUncommittedEntriesSize: 256 << 20,
		MaxInflightMsgs:           256,
		CheckQuorum:               true,
		PreVote:                   true,
		ReadOnlyOption:            readOnlyOption,
		Logger:                    raftLogger{cfg.Logger},
	})
	if err != nil {
		return fmt.Errorf("replication: %w", err)
	}
	c.raw = raw
	c.compactedAt = applied
	last, _ := logs.LastIndex()
	c.originFloor, c.lastUntracked = last, last
	if last == 0 && len(cfg.Bootstrap) > 0 {
		uuid := cfg.ClusterUUID
		if uuid == "" {
			uuid = newUUID()
		}
		var peers []raft.Peer
		for _, m := range cfg.Bootstrap {
			ctx, _ := json.Marshal(ccContext{Member: m, ClusterUUID: uuid, ClusterName: cfg.ClusterName})
			peers = append(peers, raft.Peer{ID: m.ID, Context: ctx})
		}
		if err := raw.Bootstrap(peers); err != nil {
			return fmt.Errorf("replication: bootstrap: %w", err)
		}
		c.log.Info("bootstrapping a new cluster", "cluster", cfg.ClusterName, "uuid", uuid, "members", len(peers))
	}
	if cs := logs.ConfState(); len(cs.GetVoters()) == 1 && cs.GetVoters()[0] == cfg.Self.ID {
		// alone in the cluster: no need to wait an election timeout
		if err := raw.Campaign(); err != nil {
			return fmt.Errorf("replication: campaign: %w", err)
		}
	}
	return nil
}

// newUUID returns a random RFC 4122 version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (c *Core) loadState() error {
	db := c.eng.DB()
	c.mu.Lock()
	c.members = map[uint64]Member{}
	c.clusterUUID, c.confID, c.view = "", 0, nil
	c.mu.Unlock()
	if err := c.loadView(); err != nil {
		return err
	}
	if v, ok, err := get(db, keyClusterUUID); err != nil {
		return err
	} else if ok {
		c.mu.Lock()
		c.clusterUUID = string(v)
		c.mu.Unlock()
	}
	if v, ok, err := get(db, keyConfID); err != nil {
		return err
	} else if ok && len(v) == 8 {
		c.mu.Lock()
		c.confID = binary.BigEndian.Uint64(v)
		c.mu.Unlock()
	}
	it, err := db.NewIter(nil)
	if err != nil {
		return err
	}
	defer it.Close()
	for it.SeekGE(memberPrefix); it.Valid() && len(it.Key()) == 10 && string(it.Key()[:2]) == string(memberPrefix); it.Next() {
		var m Member
		if err := json.Unmarshal(it.Value(), &m); err != nil {
			return fmt.Errorf("replication: corrupt member record: %w", err)
		}
		c.mu.Lock()
		c.members[m.ID] = m
		c.mu.Unlock()
	}
	return it.Error()
}

// replayCertification rebuilds the certification index as it was at
// applied: it replays the certification records of the last Window seqnos
// and restores the stored horizon.
func (c *Core) replayCertification(applied uint64) error {
	c.cert = certify.New(c.cfg.Cert)
	if applied == 0 {
		return nil
	}
	start := uint64(1)
	if applied > c.cfg.Cert.Window {
		start = applied - c.cfg.Cert.Window + 1
	}
	db := c.eng.DB()
	horizon := uint64(0)
	if v, ok, err := get(db, keyHorizon); err != nil {
		return err
	} else if ok && len(v) == 8 {
		horizon = binary.BigEndian.Uint64(v)
	}
	c.cert.BeginReplay(horizon)
	err := replayCertRecords(db, start, applied, func(seqno uint64, ws *writeset.WriteSet, ok bool) {
		c.cert.Replay(seqno, ws, ok)
	})
	if err != nil {
		return err
	}
	c.cert.FinishReplay(applied, horizon)
	if err := c.restoreStreams(); err != nil {
		return err
	}
	c.log.Info("certification index restored", "applied", applied, "replayed_from", start, "horizon", horizon, "keys", c.cert.Len())
	return nil
}

// Tick advances raft's clock by one tick.
func (c *Core) Tick() {
	c.ticks++
	c.raw.Tick()
	c.promoteLearners()
	c.handOffLeadership()
	c.watchView()
}

// handOffLeadership, on an arbitrator that leads, transfers leadership to
// a data member whose log is complete: every write would otherwise take an
// extra hop through a node that stores nothing.
func (c *Core) handOffLeadership() {
	if !c.cfg.Arbitrator || c.raftState != raft.StateLeader || c.ticks%uint64(c.cfg.HeartbeatTicks) != 0 {
		return
	}
	st := c.raw.Status()
	if st.LeadTransferee != raft.None {
		return
	}
	last, _ := c.logs.LastIndex()
	for _, id := range slices.Sorted(maps.Keys(st.Progress)) {
		pr := st.Progress[id]
		if m, ok := c.Member(id); !ok || m.Arbitrator || id == c.cfg.Self.ID || pr.IsLearner || pr.Match < last {
			continue
		}
		c.log.Info("arbitrator hands leadership to a data member", "to", fmt.Sprintf("%016x", id))
		c.raw.TransferLeader(id)
		return
	}
}

// Step hands a message from a peer to raft. With leases, a vote request
// is ignored until the node has ticked an election timeout since its start:
// before its restart it may have acknowledged a leader whose lease still
// runs, and it no longer knows (see lease.go).
func (c *Core) Step(m *pb.Message) {
	if c.lease != nil {
		switch m.GetType() {
		case pb.MsgVote, pb.MsgPreVote:
			if c.ticks < uint64(c.cfg.ElectionTicks) && m.GetFrom() != c.cfg.Self.ID {
				return
			}
		case pb.MsgHeartbeatResp:
			c.lease.ack(m)
		}
	}
	if err := c.raw.Step(m); err != nil && err != raft.ErrStepPeerNotFound {
		c.log.Debug("raft step", "err", err)
	}
}

// Propose proposes an encoded write-set. A proposal may be dropped (no
// leader, a leader change); the proposer learns the outcome only from the
// committed stream. An error means this node dropped it at once (it knows
// no leader, or leadership is being transferred).
func (c *Core) Propose(data []byte) error {
	err := c.raw.Propose(data)
	if err != nil {
		c.log.Debug("proposal dropped", "err", err)
	}
	return err
}

// ProposeConfChange proposes a configuration change.
func (c *Core) ProposeConfChange(cc *pb.ConfChangeV2) {
	if err := c.raw.ProposeConfChange(cc); err != nil {
		c.log.Debug("conf change proposal dropped", "err", err)
	}
}

// ReadIndex asks raft for the commit index as of now; the answer comes
// through OnReadState with rctx.
func (c *Core) ReadIndex(rctx []byte) { c.raw.ReadIndex(rctx) }

// ReportUnreachable tells raft a peer could not be reached.
func (c *Core) ReportUnreachable(id uint64) { c.raw.ReportUnreachable(id) }

// Process handles everything raft has ready: it persists new entries and
// the hard state, queues committed entries for the apply stage (ApplyNext)
// and answers read requests. It returns the messages to send to peers,
// which may be sent only after Process returns (the entries they
// acknowledge are persisted by then). An error means storage failed; the
// core must stop. With OnQueued set, committed entries persisted before a
// Ready are queued before its new entries are synced.
//
// While the node leads, sendEarly (when not nil) gets each Ready's
// messages before its entries are persisted, so the followers write new
// entries while the leader does, and learn a new commit index without
// waiting for the leader's next fsync (Raft thesis §10.2.1; etcd's server
// does the same). That is safe for a leader's messages, which acknowledge
// nothing it has not persisted: appends, heartbeats, snapshots, read
// answers and refusals of a vote in its own term; the leader counts its
// own entries towards a quorum only in a later call, after they were
// persisted. Messages of a Ready that changes the term or the vote, or of
// a node that does not lead, still wait.
func (c *Core) Process(sendEarly func([]*pb.Message)) ([]*pb.Message, error) {
	var out []*pb.Message
	for c.raw.HasReady() {
		rd := c.raw.Ready()
		if rd.SoftState != nil {
			c.mu.Lock()
			changed := c.lead != rd.SoftState.Lead
			c.lead = rd.SoftState.Lead
			c.raftState = rd.SoftState.RaftState
			c.mu.Unlock()
			if changed {
				c.log.Info("raft leader changed", "leader", fmt.Sprintf("%016x", rd.SoftState.Lead), "term", c.raw.BasicStatus().GetTerm(), "state", rd.SoftState.RaftState.String())
			}
		}
		if rd.HardState != nil {
			c.mu.Lock()
			c.term = rd.HardState.GetTerm()
			c.commitIndex = rd.HardState.GetCommit()
			c.mu.Unlock()
		}
		if !raft.IsEmptySnap(rd.Snapshot) {
			if err := c.installSnapshot(rd.Snapshot); err != nil {
				return out, err
			}
			if c.cfg.OnOverwritten != nil {
				c.cfg.OnOverwritten(1) // the whole log was replaced
			}
		}
		early := sendEarly != nil && c.raftState == raft.StateLeader && len(rd.Messages) > 0 &&
			(rd.HardState == nil || rd.HardState.GetTerm() == c.savedTerm && rd.HardState.GetVote() == c.savedVote)
		readStates := rd.ReadStates
		var msgs []*pb.Message
		if early {
			msgs, readStates = c.outgoing(rd.Messages, readStates)
			sendEarly(msgs)
		}
		last, _ := c.logs.LastIndex()
		committed := rd.CommittedEntries
		fsync := rd.MustSync && c.cfg.SyncLog
		if fsync && raft.IsEmptySnap(rd.Snapshot) && len(rd.Entries) > 0 && c.cfg.OnQueued != nil {
			// Committed entries persisted before this Ready can be applied
			// while its new entries are synced: on a follower under load a
			// Ready mostly brings the commit of earlier entries along with
			// new ones, and applying them waited for that fsync. (A write
			// without one is quick, and waking the apply stage twice cost
			// more than it saved.)
			n := persistedPrefix(committed, min(last, rd.Entries[0].GetIndex()-1))
			if n > 0 {
				if err := c.enqueue(committed[:n]); err != nil {
					return out, err
				}
				committed = committed[n:]
				c.cfg.OnQueued()
			}
		}
		if err := c.logs.Save(rd.Entries, rd.HardState, fsync); err != nil {
			return out, err
		}
		if rd.HardState != nil {
			c.savedTerm, c.savedVote = rd.HardState.GetTerm(), rd.HardState.GetVote()
		}
		c.noteAppended(rd.Entries, last)
		if !early {
			msgs, readStates = c.outgoing(rd.Messages, readStates)
			out = append(out, msgs...)
		}
		var snapsSent []*pb.Message
		for _, m := range rd.Messages {
			if m.GetType() == pb.MsgSnap {
				snapsSent = append(snapsSent, m)
			}
		}
		if err := c.enqueue(committed); err != nil {
			return out, err
		}
		c.answerReads(readStates)
		c.raw.Advance(rd)
		// A snapshot only tells the follower where to fetch its state; it
		// counts as delivered once sent. The leader then probes the
		// follower as usual, so a lost answer cannot leave the follower
		// paused forever.
		for _, m := range snapsSent {
			c.raw.ReportSnapshot(m.GetTo(), raft.SnapshotFinish)
			c.snapSent[m.GetTo()] = snapSent{index: m.GetSnapshot().GetMetadata().GetIndex(), tick: c.ticks}
		}
		if err := c.maybeCompact(); err != nil {
			return out, err
		}
		if c.campaignAfterAdvance {
			c.campaignAfterAdvance = false
			if err := c.raw.Campaign(); err != nil {
				c.log.Debug("campaign", "err", err)
			}
		}
	}
	if c.lease != nil {
		if len(c.lease.held) > 0 || len(c.lease.heldLocal) > 0 {
			// an acknowledgement stepped since may have proven the lease
			msgs, readStates := c.leaseHold(nil, nil)
			out = append(out, msgs...)
			c.answerReads(readStates)
		}
		c.publishLease()
	}
	return out, nil
}

// outgoing returns the messages of a Ready to send (without answers to
// commit notices) and the read answers to give, through the lease when
// there is one.
func (c *Core) outgoing(msgs []*pb.Message, readStates []raft.ReadState) ([]*pb.Message, []raft.ReadState) {
	msgs = withoutNoticeAnswers(msgs)
	if c.lease != nil {
		return c.leaseHold(msgs, readStates)
	}
	return msgs, readStates
}

// leaseHold passes raft's outgoing messages and read answers through the
// lease (see lease.go): it stamps heartbeats, and while this node leads it
// holds the answers to reads, its own and its followers', until the lease
// is proven; it returns what may go out now, earlier held answers first.
func (c *Core) leaseHold(msgs []*pb.Message, readStates []raft.ReadState) ([]*pb.Message, []raft.ReadState) {
	l, now := c.lease, c.cfg.Clock()
	st := c.raw.BasicStatus()
	leading := st.RaftState == raft.StateLeader
	if !leading || st.GetTerm() != l.term {
		l.reset(st.GetTerm())
	}
	if !leading {
		return msgs, readStates
	}
	l.stamp(msgs, now)
	out := msgs[:len(msgs):len(msgs)] // appending copies: raft's slice stays as it is
	if slices.ContainsFunc(msgs, isReadIndexResp) {
		out = nil
		for _, m := range msgs {
			if isReadIndexResp(m) {
				l.held = append(l.held, m)
			} else {
				out = append(out, m)
			}
		}
	}
	l.heldLocal = append(l.heldLocal, readStates...)
	if len(l.held) == 0 && len(l.heldLocal) == 0 {
		return out, nil
	}
	if st.LeadTransferee != raft.None || !l.valid(c.cfg.Self.ID, c.raw.Status().Config.Voters, now) {
		c.stats.LeaseHeld.Add(1)
		return out, nil
	}
	out = append(out, l.held...)
	local := l.heldLocal
	l.held, l.heldLocal = nil, nil
	return out, local
}

// persistedPrefix is how many of ents (consecutive committed entries)
// are at or below index persisted.
func persistedPrefix(ents []*pb.Entry, persisted uint64) int {
	n := 0
	for n < len(ents) && ents[n].GetIndex() <= persisted {
		n++
	}
	return n
}

func isReadIndexResp(m *pb.Message) bool { return m.GetType() == pb.MsgReadIndexResp }

// answerReads hands answered ReadIndex requests to OnReadState.
func (c *Core) answerReads(rss []raft.ReadState) {
	if c.cfg.OnReadState == nil {
		return
	}
	for _, rs := range rss {
		c.cfg.OnReadState(rs)
	}
}

// snapSent records a snapshot sent to a follower: its index and when.
type snapSent struct{ index, tick uint64 }

// queued is a committed entry waiting for the apply stage; a
// configuration change carries the configuration raft computed for it.
type queued struct {
	e  *pb.Entry
	cs *pb.ConfState
}

func (c *Core) horizonKV() storage.KV {
	return storage.KV{Key: keyHorizon, Value: binary.BigEndian.AppendUint64(nil, c.cert.Horizon())}
}

// enqueue hands committed entries to the apply stage. Raft learns a
// configuration change here, when it commits (raft counts entries applied
// once handed over); the apply stage records its effect in order.
func (c *Core) enqueue(ents []*pb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	items := make([]queued, 0, len(ents))
	for _, e := range ents {
		q := queued{e: e}
		if e.GetType() != pb.EntryNormal {
			cc, err := decodeConfChange(e)
			if err != nil {
				return err
			}
			q.cs = c.raw.ApplyConfChange(cc)
			c.votersKnown = false
			c.mu.Lock()
			lead := c.lead
			c.mu.Unlock()
			if v := q.cs.GetVoters(); len(v) == 1 && v[0] == c.cfg.Self.ID && lead == raft.None {
				// alone (e.g. just bootstrapped): lead at once, once raft
				// has seen the change (after Advance)
				c.campaignAfterAdvance = true
			}
		}
		items = append(items, q)
	}
	c.qmu.Lock()
	c.queue = append(c.queue, items...)
	c.qmu.Unlock()
	return nil
}

// Applying is the log index of the entry the apply stage is applying, 0
// between entries. Seen at the same index twice some time apart, one entry
// held the stage for that long (flow control tells that from slowness).
func (c *Core) Applying() uint64 { return c.applying.Load() }

// ApplyQueue is the number of committed entries waiting to be applied.
func (c *Core) ApplyQueue() int {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return len(c.queue)
}

// ApplyNext certifies and applies up to max queued entries in log order
// and returns how many it took. It runs on the goroutine of the apply
// stage (any one goroutine, not necessarily the one driving raft); an
// error means storage failed and the core must stop.
func (c *Core) ApplyNext(max int) (int, error) {
	n := 0
	for ; n < max; n++ {
		c.applyMu.Lock()
		c.qmu.Lock()
		if len(c.queue) == 0 {
			c.qmu.Unlock()
			c.applyMu.Unlock()
			break
		}
		q := c.queue[0]
		c.queue[0] = queued{}
		c.queue = c.queue[1:]
		c.qmu.Unlock()
		c.applying.Store(q.e.GetIndex())
		err := c.applyEntry(q)
		c.applying.Store(0)
		c.applyMu.Unlock()
		if err != nil {
			return n, err
		}
	}
	if n > 0 {
		c.mu.Lock()
		c.certHorizon, c.certKeys = c.cert.Horizon(), c.cert.Len()
		c.mu.Unlock()
	}
	return n, nil
}

func (c *Core) applyEntry(q queued) error {
	e := q.e
	idx := e.GetIndex()
	if idx <= c.eng.Applied() {
		return nil // a state transfer brought the data past this entry
	}
	var err error
	switch e.GetType() {
	case pb.EntryNormal:
		err = c.applyNormal(idx, e)
	case pb.EntryConfChange, pb.EntryConfChangeV2:
		err = c.applyConfChange(idx, e, q.cs)
	default:
		c.cert.Skip(idx)
		err = c.eng.MarkApplied(idx, []storage.KV{c.horizonKV()})
	}
	if err == nil {
		c.stats.Applied.Add(1)
	}
	return err
}

// now reads Config.Now, or gives the zero time without one.
func (c *Core) now() time.Time {
	if c.cfg.Now == nil {
		return time.Time{}
	}
	return c.cfg.Now()
}

// slowApply is the apply time from which a write-set is logged with where
// its time went.
const slowApply = time.Second

func (c *Core) applyNormal(idx uint64, e *pb.Entry) error {
	data := e.GetData()
	if c.cfg.Arbitrator {
		return c.eng.MarkApplied(idx, nil) // the order is all it keeps
	}
	if len(data) == 0 { // a new leader's empty entry
		c.cert.Skip(idx)
		return c.eng.MarkApplied(idx, []storage.KV{c.horizonKV()})
	}
	if ids, isView, ok := decodeView(data); isView {
		if !ok {
			c.log.Error("skipping corrupt view entry", "seqno", idx)
			c.cert.Skip(idx)
			return c.eng.MarkApplied(idx, []storage.KV{c.horizonKV()})
		}
		return c.applyView(idx, ids, data)
	}
	start := c.now()
	job := c.takeAhead(e)
	var ws *writeset.WriteSet
	var prep *storage.Prepared
	var err, prepErr error
	if job != nil {
		prep, prepErr = job.prepared()
	}
	if job != nil && job.ws != nil {
		ws = job.ws
	} else {
		ws, err = writeset.Decode(data)
	}
	if err != nil {
		c.log.Error("skipping corrupt log entry", "seqno", idx, "err", err)
		c.cert.Skip(idx)
		return c.eng.MarkApplied(idx, []storage.KV{c.horizonKV()})
	}
	if ws.Flags&writeset.StreamFlags != 0 {
		if job != nil {
			job.discard()
		}
		return c.applyStream(idx, ws, data)
	}
	decoded := c.now()
	v := c.cert.Certify(idx, ws)
	certified := c.now()
	out := writeset.Outcome{Seqno: idx}
	if v.OK {
		ended := c.eng.EndStreams(v.Aborted) // a DDL on their tables
		extra := append([]storage.KV{c.horizonKV(), certRecordKV(idx, ws, VerdictCommitted)}, ended...)
		onReject := append([]storage.KV{c.horizonKV(), certRecordKV(idx, ws, VerdictRejected)}, ended...)
		var res storage.ApplyResult
		if prep != nil {
			res, err = c.eng.ApplyPrepared(idx, prep, extra, onReject)
		} else {
			if prepErr != nil && !errors.Is(prepErr, errNotPrepared) {
				return fmt.Errorf("prepare seqno %d: %w", idx, prepErr)
			}
			res, err = c.eng.Apply(idx, ws, extra, onReject)
		}
		if err != nil {
			return fmt.Errorf("apply seqno %d: %w", idx, err)
		}
		if done := c.now(); done.Sub(start) > slowApply && c.cfg.Now != nil {
			c.log.Info("slow apply: later commits waited for this write-set", "seqno", idx, "bytes", len(data), "ops", len(ws.Ops),
				"prepared_ahead", prep != nil, "decode", decoded.Sub(start).Round(time.Millisecond),
				"certify", certified.Sub(decoded).Round(time.Millisecond), "apply", done.Sub(certified).Round(time.Millisecond))
		}
		if res.Rejected != nil {
			// every node refuses it alike; it stays recorded as certified
			out.Rejected = res.Rejected
		} else {
			out.Committed = true
		}
	} else {
		if job != nil {
			job.discard()
		}
		out.Reason = v.Reason.String()
		if v.Reason != certify.ReasonDuplicate {
			c.stats.CertFailuresAll.Add(1)
		}
		if err := c.eng.MarkApplied(idx, []storage.KV{c.horizonKV(), certRecordKV(idx, ws, VerdictFailed)}); err != nil {
			return err
		}
	}
	if v.Reason == certify.ReasonDuplicate {
		return nil // the first copy answered the origin
	}
	if c.cfg.OnApplied != nil {
		c.cfg.OnApplied(ws, out)
	}
	return nil
}

// decodeConfChange decodes a configuration change entry.
func decodeConfChange(e *pb.Entry) (pb.ConfChangeI, error) {
	if e.GetType() == pb.EntryConfChange {
		m := &pb.ConfChange{}
		if err := proto.Unmarshal(e.GetData(), m); err != nil {
			return nil, fmt.Errorf("corrupt conf change at %d: %w", e.GetIndex(), err)
		}
		return m, nil
	}
	m := &pb.ConfChangeV2{}
	if err := proto.Unmarshal(e.GetData(), m); err != nil {
		return nil, fmt.Errorf("corrupt conf change at %d: %w", e.GetIndex(), err)
	}
	return m, nil
}

// applyConfChange records the effect of a configuration change (raft
// learned it when it committed, giving cs).
func (c *Core) applyConfChange(idx uint64, e *pb.Entry, cs *pb.ConfState) error {
	cc, err := decodeConfChange(e)
	if err != nil {
		return err
	}
	extra := []storage.KV{c.horizonKV()}
	csKV, err := confStateKV(cs)
	if err != nil {
		return err
	}
	extra = append(extra, csKV)
	v2 := cc.AsV2()
	var ctx ccContext
	if len(v2.GetContext()) > 0 {
		if err := json.Unmarshal(v2.GetContext(), &ctx); err != nil {
			c.log.Warn("conf change with unreadable context", "seqno", idx, "err", err)
		}
	}
	var removed []uint64
	c.mu.Lock()
	c.confID++
	extra = append(extra, storage.KV{Key: keyConfID, Value: binary.BigEndian.AppendUint64(nil, c.confID)})
	for _, ch := range v2.GetChanges() {
		id := ch.GetNodeId()
		switch ch.GetType() {
		case pb.ConfChangeRemoveNode:
			delete(c.members, id)
			removed = append(removed, id)
			extra = append(extra, storage.KV{Key: memberKey(id)})
			if id == c.cfg.Self.ID {
				extra = append(extra, storage.KV{Key: keyRemoved, Value: []byte{1}})
			}
		default:
			m := c.members[id]
			if ctx.Member.ID == id {
				m = ctx.Member
			}
			m.ID = id
			c.members[id] = m
			data, _ := json.Marshal(m)
			extra = append(extra, storage.KV{Key: memberKey(id), Value: data})
		}
	}
	if ctx.ClusterUUID != "" && c.clusterUUID == "" {
		c.clusterUUID = ctx.ClusterUUID
		extra = append(extra, storage.KV{Key: keyClusterUUID, Value: []byte(ctx.ClusterUUID)})
	}
	members := c.membersLocked()
	c.mu.Unlock()
	c.setStride(cs.GetVoters())
	c.cert.Skip(idx)
	for _, id := range removed {
		// a removed node's streaming transactions can never finish
		if ended := c.cert.AbortNode(id); len(ended) > 0 {
			c.log.Info("rolled back the streaming transactions of a removed node", "seqno", idx, "node", id, "transactions", len(ended))
			extra = append(extra, c.eng.EndStreams(ended)...)
		}
	}
	if err := c.eng.MarkApplied(idx, extra); err != nil {
		return err
	}
	c.logs.setConfState(cs)
	if c.cfg.OnMembers != nil {
		c.cfg.OnMembers(members, removed)
	}
	c.log.Info("configuration changed", "seqno", idx, "voters", cs.GetVoters(), "learners", cs.GetLearners())
	return nil
}

// promoteTicks is how long a promotion proposal is given before it is
// proposed again.
const promoteTicks = 100

// promoteLearners runs on the leader: a learner whose log is close to the
// leader's becomes a voter.
func (c *Core) promoteLearners() {
	if c.raftState != raft.StateLeader {
		return
	}
	st := c.raw.Status()
	if len(st.Config.Learners) == 0 {
		return
	}
	last, _ := c.logs.LastIndex()
	ids := make([]uint64, 0, len(st.Config.Learners))
	for id := range st.Config.Learners {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		pr, ok := st.Progress[id]
		if !ok || pr.State != tracker.StateReplicate || pr.Match+promoteLag < last {
			continue
		}
		if t, ok := c.promoting[id]; ok && c.ticks-t < promoteTicks {
			continue
		}
		c.promoting[id] = c.ticks
		c.ProposeConfChange(&pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{{Type: pb.ConfChangeAddNode.Enum(), NodeId: new(id)}}})
		c.log.Info("promoting learner to voter", "id", fmt.Sprintf("%016x", id), "match", pr.Match, "last", last)
	}
}

func (c *Core) membersLocked() []Member {
	out := make([]Member, 0, len(c.members))
	for _, m := range c.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Members returns the cluster's members known to this node.
func (c *Core) Members() []Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.membersLocked()
}

// Member returns the member with id.
func (c *Core) Member(id uint64) (Member, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.members[id]
	return m, ok
}

// ClusterUUID is the cluster's state UUID ("" until known).
func (c *Core) ClusterUUID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clusterUUID
}

// Primary reports whether the node is in a primary component: it knows a
// leader (raft's CheckQuorum makes a leader that lost its quorum step down,
// and PreVote keeps a cut-off follower from disrupting the others).
func (c *Core) Primary() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lead != raft.None && !c.transferring && c.pending == nil
}

// Recovered reports whether the node has applied everything it knew to be
// committed when it started (what it acknowledged before a crash, or
// learned before a restart): until then it must not serve reads.
func (c *Core) Recovered() bool { return c.eng.Applied() >= c.recoverTo.Load() }

// RaiseRecoverTo moves the end of recovery up to idx, a commit index the
// cluster reported after this node started: a node that restarts behind
// the others is not recovered until it has applied what they committed
// while it was away.
func (c *Core) RaiseRecoverTo(idx uint64) {
	for cur := c.recoverTo.Load(); idx > cur && !c.recoverTo.CompareAndSwap(cur, idx); cur = c.recoverTo.Load() {
	}
}

// Lead is the leader this node knows, or raft.None.
func (c *Core) Lead() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lead
}

// Term is the current raft term.
func (c *Core) Term() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.term
}

// Committed is the highest log index this node knows to be committed.
func (c *Core) Committed() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commitIndex
}

// ReproposeHorizon is how far (in seqnos) the committed log may advance
// past a write-set's first proposal before its origin must stop proposing
// it again: certification recognises a second copy only within its window,
// and both copies then land within it.
func (c *Core) ReproposeHorizon() uint64 { return c.cfg.Cert.Window / 2 }

// ElectionTimeout is ElectionTicks of TickInterval.
func (c *Core) ElectionTimeout() time.Duration {
	return c.cfg.TickInterval * time.Duration(c.cfg.ElectionTicks)
}

// Applied is the seqno of the last applied entry.
func (c *Core) Applied() uint64 { return c.eng.Applied() }

// Engine is the core's storage.
func (c *Core) Engine() *storage.Engine { return c.eng }

// Stats returns the core's counters.
func (c *Core) Stats() *Stats { return &c.stats }

// setStride recomputes the AUTO_INCREMENT stride from the voters: the
// increment is their number, the offset this node's rank among them
// (Galera's wsrep_auto_increment_control).
func (c *Core) setStride(voters []uint64) {
	var ids []uint64
	for _, id := range voters {
		if m, ok := c.Member(id); !ok || !m.Arbitrator {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	inc, off := uint64(1), uint64(1)
	for i, id := range ids {
		if id == c.cfg.Self.ID {
			inc, off = uint64(len(ids)), uint64(i+1)
		}
	}
	c.stride.Store(inc<<32 | off)
}

// AutoIncrementStride returns the AUTO_INCREMENT increment and this
// node's offset.
func (c *Core) AutoIncrementStride() (increment, offset uint64) {
	v := c.stride.Load()
	if v == 0 {
		return 1, 1
	}
	return v >> 32, v & 0xffffffff
}

// TransferLeadership hands leadership to the voter whose log is the most
// complete, when this node leads (before it stops or leaves, so the others
// need not wait an election timeout). It reports whether a transfer began.
func (c *Core) TransferLeadership() bool {
	if c.raftState != raft.StateLeader {
		return false
	}
	st := c.raw.Status()
	best, match := uint64(0), uint64(0)
	for _, id := range slices.Sorted(maps.Keys(st.Progress)) {
		pr := st.Progress[id]
		if id == c.cfg.Self.ID || pr.IsLearner {
			continue
		}
		if m, ok := c.Member(id); ok && m.Arbitrator {
			continue
		}
		if best == 0 || pr.Match > match {
			best, match = id, pr.Match
		}
	}
	if best == 0 {
		return false
	}
	c.log.Info("handing leadership over", "to", fmt.Sprintf("%016x", best))
	c.raw.TransferLeader(best)
	return true
}

// RequestLeadership asks the leader to hand leadership to this node (a
// follower forwards the request to the leader it knows); nil when the
// request went out or the node leads already. An arbitrator or a learner
// cannot lead (ErrCannotLead); a node that knows no leader (an election
// is under way) cannot ask yet (errNoLeader).
func (c *Core) RequestLeadership() error {
	st := c.raw.Status()
	if _, voter := st.Config.Voters.IDs()[c.cfg.Self.ID]; c.cfg.Arbitrator || !voter {
		return ErrCannotLead
	}
	switch {
	case st.RaftState == raft.StateLeader:
		return nil
	case st.Lead == raft.None:
		return errNoLeader
	}
	c.log.Info("asking for leadership", "leader", fmt.Sprintf("%016x", st.Lead))
	c.raw.TransferLeader(c.cfg.Self.ID)
	return nil
}

// Status is a snapshot of a node's replication state.
type Status struct {
	ID          uint64
	Name        string
	ClusterName string
	ClusterUUID string
	ConfID      uint64
	Leader      uint64
	Term        uint64
	RaftState   string
	Primary     bool
	Voters      []uint64
	// View lists the members of the last view (see Views), sorted; nil
	// before the first.
	View        []uint64
	Learners    []uint64
	Members     []Member
	Applied     uint64
	Committed   uint64
	LastIndex   uint64
	Waiting     int // local write-sets waiting for their outcome
	CertHorizon uint64
	CertKeys    int
	LogFirst    uint64 // first retained log index
	LogBytes    uint64 // bytes of retained log entries
}

// Status returns the core's state.
func (c *Core) Status() Status {
	cs := c.logs.ConfState()
	last, _ := c.logs.LastIndex()
	first, _ := c.logs.FirstIndex()
	logBytes := c.logs.Bytes()
	c.mu.Lock()
	defer c.mu.Unlock()
	return Status{
		ID: c.cfg.Self.ID, Name: c.cfg.Self.Name, ClusterName: c.cfg.ClusterName,
		ClusterUUID: c.clusterUUID, ConfID: c.confID, Leader: c.lead, Term: c.term,
		RaftState: c.raftState.String(), Primary: c.lead != raft.None,
		Voters: cs.GetVoters(), View: c.view, Learners: cs.GetLearners(), Members: c.membersLocked(),
		Applied: c.eng.Applied(), Committed: c.commitIndex, LastIndex: last,
		CertHorizon: c.certHorizon, CertKeys: c.certKeys, LogFirst: first, LogBytes: logBytes,
	}
}

// raftLogger adapts slog to raft.Logger.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...interface{})                 {}
func (r raftLogger) Debugf(format string, v ...interface{}) {}
func (r raftLogger) Error(v ...interface{})                 { r.l.Info("raft: " + fmt.Sprint(v...)) }
func (r raftLogger) Errorf(format string, v ...interface{}) {
	r.l.Info("raft: " + fmt.Sprintf(format, v...))
}
func (r raftLogger) Info(v ...interface{})                 {}
func (r raftLogger) Infof(format string, v ...interface{}) {}
func (r raftLogger) Warning(v ...interface{})              { r.l.Info("raft: " + fmt.Sprint(v...)) }
func (r raftLogger) Warningf(format string, v ...interface{}) {
	r.l.Info("raft: " + fmt.Sprintf(format, v...))
}
func (r raftLogger) Fatal(v ...interface{})                 { panic(fmt.Sprint(v...)) }
func (r raftLogger) Fatalf(format string, v ...interface{}) { panic(fmt.Sprintf(format, v...)) }
func (r raftLogger) Panic(v ...interface{})                 { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(format string, v ...interface{}) { panic(fmt.Sprintf(format, v...)) }
