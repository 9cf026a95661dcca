package replication

import (
	"testing"

	"github.com/certusdb/certus/writeset"
)

// TestDepTracker: a write-set waits for the last earlier entry that wrote
// one of its keys (row or unique key, or an operation's row), for the
// last barrier, and never for itself or later.
func TestDepTracker(t *testing.T) {
	put := func(rows ...string) *writeset.WriteSet {
		ws := &writeset.WriteSet{}
		for _, r := range rows {
			ws.Keys = append(ws.Keys, writeset.Key{Kind: writeset.KeyRow, Key: []byte(r)})
			ws.Ops = append(ws.Ops, writeset.Op{Kind: writeset.OpPut, TableID: 1, Key: []byte(r)})
		}
		return ws
	}
	unique := func(u string) *writeset.WriteSet {
		return &writeset.WriteSet{Keys: []writeset.Key{{Kind: writeset.KeyUnique, Key: []byte(u)}}}
	}
	var d depTracker
	for _, s := range []struct {
		index      uint64
		ws         *writeset.WriteSet
		preparable bool
		want       uint64
	}{
		{10, put("a"), true, 0},
		{11, put("b"), true, 0},
		{12, put("a", "c"), true, 10},
		{13, put("c", "b"), true, 12},
		{14, unique("u"), true, 0},
		{15, unique("u"), true, 14},
		{16, put("d"), false, 15}, // a schema change: a barrier, waits for all before it
		{17, put("e"), true, 16},
		{18, nil, true, 17}, // undecodable: a barrier
		{19, put("a"), true, 18},
	} {
		if got := d.note(s.index, s.ws, s.preparable); got != s.want {
			t.Errorf("write-set at %d waits for %d, want %d", s.index, got, s.want)
		}
	}
	d.barrierAt(30) // a big write-set
	if got := d.note(31, put("zz"), true); got != 30 {
		t.Errorf("after a big write-set at 30: waits for %d, want 30", got)
	}
	// a stale entry (a replaced log suffix) only makes it wait longer
	if got := d.note(25, put("a"), true); got != 24 {
		t.Errorf("write-set at 25 after a barrier at 30 waits for %d, want 24", got)
	}
	d.last = map[string]uint64{"x": 5, "y": 50}
	d.noted = depForgetAt
	for i := 0; i < depForgetAt; i++ {
		d.last[string(rune(i))+"pad"] = 1
	}
	d.forget(40)
	if _, ok := d.last["x"]; ok || d.last["y"] != 50 {
		t.Errorf("forget(40) kept %v", d.last)
	}
}
