// Package replication puts write-sets in one total order with etcd raft and
// drives certification and apply on every node.
//
// Core is the IO-free state machine: raft, the raft log in the engine's
// pebble database, certification (package certify) and apply (package
// storage) of committed entries in log order. Node runs a Core with real
// goroutines, a ticker and a Transport. A write-set's seqno is its raft
// index. The origin of a write-set waits for its own entry in the committed
// stream; it recognises it by the write-set id, never by "proposed means
// ordered".
package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/certusdb/certus/certify"
	"github.com/certusdb/certus/flowcontrol"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// ErrNotPrimary is returned when the node is not part of a primary
// component (it cannot reach a quorum), like Galera's non-Primary state.
var ErrNotPrimary = writeset.ErrNotPrimary

// ErrStopped is returned by calls on a stopped node.
var ErrStopped = errors.New("replication: node stopped")

// ErrOutcomeUnknown is returned by Replicate when the node gave up on a
// write-set whose fate it cannot learn (it may still commit). The node
// starts a new incarnation, so the write-set is certified like another
// node's should it land.
var ErrOutcomeUnknown = writeset.ErrOutcomeUnknown

// ErrSyncWaitTimeout is returned when a causal read could not learn or
// reach the cluster's commit position in time.
var ErrSyncWaitTimeout = errors.New("Lock wait timeout exceeded; try restarting transaction")

// Member describes one cluster member; it travels in the context of the
// configuration change that adds it.
type Member struct {
	ID         uint64 `json:"id"`
	Name       string `json:"name"`
	PeerAddr   string `json:"peer_addr"`
	SQLAddr    string `json:"sql_addr,omitempty"`
	HTTPAddr   string `json:"http_addr,omitempty"`
	Arbitrator bool   `json:"arbitrator,omitempty"`
}

// ccContext is the context of a configuration change.
type ccContext struct {
	Member      Member `json:"member"`
	ClusterUUID string `json:"cluster_uuid,omitempty"`
	ClusterName string `json:"cluster_name,omitempty"`
}

// Transport sends raft messages to peers. Incoming messages are handed to
// Node.Step.
type Transport interface {
	// Send sends messages; it must not block the Ready loop for long.
	Send(msgs []*pb.Message)
	// SetMembers tells the transport where members are (adding to and
	// updating what it knows; a node replaying old configuration changes
	// must still reach today's members).
	SetMembers(members []Member)
	// RemoveMember forgets a removed member.
	RemoveMember(id uint64)
	// SendFlow sends a flow control report (flowcontrol.Report, encoded)
	// to member to; it must not block, and may drop the report.
	SendFlow(to uint64, report []byte)
}

