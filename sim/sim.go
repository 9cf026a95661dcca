// Package sim runs N Certus replicas (replication.Replica, the node's
// logic a replication.Node drives in production) in one goroutine on a
// simulated network and clock, injects faults from a seed and checks
// invariants as it goes. The replicas are the production code (raft, the
// raft log and state in pebble on an in-memory crashable filesystem,
// certification, apply, and the node's policy over its write-sets, reads
// and stream rollbacks); only the network, the clock and the clients are
// simulated. The same seed gives the same run, event for event, and the
// same trace digest, so any failure replays from its seed:
//
//	certus sim --seed S
//
// Faults: message loss, duplication, delay and reordering; partitions and
// healing; node crashes that lose unsynced writes (a random part of them),
// some in the middle of a log write the apply stage ran ahead of, followed
// by restarts; pauses (a node that stops ticking and answering for a
// while, like SIGSTOP); and a slow member, which flow control (the node's
// own replication.Flow) may hold the writers back for. Workload: bank transfers and registers,
// written with row-lock discipline (as the origin's InnoDB-style locks
// would) and read with wsrep_sync_wait-style causal reads.
//
// Checkers: every node applies the same write-set with the same verdict and
// reaches the same state digest at every seqno; the bank total never
// changes on any node; every acknowledged commit is committed on every node
// that reaches its seqno (including after a crash and replay); the register
// history is linearizable (porcupine); and at the end, healed and quiet,
// all nodes converge.
package sim

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	mrand "math/rand"
	rand2 "math/rand/v2"
	"runtime/debug"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/certusdb/certus/certify"
	"github.com/certusdb/certus/flowcontrol"
	"github.com/certusdb/certus/replication"
	"github.com/certusdb/certus/statetransfer"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// Config configures one run. Zero sizes take the values of Defaults; zero
// fault rates mean no such fault (use Defaults(seed) for the seed's mix).
type Config struct {
	// Seed determines everything else.
	Seed int64
	// Nodes is the cluster size.
	Nodes int
	// Ticks is how long faults and new client operations go on; a quiet,
	// healed phase of QuietTicks follows.
	Ticks      int
	QuietTicks int
	// ClientsPerNode run on each node.
	ClientsPerNode int
	// Accounts and Registers size the workload's tables.
	Accounts  int
	Registers int
	// Net are the network faults (chosen from the seed when zero).
	Net NetFaults
	// CrashEvery, PartitionEvery and PauseEvery are the mean number of
	// ticks between such faults (0: never).
	CrashEvery, PartitionEvery, PauseEvery int
	// WipeEvery is the mean number of ticks, in the first half of the run,
	// between disk losses: a node loses its data dir and joins again as a
	// new member with its name and address, which replaces the old one
	// (replication.JoinChange). One at a time.
	WipeEvery int
	// LeadEvery is the mean number of ticks between moves of the
	// leadership an operator or a shutdown asks for: a node asks to lead
	// (replication.Core.RequestLeadership, as TakeLeadership does), or the
	// leader hands leadership to the member whose log is longest
	// (Core.TransferLeadership, as a node does before it stops).
	LeadEvery int
	// CertWindow is the certification window (small, to exercise pruning).
	CertWindow uint64
	// LogRetention is the raft log retention in bytes (small, so that
	// lagging nodes need state transfers).
	LogRetention uint64
	// SlowApply makes the apply stages fall behind raft now and then.
	SlowApply bool
	// ParallelApply builds small write-sets ahead of their turn, each
	// tick a seeded few, whenever what they depend on is applied (a real
	// node's parallel apply workers); without it every write-set is
	// prepared in its turn.
	ParallelApply bool
	// Streams runs half of the transfers as streaming transactions: a
	// fragment debits one account, the commit credits the other.
	Streams bool
	// FlowControl runs each node's flow control (replication.Flow, with a
	// receive queue limit of flowLimit): nodes observe their queues every
	// replication.FlowInterval and send their reports over the simulated
	// network, and clients wait for its admission before each write.
	FlowControl bool
	// SlowMember makes one node apply one write-set every slowApplyTicks
	// through the middle half of the run.
	SlowMember bool
	// Trace, when set, receives one line per event.
	Trace io.Writer
	// Log, when set, receives the nodes' own log (for debugging a seed).
	Log io.Writer
}

