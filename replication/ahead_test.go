package replication

import (
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

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
