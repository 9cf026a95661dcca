package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestIngestEqualsCommit: a batch of random sets and deletes over two key
// spaces, some of them repeated on one key and some on keys the database
// already holds, leaves the database the same whether it is committed or
// written as sstables and ingested, from an indexed batch and a plain one.
func TestIngestEqualsCommit(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		for _, indexed := range []bool{false, true} {
			t.Run(fmt.Sprintf("seed=%d/indexed=%v", seed, indexed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				committed, ingested := openMem(t, vfs.NewMem()), openMem(t, vfs.NewMem())
				defer committed.Close()
				defer ingested.Close()
				key := func() []byte { return fmt.Appendf([]byte{0xf0 + byte(rng.IntN(2))}, "k%03d", rng.IntN(60)) }
				for _, e := range []*Engine{committed, ingested} {
					b := e.db.NewBatch()
					for i := range 30 {
						_ = b.Set(fmt.Appendf([]byte{0xf0 + byte(i%2)}, "k%03d", i*2), []byte("old"), nil)
					}
					if err := b.Commit(pebble.NoSync); err != nil {
						t.Fatal(err)
					}
				}
				ops := make([]func(*pebble.Batch), 1+rng.IntN(200))
				for i := range ops {
					k, v := key(), fmt.Appendf(nil, "v%d", i)
					if rng.IntN(3) == 0 {
						ops[i] = func(b *pebble.Batch) { _ = b.Delete(k, nil) }
					} else {
						ops[i] = func(b *pebble.Batch) { _ = b.Set(k, v, nil) }
					}
				}
				batch := func(e *Engine) *pebble.Batch {
					b := e.db.NewBatch()
					if indexed {
						b = e.db.NewIndexedBatch()
					}
					for _, op := range ops {
						op(b)
					}
					return b
				}
				if err := batch(committed).Commit(pebble.NoSync); err != nil {
					t.Fatal(err)
				}
				files, err := ingested.writeIngestFiles(batch(ingested), "t", nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := ingested.ingest(files); err != nil {
					t.Fatal(err)
				}
				want, got := dumpRange(t, committed.db, 0xf0, 0xf2), dumpRange(t, ingested.db, 0xf0, 0xf2)
				if want != got {
					t.Fatalf("%d operations: committed\n%s\ningested\n%s", len(ops), want, got)
				}
			})
		}
	}
}

// dumpRange prints the pairs of r with a first byte in [lo, hi).
func dumpRange(t *testing.T, r pebble.Reader, lo, hi byte) string {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{lo}, UpperBound: []byte{hi}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out bytes.Buffer
	for it.First(); it.Valid(); it.Next() {
		fmt.Fprintf(&out, "%x=%s\n", it.Key(), it.Value())
	}
	return out.String()
}

// TestBottomLevelCompression: the bottom level's sstables compress rows
// that compress and store the others as they are. (A profile naming an
// algorithm the engine's table format lacks would silently become plain
// snappy everywhere; a change of pebble's adaptive compressor shows here.)
func TestBottomLevelCompression(t *testing.T) {
	fs := vfs.NewMem()
	e := openMem(t, fs)
	defer e.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name   string
		value  func(i int) []byte
		lo, hi float64 // bounds of file size / raw bytes
	}{
		{"text", func(i int) []byte {
			return fmt.Appendf(nil, "customer %d lives at %d main street and likes the colour blue very much", i%100, i%50)
		}, 0, 0.5},
		{"digits", func(int) []byte {
			v := make([]byte, 180)
			for j := range v {
				v[j] = '0' + byte(rng.IntN(10))
			}
			return v
		}, 0.95, 1.2},
	} {
		w, err := CreateSSTable(fs, tc.name+".sst", e.BottomWriterOptions())
		if err != nil {
			t.Fatal(err)
		}
		raw := 0
		for i := range 20000 {
			k, v := fmt.Appendf(nil, "k%08d", i), tc.value(i)
			raw += len(k) + len(v)
			if err := w.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		st, err := fs.Stat(tc.name + ".sst")
		if err != nil {
			t.Fatal(err)
		}
		if r := float64(st.Size()) / float64(raw); r < tc.lo || r > tc.hi {
			t.Errorf("%s: the file is %.2f of the raw bytes, want %.2f-%.2f", tc.name, r, tc.lo, tc.hi)
		}
	}
}