// Defaults returns the default configuration for a seed: faults and
// their rates are drawn from the seed.
func Defaults(seed int64) Config {
	r := mrand.New(mrand.NewSource(seed ^ 0x5eed))
	return Config{
		Seed: seed, Nodes: 3, Ticks: 600, QuietTicks: 300, ClientsPerNode: 2,
		Accounts: 6, Registers: 3,
		Net: NetFaults{
			Drop:      []float64{0, 0.01, 0.05, 0.15}[r.Intn(4)],
			Duplicate: []float64{0, 0.01, 0.05}[r.Intn(3)],
			MaxDelay:  1 + r.Intn(6),
		},
		CrashEvery:     []int{0, 150, 400}[r.Intn(3)],
		PartitionEvery: []int{0, 120, 300}[r.Intn(3)],
		PauseEvery:     []int{0, 200}[r.Intn(2)],
		CertWindow:     []uint64{50, 500, 100000}[r.Intn(3)],
		LogRetention:   []uint64{1 << 10, 4 << 10, 1 << 30}[r.Intn(3)],
		SlowApply:      r.Intn(2) == 0,
		ParallelApply:  r.Intn(2) == 0,
		Streams:        r.Intn(2) == 0,
		FlowControl:    r.Intn(2) == 0,
		SlowMember:     r.Intn(3) == 0,
		WipeEvery:      []int{0, 0, 300}[r.Intn(3)],
		LeadEvery:      []int{0, 100}[r.Intn(2)],
	}
}

func (c *Config) fill() {
	d := Defaults(c.Seed)
	if c.Nodes == 0 {
		c.Nodes = d.Nodes
	}
	if c.Ticks == 0 {
		c.Ticks = d.Ticks
	}
	if c.QuietTicks == 0 {
		c.QuietTicks = d.QuietTicks
	}
	if c.ClientsPerNode == 0 {
		c.ClientsPerNode = d.ClientsPerNode
	}
	if c.Accounts == 0 {
		c.Accounts = d.Accounts
	}
	if c.Registers == 0 {
		c.Registers = d.Registers
	}
	if c.Net == (NetFaults{}) {
		c.Net = d.Net
	}
	if c.CertWindow == 0 {
		c.CertWindow = d.CertWindow
	}
	if c.LogRetention == 0 {
		c.LogRetention = d.LogRetention
	}
}

// Result is the outcome of a run.
type Result struct {
	Seed int64
	// Digest is the SHA-256 of the run's event trace.
	Digest string
	// Err is the first invariant violation, or nil.
	Err error
	// Counters.
	Commits, CertFailures, Unknown, Reads int
	// Fragments counts fragments of streaming transactions that passed.
	Fragments                   int
	Crashes, Partitions, Pauses int
	// Wipes counts disk losses (Config.WipeEvery).
	Wipes int
	// LinkRounds counts the read rounds followers asked over read links,
	// CommitNotices the links' answers a follower committed from
	// (replication.Core.LearnCommit).
	LinkRounds, CommitNotices int
	// Throttled counts the ticks clients waited for flow control's
	// admission; MaxQueue is the longest receive queue (committed, not
	// applied) a node had, MaxSlowQueue the slow member's, and
	// SlowQueueEnd the slow member's as its slow time ends.
	Throttled                            int
	MaxQueue, MaxSlowQueue, SlowQueueEnd uint64
	Applied                              uint64
	MessagesDropped, MessagesDuplicated  uint64
}

// Replay is the command that reproduces a seed.
func Replay(seed int64) string { return fmt.Sprintf("certus sim --seed %d", seed) }

// Run runs one simulation. Runs must not overlap: the run replaces the
// process's crypto/rand reader with one derived from the seed (raft draws
// its election timeouts from it).
func Run(cfg Config) (res *Result) {
	cfg.fill()
	restore := seedCryptoRand(cfg.Seed)
	defer restore()
	w := newWorld(cfg)
	res = &Result{Seed: cfg.Seed}
	defer func() {
		if r := recover(); r != nil {
			res.Err = fmt.Errorf("panic at tick %d: %v\n%s", w.tick, r, debug.Stack())
		}
		res.Applied = w.maxApplied()
		w.close()
		res.Digest = fmt.Sprintf("%x", w.trace.Sum(nil))
		res.Commits, res.CertFailures, res.Unknown, res.Reads = w.commits, w.certFailures, w.unknown, w.reads
		res.Fragments = w.fragments
		res.Crashes, res.Partitions, res.Pauses, res.Wipes = w.crashes, w.partitions, w.pauses, w.wipes
		res.CommitNotices, res.LinkRounds = w.notices, w.linkRounds
		res.Throttled, res.MaxQueue, res.MaxSlowQueue, res.SlowQueueEnd = w.throttled, w.maxQueue, w.maxSlowQueue, w.slowQueueEnd
		res.MessagesDropped, res.MessagesDuplicated = w.net.dropped, w.net.duped
	}()
	if err := w.start(); err != nil {
		res.Err = err
		return res
	}
	res.Err = w.run()
	return res
}