// Config configures a Node. Zero durations take the documented defaults.
type Config struct {
	// Self is this node; Self.ID is its raft id.
	Self Member
	// ClusterName must match on every member.
	ClusterName string
	// Engine is the node's storage; the raft log lives in the same pebble.
	Engine *storage.Engine
	// Transport reaches the peers; nil for a cluster of one.
	Transport Transport
	// Bootstrap starts a new cluster of one on empty storage. Without it
	// an empty node waits to be added to a running cluster.
	Bootstrap bool
	// TickInterval is the raft tick (default 50ms).
	TickInterval time.Duration
	// ElectionTicks is the election timeout in ticks (default 20 = 1s).
	ElectionTicks int
	// HeartbeatTicks is the heartbeat interval in ticks (default 2).
	HeartbeatTicks int
	// SyncLog fsyncs every log append before acknowledging it: a commit
	// acknowledged to a client survives power loss. Off, the log is
	// written at once but synced about every SyncInterval (like
	// innodb_flush_log_at_trx_commit=2).
	SyncLog bool
	// SyncInterval is the background sync period when SyncLog is off
	// (default 1s, InnoDB's innodb_flush_log_at_timeout). Each sync is an
	// fdatasync of the pebble WAL; at 10ms they took about 4% of a loaded
	// 3-node cluster's CPU on a 2-core machine.
	SyncInterval time.Duration
	// Cert configures certification.
	Cert certify.Config
	// LogRetentionBytes bounds the raft log kept for lagging followers
	// (see CoreConfig; default DefaultLogRetentionBytes).
	LogRetentionBytes uint64
	// Joiner receives state transfers; nil: the node cannot receive one.
	Joiner StateInstaller
	// Arbitrator runs a member that votes but stores no data.
	Arbitrator bool
	// ApplierThreads is the number of workers that build write-sets'
	// batches ahead of the apply stage (wsrep_applier_threads; default 1:
	// only big write-sets are built ahead). More than one turns on
	// parallel apply: every write-set is built by a worker once the last
	// earlier write-set touching its keys is applied, and the apply stage
	// certifies and commits them in log order.
	ApplierThreads int
	// FlowControl configures flow control (zero fields: the defaults).
	FlowControl flowcontrol.Config
	// SafeReads makes the leader confirm with a heartbeat round that it
	// still leads before it answers a causal read, instead of answering
	// from its lease (see lease.go). The lease relies on the leader's
	// monotonic clock running while the others' do; a virtual machine
	// that can be paused without its clock knowing should not use it.
	SafeReads bool
	// StallDumpDir, when set, receives a file of every goroutine's stack
	// when persisting raft's output has taken over a quarter of an
	// election timeout (at most one a minute): it shows what the loop
	// waits for before the other members start electing a new leader.
	StallDumpDir string
	// Logger receives the node's log; nil uses slog.Default().
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.TickInterval == 0 {
		c.TickInterval = 50 * time.Millisecond
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 20
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = 2
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = time.Second
	}
	if c.Cert.Window == 0 {
		c.Cert = certify.Defaults()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Keys of replication state written with applied seqnos.
var (
	keyHorizon     = []byte{storage.SpaceReplication, 'H'}
	keyClusterUUID = []byte{storage.SpaceReplication, 'U'}
	keyConfID      = []byte{storage.SpaceReplication, 'C'}
	memberPrefix   = []byte{storage.SpaceReplication, 'M'}
	// keyRemoved marks a data dir whose node was removed from the cluster.
	keyRemoved = []byte{storage.SpaceReplication, 'X'}
)

// ErrRemoved is returned when starting a node that was removed from its
// cluster: it must rejoin with a fresh data dir.
var ErrRemoved = errors.New("replication: this node was removed from the cluster")

// WasRemoved reports whether the engine's node was removed from its
// cluster.
func WasRemoved(eng *storage.Engine) (bool, error) {
	_, ok, err := get(eng.DB(), keyRemoved)
	return ok, err
}

func memberKey(id uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte{}, memberPrefix...), id)
}

// Node drives a Replica with goroutines, a ticker, the wall clock and a
// Transport, and makes local commits and causal reads wait for it.
type Node struct {
	cfg  Config
	log  *slog.Logger
	rep  *Replica[waiter, *readWaiter]
	core *Core // rep's
	eng  *storage.Engine

	// originMu orders the records of the origin (saveOrigin)
	originMu sync.Mutex
	// remoteWrites, when set, is told of every applied write-set of
	// another origin (SetRemoteWriteObserver)
	remoteWrites atomic.Pointer[func(ws *writeset.WriteSet, seqno uint64)]

	propc    chan []byte
	confc    chan *pb.ConfChangeV2
	unreachc chan uint64
	handoffc chan leadRequest
	recvc    chan *pb.Message
	loopc    chan struct{} // wakes the raft loop for the replica's Loop
	applyc   chan struct{} // wakes the apply stage
	stopc    chan struct{}
	done     chan struct{}
	applied  chan struct{} // closed when the apply stage ends
	aheadc   chan struct{} // wakes a prepareLoop
	// prepare workers (prepareLoop): workers run, the first applierThreads
	// of them take jobs; prepWG counts them
	workersMu      sync.Mutex
	workers        int
	applierThreads atomic.Int64
	prepWG         sync.WaitGroup
	flowDone       chan struct{} // closed when flowLoop ends
	syncDone       chan struct{} // closed when syncLoop ends (at once with SyncLog)

	flow *Flow

	applyDelay atomic.Int64 // fault injection: extra apply time per entry (ns)
	processing atomic.Int64 // when the raft loop's Process began (unix ns); 0 outside it
	desync     atomic.Bool  // wsrep_desync: ask no flow control of the others

	// appliedCh is closed and replaced at every applied batch (the
	// prepare workers watch it); WaitApplied's callers wait in
	// appliedWaits for their own seqno.
	appliedMu    sync.Mutex
	appliedCh    chan struct{}
	appliedWaits AppliedWaits[chan struct{}]

	ctx    context.Context // ends at Stop; ends a state transfer in progress
	cancel context.CancelFunc

	commitKnown atomic.Bool // the cluster's commit index was learned since start (see learnClusterCommit)

	removedc    chan struct{} // closed when this node's removal applies
	removedOnce sync.Once

	// rollbacks counts the goroutines rolling back streaming
	// transactions (rollbackStreams); Stop waits for them, as they read
	// the storage
	rollbacks sync.WaitGroup
}

