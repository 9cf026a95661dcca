package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/writeset"
)

// TestRowCacheRing fills a small cache far past its size: every read
// returns the value put or nothing, the index never outgrows the ring, the
// newest entries are found, and generations gate reads and fills.
func TestRowCacheRing(t *testing.T) {
	c := newRowCache(rowCacheShards * rowCacheChunk * 2)
	key := func(i int) []byte { return binary.BigEndian.AppendUint64([]byte{spaceTable}, uint64(i)) }
	val := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 50+i%200) }
	const n = 100000
	for i := 0; i < n; i++ {
		c.put(key(i), val(i), 1)
	}
	hits := 0
	for i := 0; i < n; i++ {
		v, ok := c.get(key(i), 1)
		if ok {
			hits++
			if !bytes.Equal(v, val(i)) {
				t.Fatalf("key %d: cached %d bytes, put %d", i, len(v), len(val(i)))
			}
		}
	}
	if hits == 0 || hits == n {
		t.Fatalf("%d of %d keys cached: the ring should hold some, not all", hits, n)
	}
	for i := n - 100; i < n; i++ {
		if _, ok := c.get(key(i), 1); !ok {
			t.Fatalf("key %d, among the last put, is not cached", i)
		}
	}
	for i := range c.shards {
		if s := &c.shards[i]; uint64(len(s.index)) > s.ringBytes()/rowCacheHeader {
			t.Fatalf("shard %d indexes %d entries in a %d-byte ring", i, len(s.index), s.ringBytes())
		}
	}
	if _, ok := c.get(key(n-1), 0); ok {
		t.Fatalf("an entry filled at generation 1 served a view of generation 0")
	}

	// a commit's invalidation removes its keys and refuses fills from
	// views older than it
	b := (&pebble.Batch{})
	_ = b.Set(key(n-1), []byte("new"), nil)
	c.invalidate(b)
	if _, ok := c.get(key(n-1), c.gen); ok {
		t.Fatalf("a key the commit wrote is still cached")
	}
	c.put(key(n-1), val(n-1), c.gen-1)
	if _, ok := c.get(key(n-1), c.gen); ok {
		t.Fatalf("a view older than the commit filled the cache")
	}
	c.put(key(n-1), []byte("new"), c.gen)
	if v, ok := c.get(key(n-1), c.gen); !ok || string(v) != "new" {
		t.Fatalf("a fill at the commit's generation is not served: %q %v", v, ok)
	}
	big := (&pebble.Batch{})
	_ = big.DeleteRange([]byte{spaceTable}, []byte{spaceTable + 1}, nil)
	c.invalidate(big)
	for i := n - 100; i < n; i++ {
		if _, ok := c.get(key(i), c.gen); ok {
			t.Fatalf("key %d is cached after a range deletion over the tables", i)
		}
	}
}

