// Package txn implements transactions over the storage engine: read views
// (REPEATABLE READ and READ COMMITTED snapshots), InnoDB-style current reads
// with row locks for DML and locking reads, a write buffer that the
// transaction reads its own writes through, statement rollback and
// savepoints, and the write-set a COMMIT hands to replication.
package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// Replicator orders a write-set in the cluster's total order and waits
// until it is certified and, if it passed, applied on this node.
type Replicator interface {
	// Origin is this node's current incarnation id, the origin of the
	// write-sets it builds.
	Origin() uint64
	// Replicate orders ws and waits for its outcome.
	Replicate(ctx context.Context, ws *writeset.WriteSet) (writeset.Outcome, error)
}

// ErrCertification is returned by Commit when the write-set lost
// certification to a concurrent write on another node (MySQL 1213).
var ErrCertification = errors.New("Deadlock found when trying to get lock; try restarting transaction")

// ErrReadOnly is returned for writes in a READ ONLY transaction.
var ErrReadOnly = errors.New("Cannot execute statement in a READ ONLY transaction.")

// ErrTxnDone is returned when a finished transaction is used.
var ErrTxnDone = errors.New("txn: transaction already finished")

// Config configures a Manager.
type Config struct {
	// Engine is the node's storage.
	Engine *storage.Engine
	// Replicator orders write-sets.
	Replicator Replicator
	// StreamBytes is the size of a transaction's buffered changes from
	// which it streams (see stream.go) even when its session did not ask
	// for it; 0 never.
	StreamBytes int64
	// StreamFragmentBytes is the fragment size of a transaction that
	// streams because of StreamBytes (default StreamBytes/8).
	StreamFragmentBytes int64
	// StreamNice, when positive, is the nice value (1..19) a streaming
	// transaction's statements run at from their first fragment on (see
	// internal/lowprio): a huge transaction then yields the CPU to the
	// others' short ones when the node is busy. 0 runs them as any other.
	StreamNice int
	// Logger receives the manager's log (nil: slog.Default()).
	Logger *slog.Logger
}

// Manager creates transactions and holds what they share: the lock table,
// the registry of open transactions and the AUTO_INCREMENT allocator.
type Manager struct {
	cfg    Config
	eng    *storage.Engine
	locks  *Locks
	nextID atomic.Uint64

	mu     sync.Mutex
	active map[uint64]*Txn

	autoMu sync.Mutex
	auto   map[uint64]uint64 // table id -> next value this node hands out

	// reportMu guards what this node last told the certification index
	// about its open transactions (see ReportWatermark).
	reportMu       sync.Mutex
	reportedOrigin uint64
	reported       uint64

	// Counters for status variables.
	Commits, Rollbacks, CertFailures, LockTimeouts, Deadlocks atomic.Uint64
	// BFAborts counts transactions aborted because a write-set from
	// another node changed a row they had locked (wsrep_local_bf_aborts).
	BFAborts atomic.Uint64
	// Streams counts transactions that streamed, Fragments the fragments
	// they sent before their commit.
	Streams, Fragments atomic.Uint64
	// Writing is the number of open transactions that have written
	// (wsrep_open_transactions).
	Writing atomic.Int64

	unrestored atomic.Bool // noteUnrestored logged
}

// reportLag is how far this node's low watermark may run ahead of what it
// last reported before ReportWatermark reports again.
const reportLag = 1000

// noteReported records that a write-set of origin carrying lastSeen was
// sent to be ordered.
func (m *Manager) noteReported(origin, lastSeen uint64) {
	m.reportMu.Lock()
	if origin != m.reportedOrigin || lastSeen > m.reported {
		m.reportedOrigin, m.reported = origin, lastSeen
	}
	m.reportMu.Unlock()
}

// ReportWatermark replicates an empty write-set carrying the node's low
// watermark when this incarnation has not reported yet or its watermark
// moved reportLag past what it last reported. The certification index
// prunes below the lowest LastSeen of the origins with write-sets in its
// window (certify's horizon), so a node whose only activity is a long
// transaction must still be counted, or that transaction fails as "too
// old" (1213) once the other nodes' commits move the horizon past it.
// Every node calls it periodically; it costs nothing on an idle cluster.
func (m *Manager) ReportWatermark(ctx context.Context) error {
	origin, low := m.cfg.Replicator.Origin(), m.LowWatermark()
	m.reportMu.Lock()
	due := origin != m.reportedOrigin || low >= m.reported+reportLag
	m.reportMu.Unlock()
	if !due {
		return nil
	}
	m.noteReported(origin, low)
	_, err := m.cfg.Replicator.Replicate(ctx, &writeset.WriteSet{ID: writeset.ID{Origin: origin, Seq: m.nextID.Add(1)}, LastSeen: low})
	return err
}

// noteUnrestored logs, once, that a statement's thread could not get its
// priority back after a streaming transaction lowered it.
func (m *Manager) noteUnrestored() {
	if m.unrestored.Swap(true) {
		return
	}
	m.cfg.Logger.Warn("a session that ran a streaming transaction keeps a lower CPU priority until it ends: " +
		"raising a thread's priority again needs CAP_SYS_NICE or RLIMIT_NICE (logged once)")
}

// NewManager returns a Manager.
func NewManager(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{cfg: cfg, eng: cfg.Engine, active: map[uint64]*Txn{}, auto: map[uint64]uint64{}}
	m.locks = NewLocks(m.eng.Applied)
	m.nextID.Store(uint64(time.Now().UnixNano()) & 0xffff_ffff)
	return m
}