// seedCryptoRand makes crypto/rand deterministic for the run.
func seedCryptoRand(seed int64) func() {
	old := rand.Reader
	rand.Reader = &seededReader{r: mrand.New(mrand.NewSource(seed ^ 0x7a3d))}
	return func() { rand.Reader = old }
}

type seededReader struct{ r *mrand.Rand }

func (s *seededReader) Read(p []byte) (int, error) { return s.r.Read(p) }

// world is one simulation.
type world struct {
	cfg   Config
	r     *mrand.Rand
	tick  int64
	clock int64 // event counter, for the linearizability history
	net   *network
	nodes []*node
	trace interface {
		io.Writer
		Sum([]byte) []byte
	}
	log *slog.Logger

	// what the first node to apply each seqno decided; every node must agree
	wsAt       map[uint64]writeset.ID
	okAt       map[uint64]bool
	digestAt   map[uint64]storage.Digest
	acked      map[writeset.ID]uint64 // acknowledged commits and their seqnos
	history    []operation
	accounts   *storage.TableDef
	registers  *storage.TableDef
	quiet      bool
	failure    error
	setupFirst uint64 // commit index when the schema was first proposed

	commits, certFailures, unknown, reads int
	fragments                             int
	crashes, partitions, pauses           int
	notices, linkRounds                   int
	wipes                                 int
	// lastID is the highest member id given out
	lastID                               uint64
	throttled                            int
	maxQueue, maxSlowQueue, slowQueueEnd uint64
	// slow is the slow member's id (0: none)
	slow uint64
}

const (
	accountsTable  = 100
	registersTable = 101
	initialBalance = 100
)

func newWorld(cfg Config) *world {
	r := mrand.New(mrand.NewSource(cfg.Seed))
	logOut := io.Discard
	if cfg.Log != nil {
		logOut = cfg.Log
	}
	w := &world{
		cfg: cfg, r: r, net: newNetwork(r, cfg.Net), trace: sha256.New(),
		log:      slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelDebug})),
		wsAt:     map[uint64]writeset.ID{},
		okAt:     map[uint64]bool{},
		digestAt: map[uint64]storage.Digest{},
		acked:    map[writeset.ID]uint64{},
	}
	w.accounts = &storage.TableDef{ID: accountsTable, DB: "sim", Name: "accounts", NextColumnID: 3, NextIndexID: 1,
		Columns: []storage.ColumnDef{{ID: 1, Name: "id", Type: "bigint"}, {ID: 2, Name: "balance", Type: "bigint"}}, PK: []uint32{1}}
	w.registers = &storage.TableDef{ID: registersTable, DB: "sim", Name: "registers", NextColumnID: 3, NextIndexID: 1,
		Columns: []storage.ColumnDef{{ID: 1, Name: "id", Type: "bigint"}, {ID: 2, Name: "v", Type: "bigint"}}, PK: []uint32{1}}
	return w
}

// event records one line of the trace.
func (w *world) event(format string, args ...any) {
	line := fmt.Sprintf("%06d ", w.tick) + fmt.Sprintf(format, args...) + "\n"
	_, _ = io.WriteString(w.trace, line)
	if w.cfg.Trace != nil {
		_, _ = io.WriteString(w.cfg.Trace, line)
	}
}

// fail records the first invariant violation.
func (w *world) fail(format string, args ...any) {
	if w.failure == nil {
		w.failure = fmt.Errorf("tick %d: %s", w.tick, fmt.Sprintf(format, args...))
		w.event("FAIL %v", w.failure)
	}
}

func (w *world) members() []replication.Member {
	var ms []replication.Member
	for i := 1; i <= w.cfg.Nodes; i++ {
		ms = append(ms, replication.Member{ID: uint64(i), Name: fmt.Sprintf("n%d", i), PeerAddr: fmt.Sprintf("sim:%d", i)})
	}
	return ms
}

func (w *world) start() error {
	if w.cfg.SlowMember {
		w.slow = uint64(1 + w.r.Intn(w.cfg.Nodes))
		w.event("n%d is slow from tick %d to %d", w.slow, w.cfg.Ticks/4, w.cfg.Ticks*3/4)
	}
	w.lastID = uint64(w.cfg.Nodes)
	for _, m := range w.members() {
		n := &node{w: w, id: m.ID, member: m, fs: vfs.NewCrashableMem(), locks: map[string]*client{}}
		if err := n.open(); err != nil {
			return err
		}
		w.nodes = append(w.nodes, n)
		for c := 0; c < w.cfg.ClientsPerNode; c++ {
			n.clients = append(n.clients, &client{n: n, id: len(w.nodes)*100 + c})
		}
	}
	return nil
}

