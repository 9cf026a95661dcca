package certify

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/certusdb/certus/writeset"
)

// randomWriteSet returns a write-set of origin o, which has seen up to
// seen[o] (a little behind the log's last seqno, never going back): a few
// of 200 row keys of table 1, read between seen[o] and last.
func randomWriteSet(rng *rand.Rand, seen map[uint64]uint64, o, seq, last uint64) *writeset.WriteSet {
	seen[o] = max(seen[o], last-min(last, uint64(rng.IntN(6))))
	ws := &writeset.WriteSet{
		ID:       writeset.ID{Origin: o, Seq: seq},
		LastSeen: seen[o],
	}
	ws.Tables = []writeset.Table{{ID: 1, SchemaPos: ws.LastSeen}}
	for range 1 + rng.IntN(3) {
		ws.Keys = append(ws.Keys, writeset.Key{
			Kind: writeset.KeyRow,
			Key:  fmt.Appendf(nil, "k%d", rng.IntN(200)),
			Pos:  seen[o] + uint64(rng.IntN(int(last-seen[o])+1)),
		})
	}
	return ws
}

// TestReplayRebuildsTheIndex certifies a random log, rebuilds the index
// from that log's verdicts as a restarting node does (with and without
// skipping the keys below the horizon), and requires all three to decide
// the same way from then on.
func TestReplayRebuildsTheIndex(t *testing.T) {
	conflicts := 0
	for seed := uint64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		cfg := Config{Window: 40, MaxKeys: 1000}
		live := New(cfg)
		var log []logged
		seq := uint64(0)
		seen := map[uint64]uint64{}
		next := func(ix []*Index) []Verdict {
			seq++
			ws := randomWriteSet(rng, seen, uint64(1+rng.IntN(3)), seq, seq-1)
			var out []Verdict
			for _, x := range ix {
				out = append(out, x.Certify(seq, ws))
			}
			log = append(log, logged{seq, ws, out[0].OK})
			return out
		}
		failed := 0
		for range 200 {
			if !next([]*Index{live})[0].OK {
				failed++
			}
		}
		horizon := live.Horizon()
		conflicts += failed
		if failed > 100 || horizon < 100 {
			t.Fatalf("seed %d: %d conflicts, horizon %d: the log does not exercise the index", seed, failed, horizon)
		}
		full := New(cfg)
		for _, r := range log {
			full.Replay(r.seq, r.ws, r.ok)
		}
		full.FinishReplay(seq, horizon)
		skipping := replayLog(cfg, log, horizon)
		if full.Len() != live.Len() || skipping.Len() != live.Len() {
			t.Fatalf("seed %d: keys held: live %d, full replay %d, skipping replay %d", seed, live.Len(), full.Len(), skipping.Len())
		}
		for i := range 200 {
			v := next([]*Index{live, full, skipping})
			if !sameVerdict(v[0], v[1]) || !sameVerdict(v[0], v[2]) {
				t.Fatalf("seed %d, write-set %d after the replay: live %+v, full replay %+v, skipping replay %+v", seed, i, v[0], v[1], v[2])
			}
		}
	}
	if conflicts == 0 {
		t.Fatalf("no conflicts in any log: the test does not exercise verdicts")
	}
}

