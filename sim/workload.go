package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

type outcome int

const (
	outcomePending outcome = iota
	outcomeCommitted
	outcomeFailed
	outcomeUnknown
)

type opKind int

const (
	opTransfer opKind = iota
	opWrite
	opRead
	opRetire
	opRollback
)

// op is a client operation in flight, or a node's retirement of an
// earlier incarnation or rollback of an orphaned stream (no client).
type op struct {
	n         *node
	c         *client
	kind      opKind
	ws        *writeset.WriteSet
	keys      []string // row locks held
	pos       uint64   // read position of the write-set's keys
	firstAt   int64
	seqno     uint64
	reg       int
	val       int64
	call      int64
	readIndex uint64
	// then continues a streaming transaction once this fragment passed,
	// keeping the row locks.
	then func()
}

// client runs operations one at a time on its node.
type client struct {
	n   *node
	id  int
	cur *op
	// waitingSince is when its next write began to wait for flow
	// control's admission (zero: it does not wait)
	waitingSince time.Time
}

// Timeouts, in ticks.
const (
	abandonTicks = 400 // a client gives up on a write-set's outcome
	readTicks    = 200 // give up on a causal read
	setupTicks   = 30  // re-propose the schema
)

var setupID = writeset.ID{Origin: 1 << 63, Seq: 1}

func (c *client) step() {
	n, w := c.n, c.n.w
	if o := c.cur; o != nil {
		switch {
		case o.kind == opRead:
			if w.tick-o.firstAt > readTicks {
				c.cur = nil // the read is dropped where it waits
			}
		case w.tick-o.firstAt > abandonTicks:
			// the client's deadline ends its wait (a session's context: replication.Replica.Abandon)
			if n.rep.Abandon(o.ws.ID) {
				n.abandon(o)
			}
		}
		return
	}
	if w.quiet {
		return
	}
	if !n.ready() {
		if c.id%100 == 0 && n.core.Primary() && w.tick%setupTicks == 0 && w.setupCanPropose(n) {
			n.core.Propose(w.setupWriteSet().Encode(nil))
		}
		return
	}
	x := w.r.Intn(10)
	if x >= 3 && x < 8 && !c.admitted() {
		return
	}
	switch {
	case x < 3:
	case x < 6:
		c.transfer(w.cfg.Streams && w.r.Intn(2) == 0)
	case x < 8:
		c.write()
	default:
		c.read()
	}
}

// tryLock takes the node-local row locks of keys, all or none, as the
// origin's row locks order its own transactions.
func (c *client) tryLock(keys []string) bool {
	for _, k := range keys {
		if h := c.n.locks[k]; h != nil && h != c {
			return false
		}
	}
	for _, k := range keys {
		c.n.locks[k] = c
	}
	return true
}

func (c *client) unlock(keys []string) {
	for _, k := range keys {
		if c.n.locks[k] == c {
			delete(c.n.locks, k)
		}
	}
}

func lockKey(table uint64, id int64) string {
	b := binary.BigEndian.AppendUint64(nil, table)
	return string(binary.BigEndian.AppendUint64(b, uint64(id)))
}

func (w *world) put(def *storage.TableDef, id, v int64) (writeset.Op, writeset.Key) {
	ti, _ := def.Info()
	pk, _ := ti.EncodePK(nil, sql.Row{id, v})
	data, _ := ti.EncodeRow(nil, sql.Row{id, v})
	return writeset.Op{Kind: writeset.OpPut, TableID: def.ID, Key: pk, Value: data},
		writeset.Key{Kind: writeset.KeyRow, Key: storage.CertKey(def.ID, pk)}
}

// propose builds and proposes a write-set of puts read at the current
// position (the locks are held).
func (c *client) propose(kind opKind, keys []string, def *storage.TableDef, rows [][2]int64) *op {
	return c.proposeAt(kind, keys, def, rows, c.n.eng.Applied(), 0, writeset.Stream{})
}

// proposeAt is propose with the rows read at pos, as a write-set of a
// streaming transaction when flags has one of the stream flags.
func (c *client) proposeAt(kind opKind, keys []string, def *storage.TableDef, rows [][2]int64, pos uint64, flags writeset.Flags, st writeset.Stream) *op {
	n, w := c.n, c.n.w
	n.seq++
	ws := &writeset.WriteSet{ID: writeset.ID{Seq: n.seq}, LastSeen: min(n.lowWatermark(), pos), Flags: flags, Stream: st}
	ws.Tables = []writeset.Table{{ID: def.ID, SchemaPos: pos}}
	for _, r := range rows {
		o, k := w.put(def, r[0], r[1])
		k.Pos = pos
		ws.Ops = append(ws.Ops, o)
		ws.Keys = append(ws.Keys, k)
	}
	o := &op{n: n, c: c, kind: kind, ws: ws, keys: keys, pos: pos, firstAt: w.tick}
	data := n.rep.Submit(ws, o)
	c.cur = o
	n.rep.Propose(data)
	return o
}