func (w *world) close() {
	for _, n := range w.nodes {
		n.shutdown(false)
	}
}

func (w *world) node(id uint64) *node {
	for _, n := range w.nodes {
		if n.id == id {
			return n
		}
	}
	return nil // a member whose disk was lost
}

// run drives the simulation to its end and returns the first violation.
func (w *world) run() error {
	total := int64(w.cfg.Ticks + w.cfg.QuietTicks)
	for w.tick = 1; w.tick <= total && w.failure == nil; w.tick++ {
		if w.tick == int64(w.cfg.Ticks)+1 {
			w.beginQuiet()
		}
		if !w.quiet {
			w.injectFaults()
		}
		for _, n := range w.nodes {
			if !n.up && w.tick >= n.restartAt {
				n.restart()
			}
		}
		w.step()
		if w.tick%10 == 0 {
			w.checkBank()
		}
	}
	if w.failure != nil {
		return w.failure
	}
	w.checkConverged()
	if w.failure == nil {
		w.checkLinearizable()
	}
	w.event("end applied=%d commits=%d certfail=%d unknown=%d reads=%d", w.maxApplied(), w.commits, w.certFailures, w.unknown, w.reads)
	return w.failure
}

func (w *world) maxApplied() uint64 {
	m := uint64(0)
	for _, n := range w.nodes {
		if n.up {
			m = max(m, n.eng.Applied())
		}
	}
	return m
}

// step advances every node by one tick.
func (w *world) step() {
	for _, m := range w.net.due(w.tick) {
		n := w.node(m.GetTo())
		switch {
		case n == nil || !n.up:
		case n.pausedUntil > w.tick:
			w.net.send(n.pausedUntil-1, []*pb.Message{m}) // delivered after the pause
		case isFlowReport(m):
			n.receiveFlow(m)
		case isLinkRequest(m):
			n.answerReadLink(m)
		case isLinkAnswer(m):
			n.finishLinkRead(m)
		default:
			n.core.Step(m)
		}
	}
	for _, n := range w.nodes {
		if !n.up || n.pausedUntil > w.tick {
			continue
		}
		n.core.Tick()
		n.tickChecks()
		n.loop()
		if n.joining && w.tick%joinTicks == 0 {
			n.join()
		}
		if !w.quiet || n.pendingWork() {
			for _, c := range n.clients {
				c.step()
			}
		}
		n.process()
		if n.up && n.flow != nil && w.tick%flowTicks == 0 {
			n.observeFlow()
		}
		if n.up {
			committed := n.core.Committed()
			q := committed - min(committed, n.eng.Applied())
			w.maxQueue = max(w.maxQueue, q)
			if n.id == w.slow {
				w.maxSlowQueue = max(w.maxSlowQueue, q)
				if w.tick == int64(w.cfg.Ticks*3/4)-1 {
					w.slowQueueEnd = q
				}
			}
		}
	}
}

// simTick is the real time a tick of the simulation stands for.
const simTick = time.Millisecond

// clockTime is the world's monotonic clock: it runs on while a node is
// paused, as a real one does while its process is stopped.
func (w *world) clockTime() time.Duration { return time.Duration(w.tick) * simTick }

// now is the world's clock as a time, for replication.Proposals.
func (w *world) now() time.Time { return time.Unix(0, 0).Add(w.clockTime()) }

// process lets the node's core handle what it has ready.
func (n *node) process() {
	msgs, err := n.core.Process(func(early []*pb.Message) { n.w.net.send(n.w.tick, early) })
	if n.transferFailed {
		// the node gave up a state transfer: down until its restart,
		// which finishes the transfer first
		n.w.event("n%d down in the middle of a state transfer: %v", n.id, err)
		n.transferFailed = false
		n.crash()
		return
	}
	if err != nil {
		n.w.fail("node %d: %v", n.id, err)
		return
	}
	if n.crashImage != nil {
		n.w.crashes++
		n.w.event("n%d crashed while writing its log", n.id)
		n.crash()
		return
	}
	n.w.net.send(n.w.tick, msgs)
	n.prepareAhead()
	if !n.apply() {
		return
	}
	n.prepareAhead()
	n.progress()
}

