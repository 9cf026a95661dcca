// Package certify is the deterministic certification index.
//
// Every node feeds the committed write-sets to Certify in log order and gets
// the same verdicts, because the index is a pure function of the log: it
// holds the writes of the write-sets that passed certification within a
// sliding window of the last Window seqnos, and nothing else.
//
// A write-set conflicts when, for one of its keys, a write-set from another
// origin that passed certification wrote the key at a seqno after the
// position the key was read at; or when one of its tables had a schema
// change after the catalog position it was built against; or (for a DDL that
// rewrote a table from its own view) when anyone wrote the table after that
// position. Writes from the same origin never conflict: the origin's row
// locks ordered them.
//
// Streaming transactions. A fragment (writeset.FlagFragment) that passes
// certification locks its keys until its transaction's last fragment:
// every write-set of another transaction that writes a locked key fails,
// whatever its read positions, because the fragment's rows are applied
// provisionally on every node and the two could not both commit. The last
// fragment (writeset.FlagStreamCommit) records every key of the
// transaction at its own seqno, as one write-set would have, and releases
// the locks. A failed fragment, a rollback fragment, a DDL that passes on
// one of the transaction's tables, or the origin node's removal (AbortNode)
// ends the transaction: Verdict.Aborted names it, and every node drops its
// provisional rows.
//
// Pruning. The index forgets writes at or below its horizon: the lowest
// LastSeen reported by an origin that wrote within the window (LastSeen is
// the oldest position any of the origin's open transactions may certify
// against), and never below seqno-Window. A key read at a position below the
// horizon can no longer be checked and fails conservatively. Since both the
// horizon and the window are computed from the log alone, pruning never makes
// two nodes decide differently. An origin that retired (a node's earlier
// incarnation, writeset.FlagRetire) no longer counts: without that, one
// restart or abandoned commit held the horizon for a whole window, and the
// index grew to MaxKeys (millions of keys to hold, and to replay at every
// restart and state transfer).
package certify

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/certusdb/certus/writeset"
)

// Config configures an Index. The zero value is not valid; use Defaults.
type Config struct {
	// Window is how many seqnos of history the index may keep. A
	// transaction whose read position is older than seqno-Window fails
	// certification. Restart replays the last Window log entries, so the
	// raft log must retain at least that many.
	Window uint64
	// MaxKeys bounds the number of keys the index holds. When exceeded the
	// horizon advances (deterministically) until it fits.
	MaxKeys int
	// BulkKeys is the number of keys of one table above which a write-set
	// is recorded as one write to the whole table: a later write-set from
	// another origin conflicts with it on any key of that table read
	// before it. A million-row write-set then costs no map entry per row
	// (seconds of apply-stage time to insert and later prune, while every
	// later commit waits). Like Window, it must be equal on all members.
	BulkKeys int
}

// Defaults returns the default configuration.
func Defaults() Config {
	return Config{Window: 100_000, MaxKeys: 4_000_000, BulkKeys: 10_000}
}

// Reason says why a write-set failed certification.
type Reason uint8

// Verdict reasons.
const (
	ReasonNone        Reason = iota
	ReasonKey                // a key was written by another origin after it was read
	ReasonTooOld             // a read position is below the horizon
	ReasonSchema             // a table's schema changed after the write-set's catalog position
	ReasonTable              // a rewriting DDL raced with writes to its table
	ReasonDuplicate          // the same write-set id was already decided
	ReasonLocked             // a key is locked by a streaming transaction
	ReasonStreamEnded        // the fragment's streaming transaction was rolled back
)