// TestBulkWriteConflictsOnTheWholeTable certifies a write-set with more
// than BulkKeys keys in table 1: the index holds none of them, yet a later
// write-set of another origin that read any key of table 1 before it
// fails, while its own origin, other tables and later readers pass; a
// replayed index decides alike.
func TestBulkWriteConflictsOnTheWholeTable(t *testing.T) {
	key := func(table uint64, i int) []byte {
		return fmt.Appendf(binary.BigEndian.AppendUint64(nil, table), "k%d", i)
	}
	cfg := Config{Window: 1000, MaxKeys: 1000, BulkKeys: 10}
	bulk := &writeset.WriteSet{ID: writeset.ID{Origin: 1, Seq: 1}, LastSeen: 1,
		Tables: []writeset.Table{{ID: 1, SchemaPos: 1}, {ID: 2, SchemaPos: 1}}}
	for i := range 11 {
		bulk.Keys = append(bulk.Keys, writeset.Key{Kind: writeset.KeyRow, Key: key(1, i), Pos: 1})
	}
	bulk.Keys = append(bulk.Keys, writeset.Key{Kind: writeset.KeyRow, Key: key(2, 0), Pos: 1})
	live := New(cfg)
	live.Skip(1)
	if v := live.Certify(2, bulk); !v.OK {
		t.Fatalf("bulk write-set: %+v", v)
	}
	if live.Len() != 1 {
		t.Fatalf("index holds %d keys, want only table 2's one", live.Len())
	}
	replayed := New(cfg)
	replayed.ReplaySkip(1)
	replayed.Replay(2, bulk, true)
	replayed.FinishReplay(2, 1)
	one := func(origin, seq, table uint64, i int, pos uint64) *writeset.WriteSet {
		return &writeset.WriteSet{ID: writeset.ID{Origin: origin, Seq: seq}, LastSeen: 1,
			Tables: []writeset.Table{{ID: table, SchemaPos: 1}},
			Keys:   []writeset.Key{{Kind: writeset.KeyRow, Key: key(table, i), Pos: pos}}}
	}
	for i, c := range []struct {
		ws   *writeset.WriteSet
		want Reason
	}{
		{one(2, 1, 1, 500, 1), ReasonKey},  // a row the bulk write may have written, read before it
		{one(2, 2, 1, 3, 1), ReasonKey},    // a row it wrote
		{one(1, 2, 1, 3, 1), ReasonNone},   // its own origin
		{one(2, 3, 3, 3, 1), ReasonNone},   // another table
		{one(2, 4, 1, 500, 2), ReasonNone}, // read after it
		{one(2, 5, 2, 0, 1), ReasonKey},    // table 2's key is an ordinary one
	} {
		seq := uint64(3 + i)
		a, b := live.Certify(seq, c.ws), replayed.Certify(seq, c.ws)
		if a.Reason != c.want || !sameVerdict(a, b) {
			t.Errorf("case %d: live %+v, replayed %+v, want reason %v", i, a, b, c.want)
		}
	}
}

// span is n consecutive key numbers from first.
func span(first, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = first + i
	}
	return out
}

