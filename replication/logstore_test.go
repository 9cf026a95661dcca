package replication

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

func entries(lo, hi, term uint64, size int) []*pb.Entry {
	var out []*pb.Entry
	for i := lo; i <= hi; i++ {
		out = append(out, &pb.Entry{Index: new(i), Term: new(term), Data: make([]byte, size)})
	}
	return out
}

// TestLogStoreCompaction covers retention by bytes, compaction, the
// truncation of a conflicting suffix and reopening.
func TestLogStoreCompaction(t *testing.T) {
	fs := vfs.NewMem()
	db, err := pebble.Open("db", &pebble.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := OpenLogStore(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(entries(1, 100, 1, 100), nil, true); err != nil {
		t.Fatal(err)
	}
	per := s.Bytes() / 100
	// a conflicting suffix from a new leader replaces 91..100 by 91..95
	if err := s.Save(entries(91, 95, 2, 100), nil, true); err != nil {
		t.Fatal(err)
	}
	if last, _ := s.LastIndex(); last != 95 || s.Bytes() != 95*per {
		t.Fatalf("after truncation: last %d, bytes %d, want 95, %d", last, s.Bytes(), 95*per)
	}
	for _, tc := range []struct {
		retain uint64
		point  uint64
	}{
		{retain: 1 << 30, point: 0},
		{retain: 95 * per, point: 0},
		{retain: 90 * per, point: 5},
		{retain: 10*per + 1, point: 85},
		{retain: 0, point: 95},
	} {
		if got := s.RetentionPoint(tc.retain); got != tc.point {
			t.Errorf("RetentionPoint(%d) = %d, want %d", tc.retain, got, tc.point)
		}
	}
	if err := s.Compact(60); err != nil {
		t.Fatal(err)
	}
	if first, _ := s.FirstIndex(); first != 61 || s.Bytes() != 35*per {
		t.Fatalf("after compaction: first %d bytes %d", first, s.Bytes())
	}
	if _, err := s.Entries(50, 70, 1<<30); err != raft.ErrCompacted {
		t.Fatalf("reading compacted entries: %v", err)
	}
	if term, err := s.Term(60); err != nil || term != 1 {
		t.Fatalf("term of the compaction point: %d %v", term, err)
	}
	if term, err := s.Term(93); err != nil || term != 2 {
		t.Fatalf("term of 93: %d %v", term, err)
	}
	s2, err := OpenLogStore(db)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := s2.FirstIndex()
	last, _ := s2.LastIndex()
	if first != 61 || last != 95 || s2.Bytes() != s.Bytes() {
		t.Fatalf("reopened: [%d, %d] %d bytes, want [61, 95] %d", first, last, s2.Bytes(), s.Bytes())
	}
	ents, err := s2.Entries(61, 96, 1<<30)
	if err != nil || len(ents) != 35 {
		t.Fatalf("reopened entries: %d %v", len(ents), err)
	}
}