// rollbackStream proposes the rollback of a streaming transaction, once:
// if it is lost, the node's next restart rolls the transaction back.
func (n *node) rollbackStream(ws *writeset.WriteSet) {
	n.seq++
	ws.ID = writeset.ID{Origin: n.rep.Origin(), Seq: n.seq}
	n.w.event("n%d rolls back stream %v", n.id, ws.Stream.ID)
	n.core.Propose(ws.Encode(nil))
}

// Orphaned streams, in ticks: how long a member may be out of the leader's
// reach before the leader rolls back its streaming transactions (5
// election timeouts; a node's 15 s are 15, longer than most of the seeds'
// partitions), and how often the leader looks.
const (
	orphanTicks      = 100
	orphanCheckTicks = 10
)

// rollbackStreams submits the rollbacks of streaming transactions the
// replica decides on (replication.Replica.Rollbacks): once caught up after
// a start, those its earlier incarnations left open; on the leader, those
// of the members out of its reach.
func (n *node) rollbackStreams() {
	b, ok := n.rep.Rollbacks(n.ready() && n.eng.Applied() >= n.core.Committed())
	if !ok {
		return
	}
	for _, ws := range n.rep.RollbacksOf(b) {
		o := &op{n: n, kind: opRollback, ws: ws, pos: n.eng.Applied(), firstAt: n.w.tick}
		n.w.event("n%d rolls back stream %v of n%d (stale %v)", n.id, ws.Stream.ID, ws.Stream.Node, b.Stale)
		n.rep.Propose(n.rep.Submit(ws, o))
	}
}

// transfer moves money between two accounts. Streamed, it is a streaming
// transaction: a fragment debits a, then the commit credits b; until the
// commit, a's new balance is invisible and its row locked on every node.
func (c *client) transfer(streamed bool) {
	n, w := c.n, c.n.w
	a, b := int64(w.r.Intn(w.cfg.Accounts)), int64(w.r.Intn(w.cfg.Accounts))
	if a == b {
		return
	}
	keys := []string{lockKey(accountsTable, a), lockKey(accountsTable, b)}
	if !c.tryLock(keys) {
		return
	}
	// current reads under the locks
	pos := n.eng.Applied()
	fa, ok1 := n.readRow(w.accounts, a)
	fb, ok2 := n.readRow(w.accounts, b)
	amount := int64(1 + w.r.Intn(30))
	if !ok1 || !ok2 || fa < amount {
		c.unlock(keys)
		return
	}
	if !streamed {
		c.propose(opTransfer, keys, w.accounts, [][2]int64{{a, fa - amount}, {b, fb + amount}})
		return
	}
	first := c.proposeAt(opTransfer, keys, w.accounts, [][2]int64{{a, fa - amount}}, pos, writeset.FlagFragment, writeset.Stream{})
	w.event("n%d c%d streams %v: a%d -= %d", n.id, c.id, first.ws.ID, a, amount)
	first.then = func() {
		c.proposeAt(opTransfer, keys, w.accounts, [][2]int64{{b, fb + amount}}, pos, writeset.FlagStreamCommit,
			writeset.Stream{ID: first.ws.Stream.ID, Frag: 1})
	}
}

func (c *client) write() {
	n, w := c.n, c.n.w
	reg := w.r.Intn(w.cfg.Registers)
	keys := []string{lockKey(registersTable, int64(reg))}
	if !c.tryLock(keys) {
		return
	}
	w.clock++
	val := w.clock
	o := c.propose(opWrite, keys, w.registers, [][2]int64{{int64(reg), val}})
	o.reg, o.val, o.call = reg, val, w.clock
	_ = n
}

// read is a causal read: ReadIndex, wait until applied, then read.
func (c *client) read() {
	n, w := c.n, c.n.w
	w.clock++
	o := &op{n: n, c: c, kind: opRead, reg: w.r.Intn(w.cfg.Registers), call: w.clock, firstAt: w.tick}
	c.cur = o
	// the leader's lease answers at once, else the read joins a round
	if idx, ok := n.rep.Read(o); ok {
		o.readIndex = idx
		n.indexed.Add(idx, o)
	}
}