// TestStreams follows streaming transactions through their fragments: the
// locks they take, what ends them, and the keys their commit records.
func TestStreams(t *testing.T) {
	key := func(i int) []byte { return fmt.Appendf(binary.BigEndian.AppendUint64(nil, 1), "k%d", i) }
	type step struct {
		name    string
		flags   writeset.Flags
		stream  uint64 // stream seq (origin 9), 0 for none
		frag    uint64
		origin  uint64
		keys    []int
		pos     uint64
		ddl     bool
		want    Reason
		aborted []uint64 // stream seqs ended
		records int      // keys recorded by a commit
	}
	steps := []step{
		{name: "first fragment of s1 locks k1,k2", flags: writeset.FlagFragment, stream: 1, origin: 9, keys: []int{1, 2}, pos: 1},
		{name: "another origin writing k1 fails, read late", origin: 2, keys: []int{1}, pos: 100, want: ReasonLocked},
		{name: "another origin writing k3 passes", origin: 2, keys: []int{3}, pos: 1},
		{name: "s1 fragment on k3 read before that write fails and ends s1", flags: writeset.FlagFragment, stream: 1, frag: 1, origin: 9, keys: []int{3}, pos: 1, want: ReasonKey, aborted: []uint64{1}},
		{name: "k1 is free again", origin: 2, keys: []int{1}, pos: 4},
		{name: "later fragment of the ended s1 fails", flags: writeset.FlagFragment, stream: 1, frag: 2, origin: 9, keys: []int{7}, pos: 6, want: ReasonStreamEnded},
		{name: "s2 locks k4", flags: writeset.FlagFragment, stream: 2, origin: 9, keys: []int{4}, pos: 6},
		{name: "s3 cannot take k4", flags: writeset.FlagFragment, stream: 3, origin: 8, keys: []int{4, 5}, pos: 7, want: ReasonLocked},
		{name: "s2 second fragment rewrites k4 and adds k5", flags: writeset.FlagFragment, stream: 2, frag: 1, origin: 9, keys: []int{4, 5}, pos: 6},
		{name: "s2 commits with k6: records k4,k5,k6", flags: writeset.FlagStreamCommit, stream: 2, frag: 2, origin: 9, keys: []int{6}, pos: 6, records: 3},
		{name: "k5 read before s2's commit conflicts", origin: 2, keys: []int{5}, pos: 9, want: ReasonKey},
		{name: "k5 read at it passes", origin: 2, keys: []int{5}, pos: 11},
		{name: "s4 locks k8", flags: writeset.FlagFragment, stream: 4, origin: 9, keys: []int{8}, pos: 12},
		{name: "rollback of s4 frees k8", flags: writeset.FlagStreamRollback, stream: 4, frag: 1, origin: 9, aborted: []uint64{4}},
		{name: "k8 is free", origin: 2, keys: []int{8}, pos: 14},
		{name: "s5 locks k9", flags: writeset.FlagFragment, stream: 5, origin: 9, keys: []int{9}, pos: 15},
		{name: "a DDL on its table ends s5", origin: 2, ddl: true, pos: 16, aborted: []uint64{5}},
		{name: "s6 locks 60 keys", flags: writeset.FlagFragment, stream: 6, origin: 9, keys: span(1000, 60), pos: 18},
		{name: "s6 passes 100 keys in the table: it locks the table", flags: writeset.FlagFragment, stream: 6, frag: 1, origin: 9, keys: span(1060, 60), pos: 18},
		{name: "a row s6 never wrote is locked", origin: 2, keys: []int{5000}, pos: 20, want: ReasonLocked},
		{name: "s6 commits", flags: writeset.FlagStreamCommit, stream: 6, frag: 2, origin: 9, keys: []int{7000}, pos: 18},
		{name: "any row of the table read before the commit conflicts", origin: 2, keys: []int{5000}, pos: 21, want: ReasonKey},
		{name: "and read at the commit passes", origin: 2, keys: []int{5000}, pos: 22},
	}
	ix := New(Config{Window: 1000, MaxKeys: 1000, BulkKeys: 100})
	replayed := New(Config{Window: 1000, MaxKeys: 1000, BulkKeys: 100})
	for i, st := range steps {
		seq := uint64(i + 2)
		ws := &writeset.WriteSet{ID: writeset.ID{Origin: st.origin, Seq: seq}, LastSeen: 1, Flags: st.flags,
			Tables: []writeset.Table{{ID: 1, SchemaPos: max(st.pos, 1)}}}
		if st.stream != 0 {
			ws.Stream = writeset.Stream{ID: writeset.ID{Origin: 9, Seq: st.stream}, Node: 1, Frag: st.frag}
		}
		if st.ddl {
			ws.Flags |= writeset.FlagDDL
			ws.Tables[0].Flags = writeset.TableSchemaChange
		}
		for _, k := range st.keys {
			ws.Keys = append(ws.Keys, writeset.Key{Kind: writeset.KeyRow, Key: key(k), Pos: st.pos})
		}
		v := ix.Certify(seq, ws)
		if v.Reason != st.want {
			t.Fatalf("step %d (%s): reason %v, want %v", i, st.name, v.Reason, st.want)
		}
		var ended []uint64
		for _, id := range v.Aborted {
			ended = append(ended, id.Seq)
		}
		if fmt.Sprint(ended) != fmt.Sprint(st.aborted) {
			t.Fatalf("step %d (%s): ended %v, want %v", i, st.name, ended, st.aborted)
		}
		if st.records > 0 && len(v.Record.Keys) != st.records {
			t.Fatalf("step %d (%s): commit recorded %d keys, want %d", i, st.name, len(v.Record.Keys), st.records)
		}
		// what a restart replays: stream flags stripped, a commit with
		// the keys it recorded, a fragment with none
		rec := *ws
		switch {
		case v.Record != nil:
			rec = *v.Record
		case st.flags != 0:
			rec.Keys = nil
		}
		rec.Flags &^= writeset.StreamFlags
		replayed.Replay(seq, &rec, v.OK)
	}
	if got := ix.Streams(); len(got) != 0 {
		t.Fatalf("streams left open: %v", got)
	}
	replayed.FinishReplay(uint64(len(steps)+1), ix.Horizon())
	probe := &writeset.WriteSet{ID: writeset.ID{Origin: 3, Seq: 1}, LastSeen: 1, Tables: []writeset.Table{{ID: 1, SchemaPos: 100}}}
	verdicts := map[Reason]int{}
	for _, k := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 1000, 1119, 5000, 7000} {
		for _, pos := range []uint64{5, 10, 11, 17, 21, 22} {
			probe.Keys = []writeset.Key{{Kind: writeset.KeyRow, Key: key(k), Pos: pos}}
			a, b := ix.check(probe), replayed.check(probe)
			if a.Reason != b.Reason {
				t.Errorf("key %d read at %d: live %v, replayed %v", k, pos, a.Reason, b.Reason)
			}
			verdicts[a.Reason]++
		}
	}
	if verdicts[ReasonNone] == 0 || verdicts[ReasonKey] == 0 {
		t.Fatalf("probes decided %v: want both passes and conflicts", verdicts)
	}
}

