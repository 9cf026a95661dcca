package txn

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/certusdb/certus/writeset"
)

// LockMode is a row lock mode.
type LockMode uint8

// Lock modes. Shared locks are compatible with each other.
const (
	Shared LockMode = iota + 1
	Exclusive
)

// ErrLockWaitTimeout is returned when a lock is not granted within the
// transaction's lock wait timeout (MySQL error 1205).
var ErrLockWaitTimeout = errors.New("Lock wait timeout exceeded; try restarting transaction")

// ErrDeadlock is returned to the transaction whose lock request would close
// a cycle of waiting transactions (MySQL error 1213).
var ErrDeadlock = errors.New("Deadlock found when trying to get lock; try restarting transaction")

// lockOwner is a transaction as the lock manager sees it.
type lockOwner struct {
	id      uint64
	held    []*lockState // locks this owner holds
	waiting *lockState   // the lock it waits for, guarded by Locks.mu
	// overwritten maps keys this owner holds to the seqno of the last
	// write-set from another node that wrote them while it held them
	// (guarded by Locks.mu); anyOverwritten says whether it has entries.
	overwritten    map[string]uint64
	anyOverwritten atomic.Bool
}

type holder struct {
	o    *lockOwner
	mode LockMode
	// pos is Locks.pos when o was first granted the lock: the key's
	// certification position for o (see Txn.lock)
	pos uint64
}

type waiter struct {
	o     *lockOwner
	mode  LockMode
	ready chan struct{}
	done  bool   // granted or abandoned, guarded by Locks.mu
	pos   uint64 // the owner's position, set when granted (before ready closes)
}

type lockState struct {
	key     string
	holders []holder
	queue   []*waiter
	// one backs holders while a single owner holds the lock (the common
	// case), saving an allocation per locked row
	one [1]holder
}

// Locks is a node's row lock table. Locks are held until the transaction
// ends (after its write-set is applied locally, or on rollback).
type Locks struct {
	mu    sync.Mutex
	table map[string]*lockState
	// pos is read when a lock is first granted to an owner, under mu; the
	// holder keeps it for as long as it holds the lock
	pos func() uint64
}

// NewLocks returns an empty lock table. pos gives the position a lock
// records when first granted to an owner (the node's applied seqno); Lock
// returns it.
func NewLocks(pos func() uint64) *Locks { return &Locks{table: map[string]*lockState{}, pos: pos} }

func (ls *lockState) holding(o *lockOwner) (int, LockMode) {
	for i, h := range ls.holders {
		if h.o == o {
			return i, h.mode
		}
	}
	return -1, 0
}

// compatible reports whether o may take mode now, given the holders.
func (ls *lockState) compatible(o *lockOwner, mode LockMode) bool {
	for _, h := range ls.holders {
		if h.o == o {
			continue
		}
		if mode == Exclusive || h.mode == Exclusive {
			return false
		}
	}
	return true
}

// Lock acquires key in mode for o, waiting up to timeout, and returns the
// position recorded when o was first granted the key (an upgrade keeps
// it). It returns ErrDeadlock if waiting would deadlock,
// ErrLockWaitTimeout on timeout, or the context's error if ctx ends first.
func (l *Locks) Lock(ctx context.Context, o *lockOwner, key []byte, mode LockMode, timeout time.Duration) (uint64, error) {
	l.mu.Lock()
	ls := l.table[string(key)]
	if ls == nil {
		ls = &lockState{key: string(key)}
		ls.holders = ls.one[:0]
		l.table[ls.key] = ls
	}
	i, held := ls.holding(o)
	if held >= mode {
		pos := ls.holders[i].pos
		l.mu.Unlock()
		return pos, nil
	}
	// Grant at once when compatible and nobody queues (an upgrade from
	// shared to exclusive does not queue behind others).
	if ls.compatible(o, mode) && (len(ls.queue) == 0 || i >= 0) {
		pos := l.grant(ls, o, mode, i)
		l.mu.Unlock()
		return pos, nil
	}
	if l.wouldDeadlock(o, ls) {
		l.dropIfUnused(ls)
		l.mu.Unlock()
		return 0, ErrDeadlock
	}
	w := &waiter{o: o, mode: mode, ready: make(chan struct{})}
	if i >= 0 {
		// upgrades go first so two shared holders upgrading deadlock visibly
		ls.queue = append([]*waiter{w}, ls.queue...)
	} else {
		ls.queue = append(ls.queue, w)
	}
	o.waiting = ls
	l.mu.Unlock()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
		return w.pos, nil
	case <-timer.C:
		err = ErrLockWaitTimeout
	case <-ctx.Done():
		err = ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.done { // granted while we gave up: keep it
		return w.pos, nil
	}
	w.done = true
	o.waiting = nil
	for j, q := range ls.queue {
		if q == w {
			ls.queue = append(ls.queue[:j], ls.queue[j+1:]...)
			break
		}
	}
	l.wake(ls)
	l.dropIfUnused(ls)
	return 0, err
}

