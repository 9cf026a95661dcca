package storage

import (
	"context"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
)

// TestViewsShareSnapshotUntilCommit checks the shared snapshot behind read
// views: views taken between two commits share one, a commit makes the
// next view see it while older views keep their state, and readers racing
// commits always read the state of their view's seqno.
func TestViewsShareSnapshotUntilCommit(t *testing.T) {
	a, _, ti := pairWithTable(t, vfs.NewMem(), vfs.NewMem())
	e := a.e
	pk, err := ti.EncodePK(context.Background(), sql.Row{int64(1), nil, nil})
	if err != nil {
		t.Fatal(err)
	}
	key := RowKey(ti.Def.ID, pk)
	put := func(v int32) uint64 {
		a.apply(rowPut(t, ti, sql.Row{int64(1), nil, v}))
		return a.seqno
	}
	read := func(rv *ReadView) int32 {
		t.Helper()
		b, ok, err := rv.Get(key)
		if err != nil || !ok {
			t.Fatalf("seqno %d: row missing (%v)", rv.Seqno, err)
		}
		row, err := ti.DecodeRow(b)
		if err != nil {
			t.Fatal(err)
		}
		return row[2].(int32)
	}

	put(1)
	v1, v2 := e.View(), e.View()
	if v1.snap != v2.snap || v1.Seqno != v2.Seqno {
		t.Fatalf("views between two commits do not share a snapshot")
	}
	put(2)
	v3 := e.View()
	if v3.snap == v1.snap || v3.Seqno != a.seqno {
		t.Fatalf("a view after a commit reuses the snapshot before it")
	}
	v1.Close()
	if got := read(v2); got != 1 {
		t.Fatalf("older view reads %d after a sharer closed, want 1", got)
	}
	if got := read(v3); got != 2 {
		t.Fatalf("newer view reads %d, want 2", got)
	}
	v2.Close()
	v3.Close()

	// readers racing commits: each reads the value of its own seqno
	valueAt := sync.Map{} // seqno -> value
	valueAt.Store(a.seqno, int32(2))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				v := e.View()
				want, ok := valueAt.Load(v.Seqno)
				b, found, err := v.Get(key)
				if err != nil || !found {
					t.Errorf("seqno %d: row missing (%v)", v.Seqno, err)
				} else if row, err := ti.DecodeRow(b); err != nil || !ok || row[2].(int32) != want.(int32) {
					t.Errorf("view at seqno %d reads %v, want %v", v.Seqno, row, want)
				}
				v.Close()
			}
		}()
	}
	for i := int32(3); i < 300; i++ {
		// the value is known before the commit publishes its seqno
		valueAt.Store(a.seqno+1, i)
		put(i)
	}
	close(stop)
	wg.Wait()
	e.View().Close() // its snapshot stays current: Close must release it
	if err := e.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}