// apply runs the apply stage: it runs on its own in a real node; here it
// takes a seeded share of the queue each time, so appliers fall behind
// raft. False when the node failed.
func (n *node) apply() bool {
	budget := 1 << 30
	if n.w.cfg.SlowApply && n.w.r.Intn(3) == 0 {
		budget = n.w.r.Intn(3)
	}
	if n.slowNow() {
		if n.w.tick < n.slowNext {
			return true
		}
		budget, n.slowNext = 1, n.w.tick+slowApplyTicks
	}
	if _, err := n.core.ApplyNext(budget); err != nil {
		n.w.fail("node %d: apply: %v", n.id, err)
		return false
	}
	return true
}

// onQueued runs the apply stage while the core is about to write its log
// (in a real node the two overlap), and now and then takes the image of
// the disk a crash in the middle of that write would leave: the node
// crashes with it once Process returns.
func (n *node) onQueued() {
	if !n.apply() {
		return
	}
	if c := n.w.cfg.CrashEvery; c > 0 && !n.w.quiet && n.crashImage == nil && n.w.r.Intn(c) == 0 {
		n.crashImage = n.crashClone()
	}
}

// prepareAhead builds a seeded few write-sets ahead of their turn (parallel
// apply); one whose dependencies are not applied yet gives up and is
// applied in its turn.
func (n *node) prepareAhead() {
	if !n.w.cfg.ParallelApply {
		return
	}
	for k := n.w.r.Intn(4); k > 0 && n.core.PrepareAhead(func() bool { return false }); k-- {
	}
}

// prepareAheadBytes is the sim's threshold for preparing a write-set ahead:
// with parallel apply, the sim's small write-sets go by their dependencies;
// without, every one takes the prepared path in its turn.
func prepareAheadBytes(parallel bool) int {
	if parallel {
		return 1 << 20
	}
	return 1
}

func (w *world) injectFaults() {
	c := w.cfg
	if c.CrashEvery > 0 && w.r.Intn(c.CrashEvery) == 0 {
		n := w.nodes[w.r.Intn(len(w.nodes))]
		if n.up {
			w.crashes++
			n.crash()
		}
	}
	if c.PartitionEvery > 0 && w.r.Intn(c.PartitionEvery) == 0 {
		if w.net.partitioned() {
			w.net.heal()
			w.event("heal")
		} else {
			w.partitions++
			// cut off one node, or split into two groups
			ids := make([]uint64, len(w.nodes))
			for i, n := range w.nodes {
				ids[i] = n.id
			}
			w.r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			k := 1 + w.r.Intn(len(ids)-1)
			w.net.isolate(ids[:k], ids[k:])
			w.event("partition %v | %v", ids[:k], ids[k:])
		}
	}
	if c.WipeEvery > 0 && w.tick < int64(c.Ticks/2) && w.r.Intn(c.WipeEvery) == 0 {
		n := w.nodes[w.r.Intn(len(w.nodes))]
		if n.up && !slices.ContainsFunc(w.nodes, func(n *node) bool { return n.joining }) {
			w.wipes++
			n.wipe()
		}
	}
	if c.LeadEvery > 0 && w.r.Intn(c.LeadEvery) == 0 {
		if n := w.nodes[w.r.Intn(len(w.nodes))]; n.up && n.pausedUntil <= w.tick {
			if w.r.Intn(2) == 0 {
				w.event("n%d asks to lead: %v", n.id, n.core.RequestLeadership())
			} else if n.core.TransferLeadership() {
				w.event("n%d hands leadership over", n.id)
			}
		}
	}
	if c.PauseEvery > 0 && w.r.Intn(c.PauseEvery) == 0 {
		n := w.nodes[w.r.Intn(len(w.nodes))]
		if n.up && n.pausedUntil <= w.tick {
			w.pauses++
			n.pausedUntil = w.tick + int64(10+w.r.Intn(60))
			w.event("pause n%d until %d", n.id, n.pausedUntil)
		}
	}
}

// beginQuiet heals everything and restarts crashed nodes; no new client
// operations start, pending ones finish.
func (w *world) beginQuiet() {
	w.quiet = true
	w.net.heal()
	w.net.faults = NetFaults{MaxDelay: 1}
	for _, n := range w.nodes {
		n.pausedUntil = 0
		if !n.up {
			n.restart()
		}
	}
	w.event("quiet")
}

// sortedIDs returns the keys of m in order.
func sortedIDs[V any](m map[uint64]V) []uint64 { return slices.Sorted(maps.Keys(m)) }