// TestAbortNode ends a removed node's streaming transactions only.
func TestAbortNode(t *testing.T) {
	ix := New(Defaults())
	for i, node := range []uint64{1, 2, 1} {
		ws := &writeset.WriteSet{ID: writeset.ID{Origin: node, Seq: uint64(i + 1)}, Flags: writeset.FlagFragment,
			Stream: writeset.Stream{ID: writeset.ID{Origin: node, Seq: uint64(i + 1)}, Node: node},
			Keys:   []writeset.Key{{Kind: writeset.KeyRow, Key: []byte{byte(i), 0, 0, 0, 0, 0, 0, 0, 1}}}}
		if v := ix.Certify(uint64(i+1), ws); !v.OK {
			t.Fatalf("fragment %d: %+v", i, v)
		}
	}
	if got := ix.AbortNode(1); len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 3 {
		t.Fatalf("AbortNode(1) = %v, want streams 1 and 3", got)
	}
	if got := ix.Streams(); len(got) != 1 || got[0].Seq != 2 {
		t.Fatalf("open streams %v, want stream 2", got)
	}
}

func sameVerdict(a, b Verdict) bool {
	return a.OK == b.OK && a.Reason == b.Reason && a.Conflict == b.Conflict
}

// logged is a certified write-set as the log keeps it: its seqno and verdict.
type logged struct {
	seq uint64
	ws  *writeset.WriteSet
	ok  bool
}

// replayLog rebuilds an index from log (ending at the applied seqno) as a
// restarting node does, skipping the keys below horizon.
func replayLog(cfg Config, log []logged, horizon uint64) *Index {
	x := New(cfg)
	x.BeginReplay(horizon)
	for _, r := range log {
		x.Replay(r.seq, r.ws, r.ok)
	}
	x.FinishReplay(log[len(log)-1].seq, horizon)
	return x
}

