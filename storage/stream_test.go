package storage

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/certusdb/certus/writeset"
)

// TestStreamEqualsSerialApply applies the same random history to two
// engines. One applies each streaming transaction's fragments as they
// come, between other write-sets on other rows (as certification's locks
// guarantee), sometimes restarts in the middle, then commits or rolls it
// back; the other applies the fragments one after the other where the
// transaction commits, or nothing where it rolls back. Until the commit
// the streaming engine's visible state must not change; after it, both
// must hold the same state, whose digest matches their data. For even
// seeds the streaming engine commits every batch by ingestion (see
// ingest.go), so both ways of committing are compared too; on odd seeds
// its builders run at a lower priority (Config.BuildNice). One round in
// four streams more fragments than a builder's queue holds. Half the
// rounds seal their last fragment (writeset.FlagStreamSealed), mostly
// with a commit that carries no rows, which with ingestion on commits the
// batch from the files written ahead; none may be left behind.
func TestStreamEqualsSerialApply(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		sfs := vfs.NewMem()
		cfg := Config{Dir: "db", FS: sfs, CacheBytes: 8 << 20, BuildNice: 5}
		if seed%2 == 0 {
			cfg.IngestBytes, cfg.BuildNice = 1, 0
		}
		hs, hx, ti := pairWithTable(t, vfs.NewMem(), sfs)
		serial, streamed := hs.e, hx.e
		reopen := func() {
			if err := streamed.Close(); err != nil {
				t.Fatal(err)
			}
			var err error
			if streamed, err = Open(cfg); err != nil {
				t.Fatal(err)
			}
			hx.e = streamed
		}
		reopen()
		r := rand.New(rand.NewSource(seed))
		row := randomRow(t, r, ti)
		for round := 0; round < 8; round++ {
			id := writeset.ID{Origin: 2, Seq: uint64(round + 1)}
			var frags []*writeset.WriteSet
			n := 1 + r.Intn(4)
			if round%4 == 3 {
				n = 2*builderBehind + r.Intn(4)
			}
			for f := 0; f <= n; f++ {
				ws := &writeset.WriteSet{ID: writeset.ID{Origin: 2, Seq: uint64(100*round + f)}, Flags: writeset.FlagFragment,
					Stream: writeset.Stream{ID: id, Node: 1, Frag: uint64(f)}}
				if f == n {
					ws.Flags = writeset.FlagStreamCommit
				}
				// a row appears once per fragment, and again in later ones
				for _, rid := range r.Perm(200)[:r.Intn(40)] {
					ws.Ops = append(ws.Ops, row(int64(rid)))
				}
				frags = append(frags, ws)
			}
			sealed := r.Intn(2) == 0
			if sealed {
				frags[n-1].Flags |= writeset.FlagStreamSealed
				if r.Intn(4) != 0 {
					frags[n].Ops = nil
				}
			}
			rollback := r.Intn(4) == 0
			before := streamed.digest
			for f, ws := range frags[:n] {
				hx.seqno++
				if err := streamed.ApplyFragment(hx.seqno, ws, ws.Encode(nil), nil); err != nil {
					t.Fatal(err)
				}
				for i := r.Intn(3); i > 0; i-- { // others' write-sets on rows the stream does not hold
					op := row(200 + int64(r.Intn(100)))
					hs.apply(op)
					hx.apply(op)
					before = streamed.digest
				}
				reopened := f == n/2 && r.Intn(2) == 0
				if reopened {
					reopen() // the batch is rebuilt, without files
				}
				if f == n-1 && sealed && !reopened && cfg.IngestBytes != 0 {
					if err := streamed.AwaitStreamBacklog(context.Background(), id, 0); err != nil {
						t.Fatal(err)
					}
					if streamed.streams[id].files == nil {
						t.Fatalf("seed %d round %d: the sealed batch was not written out", seed, round)
					}
				}
				if streamed.digest != before {
					t.Fatalf("seed %d round %d: a fragment changed the visible state", seed, round)
				}
			}
			if rollback {
				hx.seqno++
				if err := streamed.MarkApplied(hx.seqno, streamed.EndStreams([]writeset.ID{id})); err != nil {
					t.Fatal(err)
				}
			} else {
				hx.seqno++
				if _, err := streamed.CommitStream(hx.seqno, frags[n], nil, nil); err != nil {
					t.Fatal(err)
				}
				for _, ws := range frags {
					hs.apply(ws.Ops...)
				}
			}
			if left, err := streamed.StoredStreams(); err != nil || len(left) != 0 || streamed.OpenStreams() != 0 {
				t.Fatalf("seed %d round %d: fragments left after the end: %d stored, %d open (%v)", seed, round, len(left), streamed.OpenStreams(), err)
			}
			if left, _ := sfs.List(sfs.PathJoin("db", ingestDir)); len(left) != 0 {
				t.Fatalf("seed %d round %d: files left to ingest: %v", seed, round, left)
			}
			hs.checkDigest()
			hx.checkDigest()
			_, ds := serial.StateDigest()
			_, dx := streamed.StateDigest()
			if ds != dx {
				t.Fatalf("seed %d round %d (rollback %v): serial digest %s, streamed %s", seed, round, rollback, ds, dx)
			}
		}
		if cfg.IngestBytes != 0 && streamed.IngestedBatches() == 0 {
			t.Fatalf("seed %d: no batch was ingested", seed)
		}
		serial.Close()
		streamed.Close()
	}
}

// TestAwaitStreamBacklog: the origin's wait returns once the builder has
// at most n fragments left (the one it is adding counts), at once for a
// stream it does not know, and with ctx's error when ctx ends first. The
// builder is played by the test, so each step is exact.
func TestAwaitStreamBacklog(t *testing.T) {
	e := openMem(t, vfs.NewMem())
	defer e.Close()
	id := writeset.ID{Origin: 2, Seq: 1}
	ctx := context.Background()
	if err := e.AwaitStreamBacklog(ctx, id, 0); err != nil {
		t.Fatalf("unknown stream: %v", err)
	}
	st := &stream{wake: make(chan struct{}, 1), progress: make(chan struct{}), built: make(chan struct{}),
		queue: make([]fragmentJob, 3)}
	e.applyMu.Lock()
	e.setStream(id, st)
	e.applyMu.Unlock()

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.AwaitStreamBacklog(cancelled, id, 2); err != context.Canceled {
		t.Fatalf("3 queued, n=2, ctx cancelled: %v, want context.Canceled", err)
	}
	if err := e.AwaitStreamBacklog(cancelled, id, 3); err != nil {
		t.Fatalf("3 queued, n=3: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- e.AwaitStreamBacklog(ctx, id, 1) }()
	step := func(wantDone bool) {
		t.Helper()
		if _, ok := st.next(); !ok {
			t.Fatal("next found nothing queued")
		}
		st.added()
		select {
		case err := <-done:
			if !wantDone || err != nil {
				t.Fatalf("wait returned %v with %d queued", err, len(st.queue))
			}
		case <-time.After(50 * time.Millisecond):
			if wantDone {
				t.Fatalf("wait still blocked with %d queued", len(st.queue))
			}
		}
	}
	step(false) // 2 queued
	step(false) // 1 queued, 1 being added (next marks it adding again)
	step(true)  // 0 queued, 1 being added
	e.applyMu.Lock()
	e.setStream(id, nil) // it has no batch for Close to discard
	e.applyMu.Unlock()
}