// node is one simulated member.
type node struct {
	w      *world
	id     uint64
	member replication.Member
	fs     *vfs.MemFS
	eng    *storage.Engine
	rep    *replication.Replica[*op, *op] // the node's logic (nil while down)
	core   *replication.Core              // rep's
	up     bool
	// woken is set when the replica asked for its Loop (Wake)
	woken bool

	seq         uint64
	restartAt   int64
	pausedUntil int64
	incarnation int
	// crashImage, when set, is the disk a crash in the middle of the
	// current log write leaves (see onQueued).
	crashImage *vfs.MemFS

	clients []*client
	locks   map[string]*client
	retire  *op                           // the retirement of an earlier incarnation in flight
	links   map[uint64]bool               // the nodes it has read links to
	indexed replication.AppliedWaits[*op] // causal reads with their index, waiting for it to apply
	lastApp uint64

	donor          *statetransfer.Donor
	joiner         *statetransfer.Joiner
	transferCtx    context.Context
	transferCancel context.CancelFunc
	attempts       int  // donor connections of the current transfer
	transferFailed bool // the node gave up a transfer: it goes down
	// flow is the node's flow control (nil without Config.FlowControl)
	flow *replication.Flow
	// slowNext is when the slow member may apply its next write-set
	slowNext int64
	// joining is set from a disk loss until the node is a voter again
	joining bool
	// lastOrigin is the origin of its last run, which it retires
	lastOrigin uint64
}

func (n *node) open() error {
	eng, err := storage.Open(storage.Config{Dir: "db", FS: n.fs, CacheBytes: 4 << 20, MemTableBytes: 64 << 20, RowCacheBytes: 8 << 20, LogSpans: replication.LogSpans()})
	if err != nil {
		return fmt.Errorf("node %d: open: %w", n.id, err)
	}
	n.eng = eng
	if err := n.openTransfer(); err != nil {
		eng.Close()
		return fmt.Errorf("node %d: state transfer: %w", n.id, err)
	}
	bootstrap := n.w.members()
	if n.joining {
		bootstrap = nil // it waits to be added
	}
	n.flow = nil
	if n.w.cfg.FlowControl {
		n.flow = replication.NewFlow(flowcontrol.Config{Limit: flowLimit}, n.w.now())
	}
	rep, err := replication.NewReplica(replication.ReplicaConfig[*op, *op]{
		Core: replication.CoreConfig{
			Self: n.member, ClusterName: "sim", Engine: eng, Bootstrap: bootstrap,
			ClusterUUID: fmt.Sprintf("sim-%d", n.w.cfg.Seed), SyncLog: true,
			Cert:              certify.Config{Window: n.w.cfg.CertWindow, MaxKeys: 1 << 20},
			LogRetentionBytes: n.w.cfg.LogRetention,
			PrepareAheadBytes: prepareAheadBytes(n.w.cfg.ParallelApply),
			Joiner:            n.joiner,
			Context:           n.transferCtx,
			Logger:            n.w.log,
			OnApplied:         n.onApplied, OnQueued: n.onQueued,
			Clock:        n.w.clockTime,
			TickInterval: simTick,
		},
		Now: n.w.now, Flow: n.flow,
		// the earlier incarnation is retired, as a node's is after its restart
		LastOrigin: n.lastOrigin,
		NewOrigin: func() uint64 {
			n.incarnation++
			return n.id<<32 | uint64(n.incarnation)
		},
		Answer: n.answer, AnswerRead: n.answerRead, SendReadLink: n.sendReadLink,
		Wake:    func() { n.woken = true },
		Orphans: orphanTicks * simTick, OrphanCheck: orphanCheckTicks * simTick,
	})
	if err == nil {
		err = rep.Core().FinishPendingTransfer()
	}
	if err != nil {
		n.donor.Close()
		eng.Close()
		return fmt.Errorf("node %d: start: %w", n.id, err)
	}
	rep.Core().SetParallelApply(n.w.cfg.ParallelApply)
	n.rep, n.core, n.up, n.woken = rep, rep.Core(), true, false
	n.links = map[uint64]bool{}
	n.lastApp = eng.Applied()
	return nil
}

// shutdown closes the node's storage; with crash set it keeps only what
// was synced, plus a random part of what was not.
func (n *node) shutdown(crash bool) {
	if !n.up {
		return
	}
	n.up = false
	var crashed *vfs.MemFS
	if crash {
		crashed = n.crashImage
		if crashed == nil {
			crashed = n.crashClone()
		}
	}
	n.crashImage = nil
	n.donor.Close()
	_ = n.eng.Close()
	if crash {
		n.fs = crashed
	}
	n.eng, n.rep, n.core = nil, nil, nil
}

// crashClone is the disk as a crash now leaves it: what was synced and a
// seeded part of what was not.
func (n *node) crashClone() *vfs.MemFS {
	seed := n.w.r.Uint64()
	return n.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: n.w.r.Intn(100), RNG: rand2.New(rand2.NewPCG(seed, seed^0x9e37))})
}