// TestRowCacheMatchesPebble applies the same random write-sets to an
// engine with the row cache and one without, and reads random rows and
// index entries through views of both taken at the same seqnos, old views
// included: every read must agree. Big write-sets and range deletions
// (TRUNCATE) take the cache's clearing paths.
func TestRowCacheMatchesPebble(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	a, b, ti := pairWithTable(t, vfs.NewMem(), vfs.NewMem())
	b.e.rows = nil // b reads pebble only
	if a.e.rows == nil {
		t.Fatal("the engine has no row cache by default")
	}
	ctx := context.Background()
	const ids = 300
	keyOf := func(id int64) []byte {
		pk, _ := ti.EncodePK(ctx, sql.Row{id, nil, nil})
		if r.Intn(4) == 0 { // an index entry rather than a row
			ii := &ti.Indexes[0]
			vals, _, err := ii.IndexValues(sql.Row{id, fmt.Sprintf("u%d-%d", id, r.Intn(3)), nil})
			if err != nil {
				t.Fatal(err)
			}
			return ii.EntryKey(vals, pk)
		}
		return RowKey(ti.Def.ID, pk)
	}
	change := randomRow(t, r, ti)
	type pair struct{ a, b *ReadView }
	var views []pair
	hits := 0
	for step := 0; step < 3000; step++ {
		var ops []writeset.Op
		switch x := r.Intn(200); {
		case x == 0: // more entries than rowCacheBatchKeys
			for id := int64(0); id < ids; id++ {
				for k := 0; k < 5; k++ {
					ops = append(ops, change(id))
				}
			}
		case x == 1:
			ops = append(ops, schemaOp(&SchemaOp{Kind: OpTruncate, TableID: ti.Def.ID}))
		default:
			for k := r.Intn(5); k >= 0; k-- {
				ops = append(ops, change(r.Int63n(ids)))
			}
		}
		a.apply(ops...)
		b.apply(ops...)
		if r.Intn(3) == 0 {
			views = append(views, pair{a.e.View(), b.e.View()})
		}
		if len(views) > 8 || (len(views) > 0 && r.Intn(4) == 0) {
			i := r.Intn(len(views))
			views[i].a.Close()
			views[i].b.Close()
			views = append(views[:i], views[i+1:]...)
		}
		reads := append([]pair{{a.e.View(), b.e.View()}}, views...)
		for k := 0; k < 20; k++ {
			v := reads[r.Intn(len(reads))]
			if v.a.Seqno != v.b.Seqno {
				t.Fatalf("views at seqnos %d and %d", v.a.Seqno, v.b.Seqno)
			}
			key := keyOf(r.Int63n(ids))
			if _, cached := a.e.rows.get(key, v.a.snap.gen); cached {
				hits++
			}
			got, gotOK, err := v.a.Get(key)
			if err != nil {
				t.Fatal(err)
			}
			want, wantOK, err := v.b.Get(key)
			if err != nil {
				t.Fatal(err)
			}
			if gotOK != wantOK || !bytes.Equal(got, want) {
				t.Fatalf("step %d, view at seqno %d (newest %d), key %x: cached engine reads %x (%v), pebble %x (%v)",
					step, v.a.Seqno, a.seqno, key, got, gotOK, want, wantOK)
			}
		}
		reads[0].a.Close()
		reads[0].b.Close()
	}
	for _, v := range views {
		v.a.Close()
		v.b.Close()
	}
	if hits == 0 {
		t.Fatalf("no read was served by the cache")
	}
	st := a.e.RowCacheStats()
	if st.Hits == 0 || st.Misses == 0 || st.Bytes == 0 {
		t.Fatalf("row cache counters %+v: want hits, misses and filled chunks", st)
	}
	if off := b.e.RowCacheStats(); off != (RowCacheStats{}) {
		t.Fatalf("an engine without the cache counts %+v", off)
	}
	t.Logf("%d reads served by the cache; counters %+v", hits, st)
}

// TestRowCacheRacingCommits reads many rows through views taken while
// commits change them; each read must give the value of its view's seqno.
// Run it with -race too.
func TestRowCacheRacingCommits(t *testing.T) {
	a, _, ti := pairWithTable(t, vfs.NewMem(), vfs.NewMem())
	e := a.e
	ctx := context.Background()
	const ids = 16
	keys := make([][]byte, ids)
	for id := range keys {
		pk, _ := ti.EncodePK(ctx, sql.Row{int64(id), nil, nil})
		keys[id] = RowKey(ti.Def.ID, pk)
	}
	var mu sync.Mutex
	valueAt := map[uint64][ids]int32{} // seqno -> every row's value
	var cur [ids]int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(g)))
			var old *ReadView
			for {
				select {
				case <-stop:
					if old != nil {
						old.Close()
					}
					return
				default:
				}
				v := e.View()
				for _, rv := range []*ReadView{v, old} {
					if rv == nil {
						continue
					}
					mu.Lock()
					want, ok := valueAt[rv.Seqno]
					mu.Unlock()
					if !ok {
						continue
					}
					id := r.Intn(ids)
					b, found, err := rv.Get(keys[id])
					if err != nil || !found {
						t.Errorf("seqno %d: row %d missing (%v)", rv.Seqno, id, err)
						return
					}
					row, err := ti.DecodeRow(b)
					if err != nil || row[2].(int32) != want[id] {
						t.Errorf("view at seqno %d reads row %d = %v, want %d", rv.Seqno, id, row, want[id])
						return
					}
				}
				v.Close()
				if old == nil || r.Intn(8) == 0 { // keep a view a while: it falls behind
					if old != nil {
						old.Close()
					}
					old = e.View()
				}
			}
		}(g)
	}
	r := rand.New(rand.NewSource(1))
	for i := int32(0); i < 2000; i++ {
		var ops []writeset.Op
		if i == 0 {
			for id := range keys {
				ops = append(ops, rowPut(t, ti, sql.Row{int64(id), nil, int32(0)}))
			}
		} else {
			id := r.Intn(ids)
			cur[id] = i
			ops = append(ops, rowPut(t, ti, sql.Row{int64(id), nil, i}))
		}
		// the values are known before the commit publishes its seqno
		mu.Lock()
		valueAt[a.seqno+1] = cur
		mu.Unlock()
		a.apply(ops...)
	}
	close(stop)
	wg.Wait()
}