// TestRetiredOriginNoLongerHoldsTheHorizon: an origin that wrote once,
// long ago, holds the horizon at its LastSeen for as long as its write-set
// is in the window; once it retires (writeset.FlagRetire), the horizon
// follows the live origins, in the live index and in one replayed from the
// same log.
func TestRetiredOriginNoLongerHoldsTheHorizon(t *testing.T) {
	cfg := Config{Window: 1000, MaxKeys: 1000}
	live := New(cfg)
	var log []logged
	seq := uint64(0)
	certify := func(ws *writeset.WriteSet) Verdict {
		seq++
		v := live.Certify(seq, ws)
		log = append(log, logged{seq, ws, v.OK})
		return v
	}
	write := func(origin, lastSeen uint64) {
		ws := &writeset.WriteSet{ID: writeset.ID{Origin: origin, Seq: seq + 1}, LastSeen: lastSeen,
			Keys: []writeset.Key{{Kind: writeset.KeyRow, Key: fmt.Appendf(nil, "k%d", seq), Pos: lastSeen}}}
		if v := certify(ws); !v.OK {
			t.Fatalf("seqno %d: %+v", seq, v)
		}
	}
	for range 5 {
		write(1, seq)
	}
	write(9, 5) // the abandoned incarnation's last write-set
	for range 50 {
		write(1, seq)
		write(2, seq)
	}
	if h := live.Horizon(); h > 5 {
		t.Fatalf("horizon %d passed the quiet origin's LastSeen 5", h)
	}
	if v := certify(&writeset.WriteSet{ID: writeset.ID{Origin: 9, Seq: 1 << 62}, Flags: writeset.FlagRetire}); !v.OK {
		t.Fatalf("retire: %+v", v)
	}
	write(1, seq)
	write(2, seq)
	if h := live.Horizon(); h < seq-2 {
		t.Fatalf("horizon %d at seqno %d: the retired origin still holds it", h, seq)
	}
	replayed := replayLog(cfg, log, live.Horizon())
	write(2, seq)
	replayed.Certify(seq, log[len(log)-1].ws)
	if live.Horizon() != replayed.Horizon() || live.Len() != replayed.Len() {
		t.Fatalf("live index: horizon %d, %d keys; replayed: horizon %d, %d keys", live.Horizon(), live.Len(), replayed.Horizon(), replayed.Len())
	}
}

// TestWriteSetAfterRetirement: a write-set of a retired origin ordered after
// its retirement (one it abandoned) counts again once the retirement leaves
// the window, so the live index and one replayed from that window keep
// moving their horizons alike.
func TestWriteSetAfterRetirement(t *testing.T) {
	cfg := Config{Window: 20, MaxKeys: 1000}
	var log []logged
	live := New(cfg)
	add := func(origin, lastSeen uint64, flags writeset.Flags) {
		seq := uint64(len(log) + 1)
		ws := &writeset.WriteSet{ID: writeset.ID{Origin: origin, Seq: seq}, LastSeen: lastSeen, Flags: flags}
		if flags == 0 {
			ws.Keys = []writeset.Key{{Kind: writeset.KeyRow, Key: fmt.Appendf(nil, "k%d", seq), Pos: lastSeen}}
		}
		log = append(log, logged{seq, ws, live.Certify(seq, ws).OK})
	}
	for len(log) < 6 {
		add(1, uint64(len(log)), 0)
	}
	add(9, 6, writeset.FlagRetire) // seqno 7
	for len(log) < 16 {
		add(1, uint64(len(log)), 0)
	}
	add(9, 12, 0) // seqno 17, late
	for len(log) < 30 {
		add(1, uint64(len(log)), 0)
	}
	// The retirement left the window at seqno 28; replay what is in it.
	replayed := replayLog(cfg, log[len(log)-int(cfg.Window):], live.Horizon())
	for len(log) < 34 {
		add(1, uint64(len(log)), 0)
		replayed.Certify(uint64(len(log)), log[len(log)-1].ws)
		if live.Horizon() != replayed.Horizon() || live.Len() != replayed.Len() {
			t.Fatalf("seqno %d: live index: horizon %d, %d keys; replayed: horizon %d, %d keys",
				len(log), live.Horizon(), live.Len(), replayed.Horizon(), replayed.Len())
		}
	}
}