func (n *node) crash() {
	n.w.event("crash n%d applied=%d", n.id, n.eng.Applied())
	rep := n.rep
	n.shutdown(true)
	// local transactions die with the node; their outcome is unknown
	n.lastOrigin = rep.Origin()
	for _, o := range rep.Clear(errCrashed) {
		o.finish(outcomeUnknown)
	}
	n.restartAt = n.w.tick + int64(20+n.w.r.Intn(150))
	n.locks = map[string]*client{}
	n.indexed = replication.AppliedWaits[*op]{}
	for _, c := range n.clients {
		c.cur = nil
	}
	n.w.linksDown(n.id)
}

func (n *node) restart() {
	if err := n.open(); err != nil {
		if n.transferFailed {
			// the interrupted transfer could not finish yet: try later
			n.transferFailed = false
			n.restartAt = n.w.tick + 20
			n.w.event("restart n%d postponed: %v", n.id, err)
			return
		}
		n.w.fail("restart n%d: %v", n.id, err)
		return
	}
	n.w.event("restart n%d applied=%d", n.id, n.eng.Applied())
}

// tickChecks runs the replica's periodic policy (re-proposal, giving up,
// read rounds' timeout: Replica.Tick) and the node's rollback of orphaned
// streams, and starts the retirement of an earlier incarnation, as
// replication.Node does.
func (n *node) tickChecks() {
	n.rep.Tick()
	n.rollbackStreams()
	if olds := n.rep.Retiring(); len(olds) > 0 && n.retire == nil && !n.w.quiet && n.ready() {
		// as replication.Node.RetireOrigins, one at a time
		n.seq++
		ws := replication.Retirement(olds[0], n.seq)
		n.retire = &op{n: n, kind: opRetire, ws: ws, pos: n.eng.Applied(), firstAt: n.w.tick}
		n.w.event("n%d retires origin %x", n.id, olds[0])
		n.rep.Propose(n.rep.Submit(ws, n.retire))
	}
}

// loop runs the replica's Loop when it asked for it (a node's raft loop
// does so between its other events).
func (n *node) loop() {
	if !n.woken {
		return
	}
	n.woken = false
	before := n.core.Stats().CommitNotices.Load()
	n.rep.Loop()
	if n.core.Stats().CommitNotices.Load() > before {
		n.w.notices++
		n.w.event("n%d commits up to %d from a read answer", n.id, n.core.Committed())
	}
}

// errCrashed answers the reads of a node that crashed.
var errCrashed = errors.New("sim: node crashed")

// answer ends o with the outcome the replica gives it.
func (n *node) answer(o *op, out writeset.Outcome, err error) {
	switch {
	case errors.Is(err, replication.ErrNotPrimary):
		n.w.event("n%d gives up on %v: not in a primary component", n.id, o.ws.ID)
		n.abandon(o)
	case err != nil:
		n.abandon(o)
	default:
		o.seqno = out.Seqno
		if out.Committed {
			o.finish(outcomeCommitted)
		} else {
			o.finish(outcomeFailed)
		}
	}
}

// answerRead gives a read its index, to wait for until it is applied; a
// read that failed ends (a node's caller gets the error and retries).
func (n *node) answerRead(o *op, index uint64, err error) {
	if err != nil {
		if o.c.cur == o {
			o.c.cur = nil
		}
		return
	}
	o.readIndex = index
	n.indexed.Add(index, o)
}

// abandon ends o, whose outcome is unknown (its node's replica started a
// new incarnation, so the write-set is certified like another node's if
// it lands).
func (n *node) abandon(o *op) {
	o.finish(outcomeUnknown)
	n.w.event("n%d abandons %v, new origin %x", n.id, o.ws.ID, n.rep.Origin())
}

// pendingWork reports whether local operations are still waiting.
func (n *node) pendingWork() bool {
	return n.rep.Waiting() > 0 || n.rep.Reading() > 0 || n.indexed.Len() > 0
}

// onApplied checks every applied write-set against what the other nodes
// decided at the same seqno (the replica then answers local clients).
func (n *node) onApplied(ws *writeset.WriteSet, out writeset.Outcome) {
	w := n.w
	s := out.Seqno
	ok := out.Committed
	_, d := n.eng.StateDigest()
	if id, seen := w.wsAt[s]; seen {
		if id != ws.ID {
			w.fail("n%d applied write-set %v at seqno %d, another node applied %v there", n.id, ws.ID, s, id)
		}
		if w.okAt[s] != ok {
			w.fail("n%d decided %v for seqno %d, another node decided %v", n.id, ok, s, w.okAt[s])
		}
		if w.digestAt[s] != d {
			w.fail("n%d state digest %s at seqno %d, another node had %s", n.id, d, s, w.digestAt[s])
		}
	} else {
		w.wsAt[s], w.okAt[s], w.digestAt[s] = ws.ID, ok, d
		w.event("seq %d ws %v ok=%v reason=%q digest %s", s, ws.ID, ok, out.Reason, d)
	}
}