func (r Reason) String() string {
	switch r {
	case ReasonNone:
		return "ok"
	case ReasonKey:
		return "key conflict"
	case ReasonTooOld:
		return "read position below certification horizon"
	case ReasonSchema:
		return "table definition changed"
	case ReasonTable:
		return "table written during DDL"
	case ReasonDuplicate:
		return "duplicate write-set"
	case ReasonLocked:
		return "row locked by a streaming transaction"
	case ReasonStreamEnded:
		return "streaming transaction rolled back"
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Verdict is the outcome of certifying one write-set.
type Verdict struct {
	OK     bool
	Reason Reason
	// Conflict is the seqno of the write that caused the conflict, if any.
	Conflict uint64
	// Aborted are the streaming transactions this write-set ended without
	// committing them (a rollback, a failed fragment, a DDL on their
	// tables).
	Aborted []writeset.ID
	// Record is, for the last fragment of a streaming transaction that
	// passed, what it recorded: its own keys and those of every earlier
	// fragment, and whole-table writes (writeset.TableBulk). A replay
	// must be given it in the write-set's place.
	Record *writeset.WriteSet
}

// writer remembers the latest write to a key or table: the latest writer's
// seqno and origin, and the latest seqno written by any other origin.
type writer struct {
	seq    uint64
	origin uint64
	other  uint64
}

func (w *writer) record(seq, origin uint64) {
	if origin != w.origin {
		w.other = w.seq
		w.origin = origin
	}
	w.seq = seq
}

// latestNotBy returns the latest seqno written by an origin other than o.
func (w *writer) latestNotBy(o uint64) uint64 {
	if o == w.origin {
		return w.other
	}
	return w.seq
}

type tableState struct {
	writes writer
	bulk   writer // write-sets with more than BulkKeys keys in the table
	ddl    uint64
}

// tableOf is the table id a certification key starts with (row and
// unique keys both do); ok is false for a key too short to name one.
func tableOf(key []byte) (uint64, bool) {
	if len(key) < 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(key), true
}

// entry is what the index keeps of one certified write-set for pruning and
// for the window of recent origins.
type entry struct {
	seq      uint64
	id       writeset.ID
	lastSeen uint64
	keys     []string
	ok       bool
	retire   bool // a writeset.FlagRetire write-set
}

// Index is the certification index. It is not safe for concurrent use.
type Index struct {
	cfg     Config
	keys    map[string]*writer
	tables  map[uint64]*tableState
	decided map[writeset.ID]uint64
	log     []entry // certified write-sets in seqno order, oldest first
	pruned  int     // log[:pruned] are at or below the horizon and forgotten
	horizon uint64
	last    uint64
	// bulkTables counts tables that ever had a bulk write; while 0, Certify
	// skips the per-key table lookup
	bulkTables int
	// origins maps an origin to the count of its write-sets in log, and its
	// latest LastSeen.
	origins map[uint64]*originState
	// streams are the open streaming transactions; locks maps each key
	// they hold to its transaction.
	streams    map[writeset.ID]*stream
	locks      map[string]writeset.ID
	tableLocks map[uint64]writeset.ID
}

// stream is an open streaming transaction.
type stream struct {
	node     uint64
	keys     []writeset.Key  // locked one by one, in the order first locked
	perTable map[uint64]int  // keys locked one by one per table
	bulk     map[uint64]bool // tables locked whole (past BulkKeys keys)
	tables   map[uint64]bool // tables written
}

type originState struct {
	n        int
	lastSeen uint64
	// retired: the origin announced it sends nothing more
	// (writeset.FlagRetire), so its lastSeen no longer holds the horizon
	retired bool
}

// New returns an empty index.
func New(cfg Config) *Index {
	if cfg.Window == 0 {
		cfg.Window = Defaults().Window
	}
	if cfg.MaxKeys == 0 {
		cfg.MaxKeys = Defaults().MaxKeys
	}
	if cfg.BulkKeys == 0 {
		cfg.BulkKeys = Defaults().BulkKeys
	}
	return &Index{
		cfg:        cfg,
		keys:       map[string]*writer{},
		tables:     map[uint64]*tableState{},
		decided:    map[writeset.ID]uint64{},
		origins:    map[uint64]*originState{},
		streams:    map[writeset.ID]*stream{},
		locks:      map[string]writeset.ID{},
		tableLocks: map[uint64]writeset.ID{},
	}
}

// DecidedAt returns the seqno at which the write-set id was decided, if
// that is within the window.
func (ix *Index) DecidedAt(id writeset.ID) (uint64, bool) {
	s, ok := ix.decided[id]
	return s, ok
}

// Horizon is the seqno at or below which writes are forgotten.
func (ix *Index) Horizon() uint64 { return ix.horizon }

// Len is the number of keys held.
func (ix *Index) Len() int { return len(ix.keys) }

// Last is the seqno of the last write-set seen.
func (ix *Index) Last() uint64 { return ix.last }

// Certify decides ws at seqno and, when it passes, records its writes.
// Seqnos must be increasing.
func (ix *Index) Certify(seqno uint64, ws *writeset.WriteSet) Verdict {
	v := ix.check(ws)
	if v.Reason == ReasonDuplicate || ws.Flags&writeset.StreamFlags == 0 {
		ix.Record(seqno, ws, v.OK)
		if v.OK {
			v.Aborted = ix.abortByDDL(ws)
		}
		return v
	}
	id := ws.Stream.ID
	rec := ws
	switch {
	case !v.OK || ws.Flags&writeset.FlagStreamRollback != 0:
		if ix.endStream(id) {
			v.Aborted = []writeset.ID{id}
		}
	case ws.Flags&writeset.FlagFragment != 0:
		ix.lockStream(ws)
		rec = &writeset.WriteSet{ID: ws.ID, LastSeen: ws.LastSeen, Tables: ws.Tables}
	default: // the commit
		rec = ix.commitRecord(ws)
		ix.endStream(id)
		v.Record = rec
	}
	ix.record(seqno, rec, v.OK)
	ix.advance(seqno)
	return v
}

// lockStream takes the locks of a fragment that passed, opening its
// transaction at its first fragment. Past BulkKeys keys in one table, the
// transaction locks that table whole instead.
func (ix *Index) lockStream(ws *writeset.WriteSet) {
	id := ws.Stream.ID
	st := ix.streams[id]
	if st == nil {
		st = &stream{node: ws.Stream.Node, tables: map[uint64]bool{}, perTable: map[uint64]int{}, bulk: map[uint64]bool{}}
		ix.streams[id] = st
	}
	for _, t := range ws.Tables {
		st.tables[t.ID] = true
	}
	grew := false
	for _, k := range ws.Keys {
		t, _ := tableOf(k.Key)
		if st.bulk[t] {
			continue
		}
		if _, held := ix.locks[string(k.Key)]; !held {
			s := string(k.Key)
			ix.locks[s] = id
			st.keys = append(st.keys, writeset.Key{Kind: k.Kind, Key: []byte(s)})
			st.perTable[t]++
			grew = grew || st.perTable[t] > ix.cfg.BulkKeys
		}
	}
	if !grew {
		return
	}
	kept := st.keys[:0]
	for _, k := range st.keys {
		t, _ := tableOf(k.Key)
		if st.perTable[t] > ix.cfg.BulkKeys {
			delete(ix.locks, string(k.Key))
			continue
		}
		kept = append(kept, k)
	}
	st.keys = kept
	for t, n := range st.perTable {
		if n > ix.cfg.BulkKeys {
			st.bulk[t] = true
			ix.tableLocks[t] = id
			delete(st.perTable, t)
		}
	}
}

// commitRecord is what the last fragment of a transaction records: the
// keys its earlier fragments locked one by one, then its own, and a
// whole-table write (writeset.TableBulk) for each table it locked whole.
func (ix *Index) commitRecord(ws *writeset.WriteSet) *writeset.WriteSet {
	st := ix.streams[ws.Stream.ID]
	if st == nil {
		return ws
	}
	rec := &writeset.WriteSet{ID: ws.ID, LastSeen: ws.LastSeen}
	rec.Keys = make([]writeset.Key, 0, len(st.keys)+len(ws.Keys))
	rec.Keys = append(rec.Keys, st.keys...)
	for _, k := range ws.Keys {
		t, _ := tableOf(k.Key)
		if _, held := ix.locks[string(k.Key)]; !held && !st.bulk[t] {
			rec.Keys = append(rec.Keys, k)
		}
	}
	seen := map[uint64]bool{}
	for _, t := range ws.Tables {
		if st.bulk[t.ID] {
			t.Flags |= writeset.TableBulk
		}
		rec.Tables = append(rec.Tables, t)
		seen[t.ID] = true
	}
	for _, t := range slices.Sorted(maps.Keys(st.tables)) {
		if !seen[t] {
			tb := writeset.Table{ID: t, SchemaPos: ws.LastSeen}
			if st.bulk[t] {
				tb.Flags = writeset.TableBulk
			}
			rec.Tables = append(rec.Tables, tb)
		}
	}
	return rec
}

// endStream releases a streaming transaction's locks; it reports whether
// the transaction was open.
func (ix *Index) endStream(id writeset.ID) bool {
	st := ix.streams[id]
	if st == nil {
		return false
	}
	for _, k := range st.keys {
		delete(ix.locks, string(k.Key))
	}
	for t := range st.bulk {
		if ix.tableLocks[t] == id {
			delete(ix.tableLocks, t)
		}
	}
	delete(ix.streams, id)
	return true
}

// abortByDDL ends the streaming transactions on the tables a DDL that
// passed changed: like a schema change in Galera, the DDL wins.
func (ix *Index) abortByDDL(ws *writeset.WriteSet) []writeset.ID {
	if len(ix.streams) == 0 || ws.Flags&writeset.FlagDDL == 0 {
		return nil
	}
	var ended []writeset.ID
	for _, t := range ws.Tables {
		if t.Flags&writeset.TableSchemaChange == 0 {
			continue
		}
		for _, id := range ix.Streams() {
			if ix.streams[id].tables[t.ID] {
				ix.endStream(id)
				ended = append(ended, id)
			}
		}
	}
	return ended
}

// AbortNode ends the streaming transactions whose origin is the raft
// member node (it was removed from the cluster) and returns them.
func (ix *Index) AbortNode(node uint64) []writeset.ID {
	var ended []writeset.ID
	for _, id := range ix.Streams() {
		if ix.streams[id].node == node {
			ix.endStream(id)
			ended = append(ended, id)
		}
	}
	return ended
}

// Streams returns the open streaming transactions in a deterministic order.
func (ix *Index) Streams() []writeset.ID {
	return slices.SortedFunc(maps.Keys(ix.streams), writeset.ID.Compare)
}

// RestoreStream reopens a streaming transaction after a restart or a state
// transfer from its fragments as stored (in order), once the replay of the
// certification records is finished.
func (ix *Index) RestoreStream(frags []*writeset.WriteSet) {
	for _, ws := range frags {
		ix.lockStream(ws)
	}
}

func (ix *Index) check(ws *writeset.WriteSet) Verdict {
	if _, dup := ix.decided[ws.ID]; dup {
		return Verdict{Reason: ReasonDuplicate}
	}
	if ws.Flags&(writeset.FlagHeartbeat|writeset.FlagRetire) != 0 {
		return Verdict{OK: true}
	}
	var own writeset.ID // the streaming transaction ws belongs to
	if ws.Flags&writeset.StreamFlags != 0 {
		own = ws.Stream.ID
		if ws.Flags&writeset.FlagStreamRollback != 0 {
			return Verdict{OK: true}
		}
		if _, open := ix.streams[own]; !open && ws.Stream.Frag > 0 {
			return Verdict{Reason: ReasonStreamEnded}
		}
	}
	if len(ix.locks) > 0 || len(ix.tableLocks) > 0 {
		for _, k := range ws.Keys {
			if holder, held := ix.locks[string(k.Key)]; held && holder != own {
				return Verdict{Reason: ReasonLocked}
			}
			if t, ok := tableOf(k.Key); ok && len(ix.tableLocks) > 0 {
				if holder, held := ix.tableLocks[t]; held && holder != own {
					return Verdict{Reason: ReasonLocked}
				}
			}
		}
	}
	origin := ws.ID.Origin
	for _, t := range ws.Tables {
		if t.SchemaPos < ix.horizon {
			return Verdict{Reason: ReasonTooOld}
		}
		ts := ix.tables[t.ID]
		if ts == nil {
			continue
		}
		if ts.ddl > t.SchemaPos {
			return Verdict{Reason: ReasonSchema, Conflict: ts.ddl}
		}
		if t.Flags&writeset.TableRewrite != 0 && ts.writes.seq > t.SchemaPos {
			return Verdict{Reason: ReasonTable, Conflict: ts.writes.seq}
		}
	}
	var lastTable uint64
	var lastBulk *writer
	for _, k := range ws.Keys {
		if k.Pos < ix.horizon {
			return Verdict{Reason: ReasonTooOld}
		}
		if ix.bulkTables > 0 {
			if id, ok := tableOf(k.Key); ok {
				if lastBulk == nil || id != lastTable {
					lastTable, lastBulk = id, &writer{}
					if ts := ix.tables[id]; ts != nil {
						lastBulk = &ts.bulk
					}
				}
				if s := lastBulk.latestNotBy(origin); s > k.Pos {
					return Verdict{Reason: ReasonKey, Conflict: s}
				}
			}
		}
		w := ix.keys[string(k.Key)]
		if w == nil {
			continue
		}
		if s := w.latestNotBy(origin); s > k.Pos {
			return Verdict{Reason: ReasonKey, Conflict: s}
		}
	}
	return Verdict{OK: true}
}

// Record adds ws at seqno with its verdict and advances the window.
// Certify uses it after checking.
func (ix *Index) Record(seqno uint64, ws *writeset.WriteSet, ok bool) {
	ix.record(seqno, ws, ok)
	ix.advance(seqno)
}

// BeginReplay starts a replay that FinishReplay will end with horizon. The
// keys of write-sets at or below it are not recorded: no verdict can depend
// on them (a key read below the horizon is too old), and a replay over
// millions of rows loaded long ago would otherwise build a map of millions
// of keys only to forget them.
func (ix *Index) BeginReplay(horizon uint64) { ix.horizon = horizon }

// Replay adds ws at seqno with a verdict decided earlier, without moving
// the horizon. A restarting node replays the log window (the last Window
// entries before its applied seqno) with the verdicts it stored, between
// BeginReplay and FinishReplay with the horizon it stored at that seqno.
func (ix *Index) Replay(seqno uint64, ws *writeset.WriteSet, ok bool) {
	ix.record(seqno, ws, ok)
}

// FinishReplay ends a replay: it sets the horizon that was in force at the
// last replayed seqno and prunes accordingly, which leaves the index exactly
// as it was on the node that certified those entries first.
func (ix *Index) FinishReplay(last, horizon uint64) {
	if last > ix.last {
		ix.last = last
	}
	ix.horizon = horizon
	floor := ix.floor(ix.last)
	ix.forget(ix.dropLog(floor))
	ix.forgetBelowHorizon()
}

// record adds ws at seqno with its verdict.
func (ix *Index) record(seqno uint64, ws *writeset.WriteSet, ok bool) {
	if seqno <= ix.last {
		panic(fmt.Sprintf("certify: seqno %d after %d", seqno, ix.last))
	}
	ix.last = seqno
	e := entry{seq: seqno, id: ws.ID, lastSeen: ws.LastSeen, ok: ok, retire: ws.Flags&writeset.FlagRetire != 0}
	if _, dup := ix.decided[ws.ID]; !dup {
		ix.decided[ws.ID] = seqno
	}
	if ok {
		origin := ws.ID.Origin
		keys := ws.Keys
		if seqno <= ix.horizon {
			keys = nil // a replay below its horizon: keys are moot
		}
		bulk := ix.bulkOf(keys)
		for _, t := range ws.Tables {
			if t.Flags&writeset.TableBulk != 0 && seqno > ix.horizon {
				if bulk == nil {
					bulk = map[uint64]bool{}
				}
				bulk[t.ID] = true
			}
		}
		for id := range bulk {
			ts := ix.tables[id]
			if ts == nil {
				ts = &tableState{}
				ix.tables[id] = ts
			}
			if ts.bulk.seq == 0 {
				ix.bulkTables++
			}
			ts.bulk.record(seqno, origin)
		}
		if bulk == nil {
			e.keys = make([]string, 0, len(keys))
		}
		for _, k := range keys {
			if bulk != nil {
				if id, ok := tableOf(k.Key); ok && bulk[id] {
					continue
				}
			}
			s := string(k.Key)
			e.keys = append(e.keys, s)
			w := ix.keys[s]
			if w == nil {
				w = &writer{}
				ix.keys[s] = w
			}
			w.record(seqno, origin)
		}
		for _, t := range ws.Tables {
			ts := ix.tables[t.ID]
			if ts == nil {
				ts = &tableState{}
				ix.tables[t.ID] = ts
			}
			ts.writes.record(seqno, origin)
			if t.Flags&writeset.TableSchemaChange != 0 {
				ts.ddl = seqno
			}
		}
	}
	os := ix.origins[ws.ID.Origin]
	if os == nil {
		os = &originState{}
		ix.origins[ws.ID.Origin] = os
	}
	os.n++
	if ws.LastSeen > os.lastSeen {
		os.lastSeen = ws.LastSeen
	}
	if e.retire {
		os.retired = true
	}
	ix.log = append(ix.log, e)
}

// bulkOf returns the tables in which keys has more than BulkKeys keys, or
// nil.
func (ix *Index) bulkOf(keys []writeset.Key) map[uint64]bool {
	if len(keys) <= ix.cfg.BulkKeys {
		return nil
	}
	n := map[uint64]int{}
	for _, k := range keys {
		if id, ok := tableOf(k.Key); ok {
			n[id]++
		}
	}
	var bulk map[uint64]bool
	for id, c := range n {
		if c > ix.cfg.BulkKeys {
			if bulk == nil {
				bulk = map[uint64]bool{}
			}
			bulk[id] = true
		}
	}
	return bulk
}

// Skip notes a log position that carried no write-set (a configuration
// change or an empty entry), so the window moves with the log.
func (ix *Index) Skip(seqno uint64) {
	if seqno <= ix.last {
		return
	}
	ix.last = seqno
	ix.advance(seqno)
}

// ReplaySkip is Skip during a replay.
func (ix *Index) ReplaySkip(seqno uint64) {
	if seqno > ix.last {
		ix.last = seqno
	}
}

func (ix *Index) floor(seqno uint64) uint64 {
	if seqno > ix.cfg.Window {
		return seqno - ix.cfg.Window
	}
	return 0
}

// advance moves the window to seqno: it drops entries that left it,
// recomputes the horizon (never lowering it) and forgets writes at or below
// the horizon.
func (ix *Index) advance(seqno uint64) {
	floor := ix.floor(seqno)
	dropped := ix.dropLog(floor)
	h := seqno
	for _, os := range ix.origins {
		if !os.retired && os.lastSeen < h {
			h = os.lastSeen
		}
	}
	ix.horizon = max(ix.horizon, h, floor)
	ix.forget(dropped)
	ix.forgetBelowHorizon()
	for len(ix.keys) > ix.cfg.MaxKeys && ix.pruned < len(ix.log) {
		ix.horizon = max(ix.horizon, ix.log[ix.pruned].seq)
		ix.forgetBelowHorizon()
	}
}

// dropLog removes log entries with seq < floor, forgetting their ids and
// origin counts, and returns them (valid until the next call).
func (ix *Index) dropLog(floor uint64) []entry {
	i := 0
	for ; i < len(ix.log) && ix.log[i].seq < floor; i++ {
		e := &ix.log[i]
		if ix.decided[e.id] == e.seq {
			delete(ix.decided, e.id)
		}
		if os := ix.origins[e.id.Origin]; os != nil {
			os.n--
			if os.n == 0 {
				delete(ix.origins, e.id.Origin)
			} else if e.retire {
				// write-sets ordered after the retirement (abandoned
				// ones, late): an index replayed from the window
				// sees only them, so this one must count them too
				os.retired = false
			}
		}
	}
	if i == 0 {
		return nil
	}
	dropped := ix.log[:i:i]
	ix.log = ix.log[i:]
	ix.pruned = max(ix.pruned-i, 0)
	// the backing array is reclaimed when append reallocates; keep the
	// dropped prefix from pinning memory forever by compacting when the
	// live part is small relative to the capacity
	if cap(ix.log) > 1024 && len(ix.log) < cap(ix.log)/4 {
		ix.log = append(make([]entry, 0, 2*len(ix.log)+16), ix.log...)
	}
	return dropped
}

// forget deletes the keys of entries whose latest write is at or below the
// horizon.
func (ix *Index) forget(entries []entry) {
	for i := range entries {
		ix.forgetKeys(&entries[i])
	}
}

// forgetBelowHorizon forgets the keys of log entries at or below the horizon
// not forgotten yet.
func (ix *Index) forgetBelowHorizon() {
	for ix.pruned < len(ix.log) && ix.log[ix.pruned].seq <= ix.horizon {
		ix.forgetKeys(&ix.log[ix.pruned])
		ix.pruned++
	}
}

func (ix *Index) forgetKeys(e *entry) {
	for _, k := range e.keys {
		if w := ix.keys[k]; w != nil && w.seq <= ix.horizon {
			delete(ix.keys, k)
		}
	}
	e.keys = nil
}
