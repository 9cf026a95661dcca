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
		type rec struct {
			seq uint64
			ws  *writeset.WriteSet
			ok  bool
		}
		var log []rec
		seq := uint64(0)
		seen := map[uint64]uint64{}
		next := func(ix []*Index) []Verdict {
			seq++
			ws := randomWriteSet(rng, seen, uint64(1+rng.IntN(3)), seq, seq-1)
			var out []Verdict
			for _, x := range ix {
				out = append(out, x.Certify(seq, ws))
			}
			log = append(log, rec{seq, ws, out[0].OK})
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
		full, skipping := New(cfg), New(cfg)
		skipping.BeginReplay(horizon)
		for _, r := range log {
			full.Replay(r.seq, r.ws, r.ok)
			skipping.Replay(r.seq, r.ws, r.ok)
		}
		full.FinishReplay(seq, horizon)
		skipping.FinishReplay(seq, horizon)
		if full.Len() != live.Len() || skipping.Len() != live.Len() {
			t.Fatalf("seed %d: keys held: live %d, full replay %d, skipping replay %d", seed, live.Len(), full.Len(), skipping.Len())
		}
		for i := range 200 {
			v := next([]*Index{live, full, skipping})
			if v[0] != v[1] || v[0] != v[2] {
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
		if a.Reason != c.want || a != b {
			t.Errorf("case %d: live %+v, replayed %+v, want reason %v", i, a, b, c.want)
		}
	}
}
