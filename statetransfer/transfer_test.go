package statetransfer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/certusdb/certus/storage"
)

// The tests run a donor and a joiner over in-memory pebble databases
// connected by pipes, with the faults a real network and real nodes
// produce: cut streams, corrupt chunks, a donor that lost its checkpoint.

// the state is the keys of one of the engine's replicated spaces, so that
// its digest is also the stored state digest the joiner checks
var ranges = []storage.KeyRange{{Lo: []byte("t"), Hi: []byte("u")}}

var recordKey = []byte("record")

func openDB(t testing.TB, fs vfs.FS, dir string) *pebble.DB {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{FS: fs, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fill writes n pairs of the state (and one outside it) and returns the
// state's digest.
func fill(t testing.TB, db *pebble.DB, n int) storage.Digest {
	t.Helper()
	var d storage.Digest
	b := db.NewBatch()
	for i := 0; i < n; i++ {
		k, v := fmt.Appendf(nil, "t%06d", i), bytes.Repeat([]byte{byte(i)}, 100)
		d.Toggle(k, v)
		if err := b.Set(k, v, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Set([]byte("local"), []byte("not part of the state"), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	return d
}

type rig struct {
	donor    *Donor
	joiner   *Joiner
	jfs      vfs.FS
	jdb      *pebble.DB
	want     storage.Digest
	dials    int
	cutAfter []int64 // per dial: cut the stream after that many bytes (-1: never)
}

func newRig(t testing.TB, pairs int) *rig {
	fs := vfs.NewMem()
	src := openDB(t, fs, "donor")
	r := &rig{want: fill(t, src, pairs)}
	var err error
	r.donor, err = NewDonor(DonorConfig{
		DB: src, FS: fs, Dir: "sst", Ranges: ranges, ChunkBytes: 4 << 10, Nice: 5,
		Describe: func(pebble.Reader) (Meta, error) { return Meta{Seqno: 7, StateDigest: r.want}, nil },
		Applied:  func() uint64 { return 7 },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.donor.Close)
	r.jfs = vfs.NewMem()
	r.jdb = openDB(t, r.jfs, "joiner")
	r.joiner = r.newJoiner()
	return r
}

func (r *rig) newJoiner() *Joiner {
	return NewJoiner(JoinerConfig{Name: "j", DB: r.jdb, FS: r.jfs, TempDir: "incoming", Ranges: ranges, RecordKey: recordKey,
		Dial: r.dial, RetryDelay: time.Millisecond})
}

func (r *rig) dial(ctx context.Context, addr string, req []byte) (io.ReadCloser, error) {
	client, server := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.donor.Serve(ctx, server, req)
		server.Close()
	}()
	cut := int64(-1)
	if r.dials < len(r.cutAfter) {
		cut = r.cutAfter[r.dials]
	}
	r.dials++
	var rd io.Reader = client
	if cut >= 0 {
		rd = io.LimitReader(client, cut)
	}
	return readCloser{rd, func() error { client.Close(); <-done; return nil }}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// check verifies the joiner holds exactly the donor's state.
func (r *rig) check(t *testing.T) {
	t.Helper()
	var got storage.Digest
	it, _ := r.jdb.NewIter(nil)
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if bytes.Equal(it.Key(), []byte("local")) || bytes.Equal(it.Key(), recordKey) {
			t.Fatalf("joiner holds %q", it.Key())
		}
		got.Toggle(it.Key(), it.Value())
	}
	if got != r.want {
		t.Fatalf("joiner state digest %s, donor %s", got, r.want)
	}
}

func TestTransfer(t *testing.T) {
	plan := Plan{MinSeqno: 5, Donors: []string{"d"}}
	for _, tc := range []struct {
		name string
		// cutAfter cuts the first streams part way
		cutAfter []int64
		// corrupt damages that many chunks
		corrupt int
		// stale leaves rubbish in the joiner's state and an old record
		stale bool
	}{
		{name: "whole"},
		{name: "resumes after cut streams", cutAfter: []int64{50 << 10, 90 << 10, 0}},
		{name: "refetches corrupt chunks", corrupt: 2},
		{name: "replaces what was there", stale: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 2000)
			r.cutAfter = tc.cutAfter
			r.donor.CorruptNextChunks(tc.corrupt)
			if tc.stale {
				if err := r.jdb.Set([]byte("t-stale"), []byte("x"), pebble.Sync); err != nil {
					t.Fatal(err)
				}
			}
			finalized := false
			m, err := r.joiner.Run(context.Background(), plan, func(b *pebble.Batch, m Meta) error {
				finalized = true
				return b.Set([]byte("caller"), []byte("x"), nil)
			})
			if err != nil {
				t.Fatal(err)
			}
			if m.Seqno != 7 || !finalized {
				t.Fatalf("meta %+v finalized %v", m, finalized)
			}
			if err := r.jdb.Delete([]byte("caller"), pebble.Sync); err != nil {
				t.Fatal(err)
			}
			r.check(t)
			if _, pending, _ := r.joiner.Pending(); pending {
				t.Fatal("record left behind")
			}
			if p := r.joiner.Progress(); p.Bytes != p.Total || p.Total == 0 {
				t.Fatalf("progress %+v", p)
			}
		})
	}
}

// TestResumeAfterRestart stops a transfer part way, as a joiner crash
// would, and finishes it with a new joiner on the same database: only the
// missing part is sent again.
func TestResumeAfterRestart(t *testing.T) {
	r := newRig(t, 40000) // 4 MB: ingested in files of 1 MiB
	plan := Plan{MinSeqno: 5, Donors: []string{"d"}}
	ctx, cancel := context.WithCancel(context.Background())
	r.cutAfter = []int64{2600 << 10}
	r.joiner.cfg.Dial = func(c context.Context, addr string, req []byte) (io.ReadCloser, error) {
		if r.dials > 0 {
			cancel() // the joiner "dies" after the first, cut stream
			return nil, errors.New("down")
		}
		return r.dial(c, addr, req)
	}
	if _, err := r.joiner.Run(ctx, plan, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v", err)
	}
	got, pending, err := r.joiner.Pending()
	if err != nil || !pending || got.MinSeqno != plan.MinSeqno {
		t.Fatalf("pending %v %+v %v", pending, got, err)
	}
	first := r.joiner.Progress().Bytes
	j := r.newJoiner()
	if _, err := j.Run(context.Background(), got, nil); err != nil {
		t.Fatal(err)
	}
	// what was ingested before the stop is kept: at most the open file is
	// sent again
	p := j.Progress()
	if p.Resumed == 0 || p.Resumed > first || first-p.Resumed > 1<<20 {
		t.Fatalf("resumed from %d of %d, first attempt got %d", p.Resumed, p.Total, first)
	}
	r.check(t)
}

// TestCheckpointGone starts over when the donor no longer has the
// checkpoint a transfer began with.
func TestCheckpointGone(t *testing.T) {
	r := newRig(t, 2000)
	plan := Plan{MinSeqno: 5, Donors: []string{"d"}}
	r.cutAfter = []int64{60 << 10}
	dial := r.dial
	r.joiner.cfg.Dial = func(ctx context.Context, addr string, req []byte) (io.ReadCloser, error) {
		if r.dials == 1 {
			r.donor.Close() // forget every checkpoint
			r.donor.cps = map[string]*checkpoint{}
			_ = r.donor.fs.RemoveAll("sst")
		}
		return dial(ctx, addr, req)
	}
	if _, err := r.joiner.Run(context.Background(), plan, nil); err != nil {
		t.Fatal(err)
	}
	r.check(t)
}

// TestDonorStateMismatch refuses a state whose data does not match the
// digest stored with it.
func TestDonorStateMismatch(t *testing.T) {
	r := newRig(t, 100)
	r.donor.cfg.Describe = func(pebble.Reader) (Meta, error) { return Meta{Seqno: 7}, nil }
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := r.joiner.Run(ctx, Plan{MinSeqno: 5, Donors: []string{"d"}}, nil); err == nil {
		t.Fatal("a state that does not match its digest was installed")
	}
}