func (o *op) completeRead() {
	n, w := o.c.n, o.c.n.w
	v, ok := n.readRow(w.registers, int64(o.reg))
	if !ok {
		w.fail("n%d: register %d missing", n.id, o.reg)
		return
	}
	w.clock++
	w.reads++
	w.event("read n%d c%d r%d = %d (read index %d, applied %d)", n.id, o.c.id, o.reg, v, o.readIndex, n.eng.Applied())
	w.history = append(w.history, operation{client: o.c.id, input: regInput{reg: o.reg}, output: v, call: o.call, ret: w.clock})
	o.c.cur = nil
}

// finish ends a write-set operation with its outcome.
func (o *op) finish(out outcome) {
	c, n, w := o.c, o.n, o.n.w
	if o.kind == opRollback {
		if n.rep != nil { // (else it crashed, and its replica with it)
			n.rep.RolledBack()
		}
		w.event("n%d rolled back stream %v: %v at seqno %d", n.id, o.ws.Stream.ID, out, o.seqno)
		return
	}
	if o.kind == opRetire {
		n.retire = nil
		if out == outcomeCommitted {
			n.rep.Retired(o.ws.ID.Origin)
			w.event("n%d retired origin %x at seqno %d", n.id, o.ws.ID.Origin, o.seqno)
		}
		return
	}
	if out == outcomeCommitted && o.then != nil {
		// the fragment passed: the transaction goes on, locks held
		if c.cur == o {
			c.cur = nil
		}
		w.fragments++
		o.then()
		return
	}
	if out == outcomeUnknown && o.ws.Flags&writeset.StreamFlags != 0 && n.up {
		// (a crashed node rolls it back after its restart)
		n.rollbackStream(&writeset.WriteSet{LastSeen: min(n.lowWatermark(), n.eng.Applied()), Flags: writeset.FlagStreamRollback,
			Stream: writeset.Stream{ID: o.ws.Stream.ID, Node: n.id, Frag: o.ws.Stream.Frag + 1}})
	}
	c.unlock(o.keys)
	if c.cur == o {
		c.cur = nil
	}
	switch out {
	case outcomeCommitted:
		w.commits++
		w.acked[o.ws.ID] = o.seqno
	case outcomeFailed:
		w.certFailures++
	case outcomeUnknown:
		w.unknown++
	}
	if o.kind != opWrite {
		return
	}
	w.event("write n%d c%d r%d = %d: %v at seqno %d", n.id, c.id, o.reg, o.val, out, o.seqno)
	switch out {
	case outcomeCommitted:
		w.clock++
		w.history = append(w.history, operation{client: c.id, input: regInput{write: true, reg: o.reg, val: o.val}, call: o.call, ret: w.clock})
	case outcomeUnknown:
		// it may have taken effect at any time after its call
		w.history = append(w.history, operation{client: c.id, input: regInput{write: true, reg: o.reg, val: o.val}, call: o.call, ret: math.MaxInt64})
	}
}

// setupCanPropose reports whether the schema may be proposed (again):
// like any origin, the setup stops re-proposing once the log moved on by
// the re-proposal horizon since its first proposal.
func (w *world) setupCanPropose(n *node) bool {
	if w.setupSeqno() != 0 {
		return false // applied somewhere: it reaches the others through the log
	}
	if w.setupFirst == 0 {
		w.setupFirst = n.core.Committed() + 1
		return true
	}
	return n.core.Committed() <= w.setupFirst+n.core.ReproposeHorizon()
}

func (w *world) setupSeqno() uint64 {
	for _, s := range sortedIDs(w.wsAt) {
		if w.wsAt[s] == setupID {
			return s
		}
	}
	return 0
}

// setupWriteSet creates the workload's tables and rows.
func (w *world) setupWriteSet() *writeset.WriteSet {
	ws := &writeset.WriteSet{ID: setupID, Flags: writeset.FlagDDL}
	for _, op := range []*storage.SchemaOp{
		{Kind: storage.OpPutDatabase, Database: &storage.DatabaseDef{Name: "sim"}},
		{Kind: storage.OpPutTable, Table: w.accounts, TableID: accountsTable},
		{Kind: storage.OpPutTable, Table: w.registers, TableID: registersTable},
	} {
		ws.Ops = append(ws.Ops, op.WriteSetOp())
	}
	for i := 0; i < w.cfg.Accounts; i++ {
		o, _ := w.put(w.accounts, int64(i), initialBalance)
		ws.Ops = append(ws.Ops, o)
	}
	for i := 0; i < w.cfg.Registers; i++ {
		o, _ := w.put(w.registers, int64(i), 0)
		ws.Ops = append(ws.Ops, o)
	}
	return ws
}

