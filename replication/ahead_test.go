package replication

import (
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// TestDiscardDoesNotWaitForPreparation: the raft loop and the apply stage
// discard stale ahead jobs; one whose preparation is in progress (here
// waiting for its read positions to be applied) must not hold them up, and
// must end without a batch.
func TestDiscardDoesNotWaitForPreparation(t *testing.T) {
	eng, err := storage.Open(storage.Config{Dir: "db", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ws := &writeset.WriteSet{
		ID:   writeset.ID{Origin: 1, Seq: 1},
		Keys: []writeset.Key{{Kind: writeset.KeyRow, Key: []byte("k"), Pos: 100}},
		Ops:  []writeset.Op{{Kind: writeset.OpPut, TableID: 1, Key: []byte("k"), Value: []byte("v")}},
	}
	j := &aheadJob{index: 200, term: 1, data: ws.Encode(nil)}
	waiting, release := make(chan struct{}), make(chan struct{})
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		once := false
		j.run(eng, func() bool {
			if !once {
				once = true
				close(waiting)
			}
			<-release
			return true
		})
	}()
	<-waiting
	discarded := make(chan struct{})
	go func() {
		j.discard()
		close(discarded)
	}()
	select {
	case <-discarded:
	case <-time.After(5 * time.Second):
		t.Fatal("discard waited for the preparation in progress")
	}
	close(release)
	<-ran
	p, err := j.prepared()
	if p != nil || !errors.Is(err, errNotPrepared) {
		t.Fatalf("discarded job: batch %v, err %v; want none and errNotPrepared", p, err)
	}
}

// TestAheadWaitsForItsOriginsEarlierWriteSets: writes of the same origin
// never conflict, so a write-set's read positions can be older than its
// origin's previous write to the same row (a key first read at the
// snapshot keeps the snapshot's position). Its batch, built from the old
// rows, must wait for those writes to be applied, or it would remove the
// index entries of a row version that no longer exists.
func TestAheadWaitsForItsOriginsEarlierWriteSets(t *testing.T) {
	eng, err := storage.Open(storage.Config{Dir: "db", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	entry := func(index, origin, seq, pos uint64) *pb.Entry {
		ws := &writeset.WriteSet{
			ID:   writeset.ID{Origin: origin, Seq: seq},
			Keys: []writeset.Key{{Kind: writeset.KeyRow, Key: []byte("k"), Pos: pos}},
			Ops:  []writeset.Op{{Kind: writeset.OpPut, TableID: 1, Key: []byte("k"), Value: []byte("v")}},
		}
		return &pb.Entry{Index: new(index), Term: new(uint64(1)), Type: new(pb.EntryNormal), Data: ws.Encode(nil)}
	}
	c := &Core{eng: eng, cfg: CoreConfig{PrepareAheadBytes: 1}, originLast: map[uint64]uint64{}}
	// origin 1 at 5, origin 2 at 6 and 7, origin 1 at 8 (read at 2)
	c.noteAppended([]*pb.Entry{entry(5, 1, 1, 0), entry(6, 2, 1, 0), entry(7, 2, 2, 3), entry(8, 1, 2, 2)}, 4)
	for index, want := range map[uint64]uint64{5: 0, 6: 0, 7: 6, 8: 5} {
		if got := jobAt(c, index).after; got != want {
			t.Errorf("job at %d waits for its origin's write-set at %d, want %d", index, got, want)
		}
	}
	// applied up to 3: the job at 8 (read positions 2) must wait for 5
	if err := eng.MarkApplied(3, nil); err != nil {
		t.Fatal(err)
	}
	waited := false
	j := jobAt(c, 8)
	j.run(eng, func() bool { waited = true; return false })
	if p, err := j.prepared(); !waited || p != nil || !errors.Is(err, errNotPrepared) {
		t.Fatalf("job at 8 did not wait for index 5: waited %v, batch %v, err %v", waited, p, err)
	}
	// after a restart, origins are unknown: wait for the whole old log
	c = &Core{eng: eng, cfg: CoreConfig{PrepareAheadBytes: 1}, originLast: map[uint64]uint64{}, originFloor: 9}
	c.noteAppended([]*pb.Entry{entry(10, 1, 3, 0)}, 9)
	if got := jobAt(c, 10).after; got != 9 {
		t.Errorf("first job after a restart waits for %d, want the old log's end 9", got)
	}
}

// jobAt returns c's ahead job at index.
func jobAt(c *Core, index uint64) *aheadJob {
	for _, j := range c.aheadJobs {
		if j.index == index {
			return j
		}
	}
	return nil
}
