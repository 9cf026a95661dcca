package storage

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestLogSpansPolicyEnds(t *testing.T) {
	f := logSpans([][]byte{[]byte("rv"), []byte("rl")})
	for _, tc := range []struct{ start, end string }{
		{"a", "rl"},
		{"r", "rl"},
		{"rh", "rl"},
		{"rl", "rm"},
		{"rl\x00\x05", "rm"},
		{"rm", "rv"},
		{"rv\xff", "rw"},
		{"rw", ""},
		{"t\x00", ""},
	} {
		_, end, err := f([]byte(tc.start))
		if err != nil || string(end) != tc.end {
			t.Errorf("policy at %q ends at %q (%v), want %q", tc.start, end, err, tc.end)
		}
	}
}

// TestLogSpansOwnTables writes keys around and inside two log spans in
// every flush and checks that no sstable, flushed or compacted, holds keys
// of a log span together with keys outside it.
func TestLogSpansOwnTables(t *testing.T) {
	spans := [][]byte{[]byte("rl"), []byte("rv")}
	e, err := Open(Config{Dir: "db", FS: vfs.NewMem(), CacheBytes: 8 << 20, MemTableBytes: 1 << 20, LogSpans: spans})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	db := e.DB()
	val := bytes.Repeat([]byte("v"), 100)
	idx := uint64(0)
	for round := 0; round < 20; round++ {
		b := db.NewBatch()
		for i := 0; i < 2000; i++ {
			idx++
			keys := [][]byte{
				[]byte("m"),  // metadata, rewritten at every commit
				[]byte("rh"), // hard state, next to the log
				binary.BigEndian.AppendUint64([]byte("rl"), idx),             // log entries, appended
				binary.BigEndian.AppendUint64([]byte("rv"), idx),             // certification records, appended
				binary.BigEndian.AppendUint64([]byte("t"), idx*7919%1000003), // rows, anywhere
			}
			for _, k := range keys {
				if err := b.Set(k, val, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := b.DeleteRange([]byte("rl"), binary.BigEndian.AppendUint64([]byte("rl"), idx/2), nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(t.Context(), []byte("a"), []byte("z"), false); err != nil {
		t.Fatal(err)
	}
	levels, err := db.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	tables := 0
	for _, level := range levels {
		for _, tbl := range level {
			tables++
			lo, hi := tbl.Smallest.UserKey, tbl.Largest.UserKey
			for _, p := range spans {
				// a table is inside the span, or wholly before or after it
				inside := bytes.HasPrefix(lo, p) && bytes.HasPrefix(hi, p)
				before := bytes.Compare(hi, p) < 0
				after := bytes.Compare(lo, p) > 0 && !bytes.HasPrefix(lo, p)
				if !inside && !before && !after {
					t.Errorf("a table holds [%q, %q], across log span %q", lo, hi, p)
				}
			}
		}
	}
	if tables == 0 {
		t.Fatal("no sstables")
	}
}