// waiter is a local transaction waiting in Replicate for its outcome, or
// for the error that ends its wait (ErrOutcomeUnknown, ErrNotPrimary).
type waiter chan replicated

type replicated struct {
	out writeset.Outcome
	err error
}

// Stats are cumulative counters for status variables.
type Stats struct {
	Replicated, ReplicatedBytes atomic.Uint64
	// ReplicatedKeys counts the certification keys of the local
	// write-sets, ReplicatedKeyBytes their bytes and ReplicatedDataBytes
	// the bytes of their row changes (wsrep_repl_keys, _keys_bytes,
	// _data_bytes)
	ReplicatedKeys, ReplicatedKeyBytes, ReplicatedDataBytes atomic.Uint64
	SentBytes                                               atomic.Uint64 // raft append payload sent to peers
	// Received counts the write-sets of other origins applied here
	// (wsrep_received); ReceivedBytes the raft payload received from
	// peers
	Received, ReceivedBytes atomic.Uint64
	CertFailures            atomic.Uint64 // local write-sets that failed certification
	CertFailuresAll         atomic.Uint64 // all write-sets that failed certification
	Applied                 atomic.Uint64
	ReadIndexRounds         atomic.Uint64
	// LeaseHeld counts the times the leader held answers to reads because
	// its lease was not proven yet.
	LeaseHeld atomic.Uint64
	// LeaseReads counts the reads answered from a published lease without
	// a raft round (LeaseRead), ReadLinkRounds the rounds a follower sent
	// over its read link.
	LeaseReads, ReadLinkRounds atomic.Uint64
	// CommitNotices counts the commit indexes a follower learned from its
	// read link's answers before raft's own messages brought them
	// (LearnCommit).
	CommitNotices atomic.Uint64
	// SyncWaits counts the causal waits (StartSyncWait) sessions waited
	// for; SyncWaitNanos is the time they were blocked in them, and
	// SyncWaitApplyNanos the part of it after the cluster's commit index
	// was known, spent until this node had applied up to it.
	SyncWaits, SyncWaitNanos, SyncWaitApplyNanos atomic.Uint64
	Compactions                                  atomic.Uint64 // raft log compactions
	// DepsDistance sums, over write-sets dispatched to parallel apply,
	// their index minus the index they waited for (DepsCount of them):
	// wsrep_cert_deps_distance is the mean.
	DepsDistance, DepsCount atomic.Uint64
	// ApplyWindow sums, over prepared write-sets committed, the distance
	// from the highest write-set being built to the one committed
	// (ApplyWindowCount of them): wsrep_apply_window is the mean.
	ApplyWindow, ApplyWindowCount atomic.Uint64
}