// grant gives o the lock in mode (i is o's holder entry, or -1) and
// returns o's position for it.
func (l *Locks) grant(ls *lockState, o *lockOwner, mode LockMode, i int) uint64 {
	if i >= 0 {
		ls.holders[i].mode = mode
		return ls.holders[i].pos
	}
	pos := l.pos()
	ls.holders = append(ls.holders, holder{o: o, mode: mode, pos: pos})
	o.held = append(o.held, ls)
	return pos
}

// wake grants queued requests in order while they are compatible.
func (l *Locks) wake(ls *lockState) {
	for len(ls.queue) > 0 {
		w := ls.queue[0]
		if !ls.compatible(w.o, w.mode) {
			return
		}
		ls.queue = ls.queue[1:]
		i, _ := ls.holding(w.o)
		w.pos = l.grant(ls, w.o, w.mode, i)
		w.done = true
		w.o.waiting = nil
		close(w.ready)
	}
}

func (l *Locks) dropIfUnused(ls *lockState) {
	if len(ls.holders) == 0 && len(ls.queue) == 0 {
		delete(l.table, ls.key)
	}
}

// wouldDeadlock reports whether o waiting for ls closes a cycle: some
// holder of ls (transitively, through the locks holders wait for) waits
// for a lock o holds.
func (l *Locks) wouldDeadlock(o *lockOwner, ls *lockState) bool {
	seen := map[*lockOwner]bool{}
	var visit func(ls *lockState) bool
	visit = func(ls *lockState) bool {
		for _, h := range ls.holders {
			if h.o == o {
				continue
			}
			if seen[h.o] {
				continue
			}
			seen[h.o] = true
			if w := h.o.waiting; w != nil {
				if _, m := w.holding(o); m != 0 {
					return true
				}
				if visit(w) {
					return true
				}
			}
		}
		return false
	}
	return visit(ls)
}

// Overwritten notes that the write-set ordered at seqno, from another
// node, wrote keys. Row locks are this node's own: a replicated write
// applies without them, as Galera's appliers do. A transaction holding one
// of the keys may have read it before that write; it then cannot commit
// (certification fails it), and it learns so at its next access of the key
// (Txn.lock), as Galera's brute-force abort would tell it, instead of
// reading the newer row under a lock it thinks protects the older one.
func (l *Locks) Overwritten(keys []writeset.Key, seqno uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.table) == 0 {
		return
	}
	for _, k := range keys {
		ls := l.table[string(k.Key)]
		if ls == nil {
			continue
		}
		for _, h := range ls.holders {
			if h.o.overwritten == nil {
				h.o.overwritten = map[string]uint64{}
			}
			h.o.overwritten[ls.key] = seqno
			h.o.anyOverwritten.Store(true)
		}
	}
}

// overwrittenAt is the seqno of the last write-set from another node that
// wrote key while o held it (0: none).
func (l *Locks) overwrittenAt(o *lockOwner, key []byte) uint64 {
	if !o.anyOverwritten.Load() {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return o.overwritten[string(key)]
}

// releaseChunk is the number of locks ReleaseAll frees per hold of the
// table's mutex. Freeing the million locks of a huge transaction takes a
// second or more; held for all of it, the mutex would stop the apply loop
// (Overwritten) and every session's next lock for as long.
const releaseChunk = 256

// ReleaseAll releases every lock o holds and wakes waiters.
func (l *Locks) ReleaseAll(o *lockOwner) {
	if len(o.held) == 0 {
		return
	}
	l.mu.Lock()
	for n, ls := range o.held {
		if n > 0 && n%releaseChunk == 0 {
			l.mu.Unlock()
			l.mu.Lock()
		}
		if i, _ := ls.holding(o); i >= 0 {
			ls.holders = append(ls.holders[:i], ls.holders[i+1:]...)
		}
		l.wake(ls)
		l.dropIfUnused(ls)
	}
	o.overwritten = nil
	o.anyOverwritten.Store(false)
	l.mu.Unlock()
	clear(o.held) // the lock states may be freed
	o.held = o.held[:0]
}

// Len is the number of keys currently locked or waited for.
func (l *Locks) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.table)
}