// checkBank checks the bank total on every node that has the table.
func (w *world) checkBank() {
	want := int64(w.cfg.Accounts * initialBalance)
	for _, n := range w.nodes {
		if !n.up {
			continue
		}
		if _, ok := n.eng.Catalog().Table(accountsTable); !ok {
			continue
		}
		sum := int64(0)
		for i := 0; i < w.cfg.Accounts; i++ {
			v, ok := n.readRow(w.accounts, int64(i))
			if !ok {
				w.fail("n%d: account %d missing", n.id, i)
				return
			}
			sum += v
		}
		if sum != want {
			w.fail("n%d: bank total %d at seqno %d, want %d", n.id, sum, n.eng.Applied(), want)
			return
		}
	}
}

// checkConverged checks, after the quiet phase, that every node is up, at
// the same seqno with the same state, and that every acknowledged commit
// is committed there.
func (w *world) checkConverged() {
	top := w.maxApplied()
	var digest storage.Digest
	var streams string
	for i, n := range w.nodes {
		if !n.up {
			w.fail("n%d still down at the end", n.id)
			return
		}
		if n.eng.Applied() != top {
			w.fail("n%d did not catch up: applied %d, others %d", n.id, n.eng.Applied(), top)
			return
		}
		_, d := n.eng.StateDigest()
		if i == 0 {
			digest = d
		} else if d != digest {
			w.fail("n%d state digest %s differs from n1's %s at seqno %d", n.id, d, digest, top)
			return
		}
		v := n.eng.View()
		re, err := n.eng.RecomputeDigest(v)
		v.Close()
		if err != nil || re != d {
			w.fail("n%d incremental digest %s, recomputed %s (%v)", n.id, d, re, err)
			return
		}
		// open streaming transactions are state too: the same everywhere
		stored, err := n.eng.StoredStreams()
		open := fmt.Sprint(sortedKeys(stored), len(stored) == n.eng.OpenStreams(), err)
		if i == 0 {
			streams = open
		} else if open != streams {
			w.fail("n%d open streaming transactions %s, n1 has %s", n.id, open, streams)
			return
		}
	}
	for _, id := range sortedKeys(w.acked) {
		s := w.acked[id]
		if !w.okAt[s] || w.wsAt[s] != id {
			w.fail("acknowledged commit %v at seqno %d is not committed there", id, s)
			return
		}
	}
	// with every member up and connected since the quiet phase began,
	// the last view (wsrep_cluster_size) holds every voter on every node
	for _, n := range w.nodes {
		st := n.core.Status()
		if voters := slices.Sorted(slices.Values(st.Voters)); !slices.Equal(st.View, voters) {
			w.fail("n%d's view is %x at seqno %d, the voters are %x", n.id, st.View, top, voters)
			return
		}
	}
}

// operation is one register operation of the history.
type operation struct {
	client    int
	input     regInput
	output    int64
	call, ret int64
}

type regInput struct {
	write bool
	reg   int
	val   int64
}

var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[int][]porcupine.Operation{}
		for _, o := range h {
			r := o.Input.(regInput).reg
			by[r] = append(by[r], o)
		}
		keys := make([]int, 0, len(by))
		for k := range by {
			keys = append(keys, k)
		}
		sort.Ints(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() interface{} { return int64(0) },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		in := input.(regInput)
		if in.write {
			return true, in.val
		}
		return output.(int64) == state.(int64), state
	},
}

// checkLinearizable checks the register history with porcupine. Writes
// still waiting for their outcome at the end may have taken effect: they
// count as unknown.
func (w *world) checkLinearizable() {
	h := make([]porcupine.Operation, len(w.history))
	for i, o := range w.history {
		h[i] = porcupine.Operation{ClientId: o.client, Input: o.input, Output: o.output, Call: o.call, Return: o.ret}
	}
	for _, n := range w.nodes {
		if n.rep == nil {
			continue
		}
		for _, o := range n.rep.Waiters() {
			if o.kind == opWrite {
				h = append(h, porcupine.Operation{ClientId: o.c.id, Input: regInput{write: true, reg: o.reg, val: o.val}, Call: o.call, Return: math.MaxInt64})
			}
		}
	}
	switch porcupine.CheckOperationsTimeout(registerModel, h, 30*time.Second) {
	case porcupine.Illegal:
		w.fail("register history of %d operations is not linearizable", len(h))
	case porcupine.Unknown:
		w.event("linearizability check timed out on %d operations", len(h))
	}
}