// Start opens the replication core on cfg.Engine and starts its loop.
func Start(cfg Config) (*Node, error) {
	cfg.defaults()
	n := &Node{
		cfg: cfg, log: cfg.Logger, eng: cfg.Engine,
		propc:     make(chan []byte, 1024),
		confc:     make(chan *pb.ConfChangeV2, 16),
		unreachc:  make(chan uint64, 64),
		handoffc:  make(chan leadRequest),
		removedc:  make(chan struct{}),
		recvc:     make(chan *pb.Message, 4096),
		loopc:     make(chan struct{}, 1),
		applyc:    make(chan struct{}, 1),
		applied:   make(chan struct{}),
		aheadc:    make(chan struct{}, 1),
		flowDone:  make(chan struct{}),
		syncDone:  make(chan struct{}),
		flow:      NewFlow(cfg.FlowControl, time.Now()),
		stopc:     make(chan struct{}),
		done:      make(chan struct{}),
		appliedCh: make(chan struct{}),
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	var bootstrap []Member
	if cfg.Bootstrap {
		bootstrap = []Member{cfg.Self}
	}
	var clock func() time.Duration
	if !cfg.SafeReads {
		start := time.Now()
		clock = func() time.Duration { return time.Since(start) } // monotonic
	}
	var sendLink func(to, ctx uint64) bool
	if link, ok := cfg.Transport.(readLinker); ok {
		sendLink = link.SendReadIndex
	}
	rep, err := NewReplica(ReplicaConfig[waiter, *readWaiter]{
		Core: CoreConfig{
			Self: cfg.Self, ClusterName: cfg.ClusterName, Engine: cfg.Engine, Bootstrap: bootstrap,
			ElectionTicks: cfg.ElectionTicks, HeartbeatTicks: cfg.HeartbeatTicks, SyncLog: cfg.SyncLog,
			ViewTimeoutTicks: max(int(ViewTimeout/cfg.TickInterval), 2*cfg.ElectionTicks), Cert: cfg.Cert, LogRetentionBytes: cfg.LogRetentionBytes, Joiner: cfg.Joiner, Arbitrator: cfg.Arbitrator, Context: n.ctx, Logger: cfg.Logger,
			PrepareAheadBytes: prepareAheadBytes, Now: time.Now, Clock: clock, TickInterval: cfg.TickInterval, OnApplied: n.onApplied, OnQueued: n.wakeApply, OnMembers: n.onMembers,
		},
		Now: time.Now, LastOrigin: lastOrigin(cfg.Engine), NewOrigin: randomOrigin, Flow: n.flow,
		Answer:       func(w waiter, out writeset.Outcome, err error) { w <- replicated{out: out, err: err} },
		AnswerRead:   func(r *readWaiter, index uint64, err error) { r.ch <- readResult{index: index, err: err} },
		SendReadLink: sendLink, Wake: n.wakeLoop, Rotated: n.saveOrigin,
	})
	if err != nil {
		n.cancel()
		return nil, err
	}
	n.rep, n.core = rep, rep.Core()
	n.saveOrigin(rep.Origin())
	if cfg.Transport != nil {
		cfg.Transport.SetMembers(n.core.Members())
	}
	go n.run()
	if cfg.StallDumpDir != "" {
		go n.watchStalls()
	}
	go n.applyLoop()
	n.SetApplierThreads(cfg.ApplierThreads)
	if cfg.Arbitrator {
		close(n.flowDone) // it applies nothing and writes nothing
	} else {
		go n.flowLoop()
	}
	go n.learnClusterCommit()
	if cfg.SyncLog {
		close(n.syncDone)
	} else {
		go n.syncLoop()
	}
	return n, nil
}

// learnClusterCommit asks the leader for the cluster's commit index once,
// right after start, and makes it the end of recovery: until the node has
// applied that far (from the log or by a state transfer) it is not
// Recovered and serves no reads, so a restarted node never answers from
// the state it had before it went away.
func (n *Node) learnClusterCommit() {
	for {
		idx, err := n.ReadIndex(n.ctx)
		if err == nil {
			n.core.RaiseRecoverTo(idx)
			n.commitKnown.Store(true)
			return
		}
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Recovered reports whether the node has learned the cluster's commit
// index since it started and applied everything up to it.
func (n *Node) Recovered() bool { return n.commitKnown.Load() && n.core.Recovered() }

// Core is the node's replication state machine.
func (n *Node) Core() *Core { return n.core }

// Stop stops the node's loop.
func (n *Node) Stop() {
	select {
	case <-n.stopc:
	default:
		close(n.stopc)
	}
	n.cancel()
	<-n.done
	n.rollbacks.Wait() // (the raft loop, which starts them, has ended)
	<-n.applied
	n.prepWG.Wait()
	<-n.flowDone
	<-n.syncDone // (its last sync must not meet a closed engine)
	n.core.dropAhead()
}

// Origin implements txn.Replicator.
func (n *Node) Origin() uint64 { return n.rep.Origin() }

// SetRemoteWriteObserver makes the node call fn, on its apply goroutine,
// after it applied a write-set that another origin (another node, or an
// earlier incarnation of this one) built; seqno is its position.
func (n *Node) SetRemoteWriteObserver(fn func(ws *writeset.WriteSet, seqno uint64)) {
	n.remoteWrites.Store(&fn)
}

// Step hands a message from a peer to the node.
func (n *Node) Step(m *pb.Message) {
	select {
	case n.recvc <- m:
	case <-n.stopc:
	}
}

func (n *Node) run() {
	defer close(n.done)
	if err := n.core.FinishPendingTransfer(); err != nil {
		if n.ctx.Err() == nil {
			n.log.Error("replication stopped: cannot finish the interrupted state transfer", "err", err)
		}
		n.failAll(err)
		<-n.stopc
		return
	}
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	var sendEarly func([]*pb.Message)
	if n.cfg.Transport != nil {
		sendEarly = n.cfg.Transport.Send
	}
	var stalls stallLog
	lastTick := time.Now()
	for {
		select {
		case <-ticker.C:
			now := time.Now() // the tick's own time is old when the loop was stuck
			stalls.note(n, "the raft loop did not tick", now.Sub(lastTick)-n.cfg.TickInterval)
			lastTick = now
			n.core.Tick()
			n.rep.Tick()
			n.rollbackStreams()
		case data := <-n.propc:
			n.rep.Propose(data)
			for more := true; more; {
				select {
				case data := <-n.propc:
					n.rep.Propose(data)
				default:
					more = false
				}
			}
		case m := <-n.recvc:
			n.core.Step(m)
			for more := true; more; {
				select {
				case m := <-n.recvc:
					n.core.Step(m)
				default:
					more = false
				}
			}
		case <-n.loopc:
			n.rep.Loop()
		case cc := <-n.confc:
			n.core.ProposeConfChange(cc)
		case id := <-n.unreachc:
			n.core.ReportUnreachable(id)
		case req := <-n.handoffc:
			if req.take {
				req.reply <- n.core.RequestLeadership()
			} else if !n.core.TransferLeadership() {
				req.reply <- errNoTransfer
			} else {
				req.reply <- nil
			}
		case <-n.stopc:
			n.failAll(ErrStopped)
			return
		}
		start := time.Now()
		n.processing.Store(start.UnixNano())
		msgs, err := n.core.Process(sendEarly)
		n.processing.Store(0)
		stalls.note(n, "persisting raft's output took long", time.Since(start))
		if n.cfg.Transport != nil && len(msgs) > 0 {
			n.cfg.Transport.Send(msgs)
		}
		if n.core.ApplyQueue() > 0 {
			n.wakeApply()
		}
		n.wakeWorker()
		if err != nil {
			if n.ctx.Err() != nil {
				n.failAll(ErrStopped)
				<-n.stopc
				return
			}
			n.log.Error("replication stopped: cannot persist or apply", "err", err)
			n.failAll(err)
			<-n.stopc
			return
		}
	}
}

// rollbackStreams proposes the rollbacks of streaming transactions the
// replica decides on (Replica.Rollbacks), reading them and waiting for
// each in turn on a goroutine of its own. Raft loop.
func (n *Node) rollbackStreams() {
	b, ok := n.rep.Rollbacks(!n.cfg.Arbitrator && n.Recovered())
	if !ok {
		return
	}
	msg := "rolled back a streaming transaction of a member out of reach"
	if b.Stale {
		msg = "rolled back a streaming transaction this node began before its restart"
	}
	n.rollbacks.Add(1)
	go func() {
		defer n.rollbacks.Done()
		for _, ws := range n.rep.RollbacksOf(b) {
			ctx, cancel := context.WithTimeout(n.ctx, time.Minute)
			out, err := n.Replicate(ctx, ws)
			cancel()
			n.rep.RolledBack()
			n.log.Info(msg, "transaction", ws.Stream.ID, "node", ws.Stream.Node, "seqno", out.Seqno, "err", err)
		}
	}()
}

// wakeApply wakes the apply stage.
func (n *Node) wakeApply() {
	select {
	case n.applyc <- struct{}{}:
	default:
	}
}

// applyLoop is the apply stage: it certifies and applies the committed
// entries the raft loop queues, so a long apply (a big transaction, an
// index build) never stops raft's heartbeats.
func (n *Node) applyLoop() {
	defer close(n.applied)
	for {
		select {
		case <-n.applyc:
		case <-n.stopc:
			return
		}
		for {
			batch, delay := 64, time.Duration(n.applyDelay.Load())
			if delay > 0 {
				batch = 1 // a slow node applies one at a time
			}
			k, err := n.applyNext(batch)
			if delay > 0 && k > 0 {
				time.Sleep(delay)
			}
			if k > 0 {
				n.appliedMu.Lock()
				close(n.appliedCh)
				n.appliedCh = make(chan struct{})
				n.appliedMu.Unlock()
			}
			if err != nil {
				n.log.Error("replication stopped: cannot apply", "err", err)
				n.failAll(err)
				<-n.stopc
				return
			}
			if k == 0 {
				break
			}
			select {
			case <-n.stopc:
				return
			default:
			}
		}
	}
}

// applyNext applies up to max queued entries and wakes the causal reads
// waiting for each as soon as it is applied (a read waiting for the first
// entry of a batch waited for the whole batch).
func (n *Node) applyNext(max int) (int, error) {
	k := 0
	for k < max {
		j, err := n.core.ApplyNext(1)
		if j > 0 {
			k += j
			n.appliedWaits.Release(n.eng.Applied(), func(ch chan struct{}) { close(ch) })
		}
		if err != nil || j == 0 {
			return k, err
		}
	}
	return k, nil
}

// prepareAheadBytes is the write-set size from which a node builds its
// batch as soon as it reaches the log (Core.PrepareAhead).
const prepareAheadBytes = 1 << 20

// SetApplierThreads sets the number of prepare workers
// (wsrep_applier_threads); more than one turns on parallel apply (see
// Config.ApplierThreads). Workers are started as needed; surplus ones
// idle.
func (n *Node) SetApplierThreads(k int) {
	k = max(k, 1)
	n.applierThreads.Store(int64(k))
	n.core.SetParallelApply(k > 1)
	n.workersMu.Lock()
	for n.workers < k {
		n.workers++
		n.prepWG.Add(1)
		go n.prepareLoop(n.workers)
	}
	n.workersMu.Unlock()
	n.wakeWorker()
}

// ApplierThreads returns the number of prepare workers taking jobs.
func (n *Node) ApplierThreads() int { return int(n.applierThreads.Load()) }

// wakeWorker wakes a prepare worker if a job waits for one.
func (n *Node) wakeWorker() {
	if !n.core.aheadWaiting() {
		return
	}
	select {
	case n.aheadc <- struct{}{}:
	default:
	}
}

// prepareLoop is prepare worker id: it builds write-sets' batches ahead of
// the apply stage, so that their apply only commits a ready batch. It
// waits for what a job depends on by watching the applied seqno.
func (n *Node) prepareLoop(id int) {
	defer n.prepWG.Done()
	pause := func() bool {
		n.appliedMu.Lock()
		ch := n.appliedCh
		n.appliedMu.Unlock()
		select {
		case <-n.stopc:
			return false
		case <-ch:
			return true
		case <-time.After(5 * time.Millisecond):
			return true
		}
	}
	for {
		select {
		case <-n.aheadc:
		case <-n.stopc:
			return
		}
		if int64(id) > n.applierThreads.Load() {
			continue // surplus (the raft loop wakes a worker again while jobs wait)
		}
		for n.core.PrepareAhead(pause) {
			n.wakeWorker() // another job waits: let a second worker take it
		}
	}
}

// onApplied counts the write-sets of other origins and tells the remote
// write observer of them (before the replica answers a local waiter).
func (n *Node) onApplied(ws *writeset.WriteSet, out writeset.Outcome) {
	if ws.ID.Origin == n.rep.Origin() {
		return
	}
	n.core.stats.Received.Add(1)
	if f := n.remoteWrites.Load(); f != nil && out.Committed {
		(*f)(ws, out.Seqno)
	}
}

func (n *Node) onMembers(members []Member, removed []uint64) {
	for _, id := range removed {
		if id == n.cfg.Self.ID {
			n.removedOnce.Do(func() { close(n.removedc) })
		}
	}
	if n.cfg.Transport == nil {
		return
	}
	n.cfg.Transport.SetMembers(members)
	for _, id := range removed {
		n.cfg.Transport.RemoveMember(id)
		n.flow.Forget(id)
	}
}