// Engine is the storage engine.
func (m *Manager) Engine() *storage.Engine { return m.eng }

// Locks is the lock table.
func (m *Manager) Locks() *Locks { return m.locks }

// RemoteWrite tells the manager that a write-set another node built was
// applied at seqno: local transactions holding locks on its keys since
// before it are aborted at their next access of those keys (see
// Locks.Overwritten).
func (m *Manager) RemoteWrite(ws *writeset.WriteSet, seqno uint64) {
	m.locks.Overwritten(ws.Keys, seqno)
}

// Isolation is a transaction isolation level.
type Isolation uint8

// Isolation levels. SERIALIZABLE runs as REPEATABLE READ and READ
// UNCOMMITTED as READ COMMITTED, as documented.
const (
	RepeatableRead Isolation = iota
	ReadCommitted
)

// Options configure a new transaction.
type Options struct {
	Isolation       Isolation
	ReadOnly        bool
	LockWaitTimeout time.Duration
	// FragmentUnit and FragmentSize make the transaction stream in
	// fragments of FragmentSize units (wsrep_trx_fragment_unit and
	// wsrep_trx_fragment_size); size 0 streams only past
	// Config.StreamBytes.
	FragmentUnit FragmentUnit
	FragmentSize int64
}

// Begin starts a transaction. It takes no snapshot until its first read.
func (m *Manager) Begin(opts Options) *Txn {
	if opts.LockWaitTimeout <= 0 {
		opts.LockWaitTimeout = 50 * time.Second
	}
	id := m.nextID.Add(1)
	t := &Txn{m: m, id: id, opts: opts, stmtMark: -1}
	t.owner.id = id
	return t
}

// register adds t to the open transactions with the applied seqno as its
// lowest position, read under the registry lock so that LowWatermark sees
// either t or an applied seqno no higher than any position t will use.
func (m *Manager) register(t *Txn) {
	m.mu.Lock()
	t.minPos.Store(m.eng.Applied())
	m.active[t.id] = t
	m.mu.Unlock()
}

func (m *Manager) unregister(t *Txn) {
	m.mu.Lock()
	delete(m.active, t.id)
	m.mu.Unlock()
}

// LowWatermark is the lowest position an open transaction on this node may
// still certify against (the applied seqno when none is open). It travels
// as LastSeen in write-sets so the certification index can be pruned.
func (m *Manager) LowWatermark() uint64 {
	m.mu.Lock()
	low := m.eng.Applied()
	for _, t := range m.active {
		if p := t.minPos.Load(); p != 0 && p < low {
			low = p
		}
	}
	m.mu.Unlock()
	return low
}

// Active is the number of open transactions that have read or written.
func (m *Manager) Active() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.active)
}

// NextAutoIncrement reserves the next AUTO_INCREMENT value of a table, in
// the series offset, offset+increment, offset+2×increment, ... (a
// session's auto_increment_offset and auto_increment_increment; as in
// InnoDB, an offset above the increment is ignored).
func (m *Manager) NextAutoIncrement(tableID, increment, offset uint64) uint64 {
	m.autoMu.Lock()
	defer m.autoMu.Unlock()
	next := StepAutoIncrement(max(m.auto[tableID], m.eng.AutoIncrement(tableID)), increment, offset)
	m.auto[tableID] = AfterAutoIncrement(next)
	return next
}

// StepAutoIncrement is the first AUTO_INCREMENT value from next on in the
// series offset, offset+increment, offset+2×increment, ... (as in InnoDB,
// an offset above the increment is ignored).
func StepAutoIncrement(next, increment, offset uint64) uint64 {
	if increment > 1 {
		if offset > increment {
			offset = 0
		}
		// smallest v ≥ next with v ≡ offset (mod increment)
		if r := (next + increment - offset%increment) % increment; r != 0 {
			next += increment - r
		}
	}
	return next
}

// PassAutoIncrement notes a value inserted explicitly into a table's
// AUTO_INCREMENT column: later reservations come after it.
func (m *Manager) PassAutoIncrement(tableID, v uint64) {
	m.autoMu.Lock()
	defer m.autoMu.Unlock()
	if v >= max(m.auto[tableID], m.eng.AutoIncrement(tableID)) {
		m.auto[tableID] = AfterAutoIncrement(v)
	}
}

// AfterAutoIncrement is the AUTO_INCREMENT counter after value v; the
// largest value has none, so the counter stays there (the next insert
// fails as out of range, as in MySQL).
func AfterAutoIncrement(v uint64) uint64 {
	if v == math.MaxUint64 {
		return v
	}
	return v + 1
}

// PeekAutoIncrement returns the next AUTO_INCREMENT value without
// reserving it.
func (m *Manager) PeekAutoIncrement(tableID uint64) uint64 {
	m.autoMu.Lock()
	defer m.autoMu.Unlock()
	return max(m.auto[tableID], m.eng.AutoIncrement(tableID))
}

// ResetAutoIncrement forgets local reservations of a table (after TRUNCATE
// or ALTER TABLE ... AUTO_INCREMENT).
func (m *Manager) ResetAutoIncrement(tableID uint64) {
	m.autoMu.Lock()
	delete(m.auto, tableID)
	m.autoMu.Unlock()
}

func certError(o writeset.Outcome) error {
	return fmt.Errorf("%w (%s at seqno %d)", ErrCertification, o.Reason, o.Seqno)
}