// progress completes causal reads whose index is applied.
func (n *node) progress() {
	applied := n.eng.Applied()
	if applied < n.lastApp {
		n.w.fail("n%d applied seqno went back from %d to %d", n.id, n.lastApp, applied)
	}
	if applied != n.lastApp {
		// a state transfer moves applied without onApplied: the state must
		// still be the one every node has at that seqno
		if at, d := n.eng.StateDigest(); at == applied {
			if want, ok := n.w.digestAt[applied]; ok && want != d {
				n.w.fail("n%d state digest %s at seqno %d after catching up, another node had %s", n.id, d, applied, want)
			}
		}
	}
	n.lastApp = applied
	n.indexed.Release(applied, func(o *op) {
		if o.c.cur == o { // else its client gave up
			o.completeRead()
		}
	})
}

// lowWatermark is the lowest read position of the node's pending
// write-sets (LastSeen).
func (n *node) lowWatermark() uint64 {
	low := n.eng.Applied()
	for _, o := range n.rep.Waiters() {
		low = min(low, o.pos)
	}
	return low
}

func sortedKeys[V any](m map[writeset.ID]V) []writeset.ID {
	return slices.SortedFunc(maps.Keys(m), writeset.ID.Compare)
}

// readRow reads a row's value column at the node's latest state.
func (n *node) readRow(def *storage.TableDef, id int64) (int64, bool) {
	ti, err := def.Info()
	if err != nil {
		n.w.fail("table info: %v", err)
		return 0, false
	}
	pk, _ := ti.EncodePK(nil, sql.Row{id, nil})
	v := n.eng.Latest()
	data, ok, err := v.Get(storage.RowKey(def.ID, pk))
	if err != nil || !ok {
		return 0, false
	}
	row, err := ti.DecodeRow(data)
	if err != nil {
		n.w.fail("n%d: %v", n.id, err)
		return 0, false
	}
	return row[1].(int64), true
}

// ready reports whether the node has the workload's tables.
func (n *node) ready() bool {
	_, ok := n.eng.Catalog().Table(registersTable)
	return ok && n.core.Primary()
}

// joinTicks is how often a node that lost its disk asks to join (two
// election timeouts, as replication.Node.AddMember waits for a change).
const joinTicks = 40

// wipe is a disk loss: the node crashes and comes back with an empty data
// dir and a new id, to join again under its name and address.
func (n *node) wipe() {
	old := n.id
	n.crash()
	n.fs = vfs.NewCrashableMem()
	n.w.lastID++
	n.id, n.member.ID = n.w.lastID, n.w.lastID
	n.joining = true
	n.lastOrigin = 0 // it went with the disk
	n.w.event("n%d loses its disk: n%d comes back in its place", old, n.id)
}

// join asks a member it reaches to add it, as a joining node asks any
// member (replication.Node.AddMember): the member removes the member it
// replaces once its view shows it silent, then adds it as a learner; the
// leader promotes it once it caught up (by a state transfer).
func (n *node) join() {
	w := n.w
	for _, i := range w.r.Perm(len(w.nodes)) {
		x := w.nodes[i]
		if x == n || !x.up || x.joining || x.pausedUntil > w.tick || w.net.cut[[2]uint64{n.id, x.id}] || !x.core.Primary() {
			continue
		}
		st := x.core.Status()
		cc, replaced, done, err := replication.JoinChange(st.Members, st.View, n.member)
		switch {
		case err != nil:
			w.event("n%d asks n%d to join: %v", n.id, x.id, err)
		case done && slices.Contains(st.Voters, n.id):
			// (another disk lost before the promotion could leave a
			// single voter, which no quorum ever outvotes again)
			n.joining = false
			w.event("n%d is a voter (n%d applied its promotion)", n.id, x.id)
		case done:
		case replaced != nil:
			w.event("n%d asks n%d to join: n%d proposes the removal of n%d, which it replaces", n.id, x.id, x.id, replaced.ID)
			x.core.ProposeConfChange(replication.RemoveChange(replaced.ID))
		default:
			w.event("n%d asks n%d to join: n%d proposes its addition", n.id, x.id, x.id)
			x.core.ProposeConfChange(cc)
		}
		return
	}
}
