package storage

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/writeset"
)

func openMem(t *testing.T, fs vfs.FS) *Engine {
	t.Helper()
	return openMemIngesting(t, fs, 0)
}

// openMemIngesting opens an engine on fs that commits batches of at least
// ingestBytes by ingestion (0: the default).
func openMemIngesting(t *testing.T, fs vfs.FS, ingestBytes int) *Engine {
	t.Helper()
	e, err := Open(Config{Dir: "db", FS: fs, CacheBytes: 8 << 20, IngestBytes: ingestBytes})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// testTable is `CREATE TABLE d.t (id BIGINT PRIMARY KEY, u VARCHAR(20) UNIQUE, v INT)`.
func testTable() *TableDef {
	return &TableDef{
		ID: 7, DB: "d", Name: "t", NextColumnID: 4, NextIndexID: 2,
		Columns: []ColumnDef{
			{ID: 1, Name: "id", Type: "bigint"},
			{ID: 2, Name: "u", Type: "varchar(20)", Nullable: true},
			{ID: 3, Name: "v", Type: "int", Nullable: true},
		},
		PK:      []uint32{1},
		Indexes: []IndexDef{{ID: 1, Name: "u", Columns: []uint32{2}, Unique: true}},
	}
}

type applyHarness struct {
	t     *testing.T
	e     *Engine
	seqno uint64
}

func (h *applyHarness) apply(ops ...writeset.Op) ApplyResult {
	h.t.Helper()
	h.seqno++
	res, err := h.e.Apply(h.seqno, &writeset.WriteSet{ID: writeset.ID{Origin: 1, Seq: h.seqno}, Ops: ops}, nil, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func (h *applyHarness) checkDigest() {
	h.t.Helper()
	v := h.e.View()
	defer v.Close()
	got, err := h.e.RecomputeDigest(v)
	if err != nil {
		h.t.Fatal(err)
	}
	if got != v.Digest {
		h.t.Fatalf("seqno %d: incremental digest %s, recomputed %s", v.Seqno, v.Digest, got)
	}
}

func schemaOp(op *SchemaOp) writeset.Op { return op.WriteSetOp() }

// pairWithTable opens two engines, on fsA and fsB, that both hold testTable.
func pairWithTable(t *testing.T, fsA, fsB vfs.FS) (a, b *applyHarness, ti *TableInfo) {
	t.Helper()
	a, b = &applyHarness{t: t, e: openMem(t, fsA)}, &applyHarness{t: t, e: openMem(t, fsB)}
	for _, op := range []writeset.Op{
		schemaOp(&SchemaOp{Kind: OpPutDatabase, Database: &DatabaseDef{Name: "d"}}),
		schemaOp(&SchemaOp{Kind: OpPutTable, Table: testTable(), TableID: 7}),
	} {
		a.apply(op)
		b.apply(op)
	}
	def, _ := a.e.Catalog().TableByName("d", "t")
	ti, err := def.Info()
	if err != nil {
		t.Fatal(err)
	}
	return a, b, ti
}

// randomRow returns a random change of row id of testTable: a delete one
// time in five, else a put whose unique value only that row can take.
func randomRow(t *testing.T, r *rand.Rand, ti *TableInfo) func(id int64) writeset.Op {
	return func(id int64) writeset.Op {
		if r.Intn(5) == 0 {
			pk, _ := ti.EncodePK(context.Background(), sql.Row{id, nil, nil})
			return writeset.Op{Kind: writeset.OpDelete, TableID: 7, Key: pk}
		}
		return rowPut(t, ti, sql.Row{id, fmt.Sprintf("u%d-%d", id, r.Intn(3)), int32(r.Intn(100))})
	}
}

func rowPut(t *testing.T, ti *TableInfo, row sql.Row) writeset.Op {
	pk, err := ti.EncodePK(context.Background(), row)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ti.EncodeRow(context.Background(), row)
	if err != nil {
		t.Fatal(err)
	}
	return writeset.Op{Kind: writeset.OpPut, TableID: ti.Def.ID, Key: pk, Value: v}
}

func TestApplyKeepsDigestAndIndexes(t *testing.T) {
	e := openMem(t, vfs.NewMem())
	defer e.Close()
	h := &applyHarness{t: t, e: e}
	h.apply(schemaOp(&SchemaOp{Kind: OpPutDatabase, Database: &DatabaseDef{Name: "d"}}))
	h.apply(schemaOp(&SchemaOp{Kind: OpPutTable, Table: testTable(), TableID: 7}))
	def, ok := e.Catalog().TableByName("d", "T")
	if !ok {
		t.Fatal("table not in catalog")
	}
	ti, err := def.Info()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		id := int64(r.Intn(50))
		switch r.Intn(3) {
		case 0, 1:
			h.apply(rowPut(t, ti, sql.Row{id, fmt.Sprintf("u%d", id), int32(r.Intn(100))}))
		case 2:
			pk, _ := ti.EncodePK(context.Background(), sql.Row{id, nil, nil})
			h.apply(writeset.Op{Kind: writeset.OpDelete, TableID: 7, Key: pk})
		}
		if i%50 == 0 {
			h.checkDigest()
		}
	}
	h.checkDigest()
	// every row is reachable through the unique index and vice versa
	v := e.View()
	defer v.Close()
	lo, hi := ti.RowBounds()
	it, _ := v.NewIter(lo, hi)
	rows := 0
	for it.First(); it.Valid(); it.Next() {
		row, err := ti.DecodeRow(it.Value())
		if err != nil {
			t.Fatal(err)
		}
		vals, _, _ := ti.Indexes[0].IndexValues(row)
		if _, ok, _ := v.Get(ti.Indexes[0].EntryKey(vals, it.Key()[len(lo):])); !ok {
			t.Fatalf("row %v has no index entry", row)
		}
		rows++
	}
	it.Close()
	ix := ti.Indexes[0].Prefix()
	it, _ = v.NewIter(ix, append(append([]byte{}, ix...), 0xff))
	entries := 0
	for it.First(); it.Valid(); it.Next() {
		entries++
	}
	it.Close()
	if rows != entries {
		t.Fatalf("%d rows, %d index entries", rows, entries)
	}
}

func TestBuildUniqueIndexOverDuplicatesIsRejected(t *testing.T) {
	e := openMem(t, vfs.NewMem())
	defer e.Close()
	h := &applyHarness{t: t, e: e}
	def := testTable()
	def.Indexes = nil
	h.apply(schemaOp(&SchemaOp{Kind: OpPutDatabase, Database: &DatabaseDef{Name: "d"}}))
	h.apply(schemaOp(&SchemaOp{Kind: OpPutTable, Table: def, TableID: 7}))
	cur, _ := e.Catalog().Table(7)
	ti, _ := cur.Info()
	h.apply(rowPut(t, ti, sql.Row{int64(1), "same", int32(1)}), rowPut(t, ti, sql.Row{int64(2), "same", int32(2)}))
	before := e.Catalog()
	withIdx := cur.Clone()
	withIdx.Indexes = []IndexDef{{ID: 1, Name: "u", Columns: []uint32{2}, Unique: true}}
	res := h.apply(
		schemaOp(&SchemaOp{Kind: OpPutTable, Table: withIdx, TableID: 7}),
		schemaOp(&SchemaOp{Kind: OpBuildIndex, TableID: 7, IndexID: 1}),
	)
	if res.Rejected == nil {
		t.Fatal("unique index over duplicates was built")
	}
	if e.Catalog() != before {
		t.Fatal("a rejected write-set changed the catalog")
	}
	if e.Applied() != h.seqno {
		t.Fatalf("applied %d, want %d", e.Applied(), h.seqno)
	}
	h.checkDigest()
}

// A keyless table keeps equal rows as one row with a count: a unique index
// over them is a unique index over duplicates, and is refused as one.
func TestBuildUniqueIndexOverRepeatedKeylessRows(t *testing.T) {
	e := openMem(t, vfs.NewMem())
	defer e.Close()
	h := &applyHarness{t: t, e: e}
	def := testTable()
	def.PK, def.Indexes = nil, nil
	h.apply(schemaOp(&SchemaOp{Kind: OpPutDatabase, Database: &DatabaseDef{Name: "d"}}))
	h.apply(schemaOp(&SchemaOp{Kind: OpPutTable, Table: def, TableID: 7}))
	cur, _ := e.Catalog().Table(7)
	ti, _ := cur.Info()
	row := sql.Row{int64(1), "same", int32(1)}
	pk, err := ti.EncodePK(context.Background(), row)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ti.EncodeRow(context.Background(), row)
	if err != nil {
		t.Fatal(err)
	}
	h.apply(writeset.Op{Kind: writeset.OpDelta, TableID: 7, Key: pk, Value: v, Delta: 2})
	for _, unique := range []bool{true, false} {
		withIdx := cur.Clone()
		withIdx.Indexes = []IndexDef{{ID: 1, Name: "u", Columns: []uint32{2}, Unique: unique}}
		res := h.apply(
			schemaOp(&SchemaOp{Kind: OpPutTable, Table: withIdx, TableID: 7}),
			schemaOp(&SchemaOp{Kind: OpBuildIndex, TableID: 7, IndexID: 1}),
		)
		if (res.Rejected != nil) != unique {
			t.Fatalf("unique %v: rejected %v", unique, res.Rejected)
		}
	}
	h.checkDigest()
}

func TestRestartKeepsStateAndDigest(t *testing.T) {
	fs := vfs.NewMem()
	e := openMem(t, fs)
	h := &applyHarness{t: t, e: e}
	h.apply(schemaOp(&SchemaOp{Kind: OpPutDatabase, Database: &DatabaseDef{Name: "d"}}))
	h.apply(schemaOp(&SchemaOp{Kind: OpPutTable, Table: testTable(), TableID: 7}))
	def, _ := e.Catalog().Table(7)
	ti, _ := def.Info()
	h.apply(rowPut(t, ti, sql.Row{int64(5), "x", int32(9)}))
	seq, d := e.StateDigest()
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := openMem(t, fs)
	defer e2.Close()
	seq2, d2 := e2.StateDigest()
	if seq != seq2 || d != d2 {
		t.Fatalf("after restart seqno/digest %d/%s, want %d/%s", seq2, d2, seq, d)
	}
	if got := e2.AutoIncrement(7); got != 1 {
		t.Fatalf("auto increment %d for a table without one", got)
	}
	if _, ok := e2.Catalog().TableByName("d", "t"); !ok {
		t.Fatal("catalog lost")
	}
}

// TestPreparedAheadEqualsApplied applies the same random log to two
// engines: one applies every write-set in its turn, the other prepares
// each big write-set as soon as its read position is applied, applies the
// write-sets in between (which touch other rows, as certification
// guarantees), then commits the prepared batch. Both must end with the
// same digest, which must match their data.
func TestPreparedAheadEqualsApplied(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		hs, ha, ti := pairWithTable(t, vfs.NewMem(), vfs.NewMem())
		serial, ahead := hs.e, ha.e
		r := rand.New(rand.NewSource(seed))
		row := randomRow(t, r, ti)
		for round := 0; round < 10; round++ {
			// a big write-set over ids [0, 200) and a few small ones over
			// ids [200, 300) ordered before it is applied
			big := &writeset.WriteSet{ID: writeset.ID{Origin: 2, Seq: uint64(round)}}
			for id := int64(0); id < 200; id++ {
				if r.Intn(2) == 0 {
					big.Ops = append(big.Ops, row(id))
				}
			}
			big.Ops = append(big.Ops, writeset.Op{Kind: writeset.OpAutoIncrement, TableID: 7, Delta: int64(r.Intn(1000))})
			p, err := ahead.Prepare(big)
			if err != nil {
				t.Fatal(err)
			}
			for i := r.Intn(5); i > 0; i-- {
				op := row(200 + int64(r.Intn(100)))
				auto := writeset.Op{Kind: writeset.OpAutoIncrement, TableID: 7, Delta: int64(r.Intn(1000))}
				hs.apply(op, auto)
				ha.apply(op, auto)
			}
			hs.seqno++
			if _, err := serial.Apply(hs.seqno, big, nil, nil); err != nil {
				t.Fatal(err)
			}
			ha.seqno++
			if _, err := ahead.ApplyPrepared(ha.seqno, p, nil, nil); err != nil {
				t.Fatal(err)
			}
			hs.checkDigest()
			ha.checkDigest()
			_, ds := serial.StateDigest()
			_, da := ahead.StateDigest()
			if ds != da || serial.AutoIncrement(7) != ahead.AutoIncrement(7) {
				t.Fatalf("seed %d round %d: serial digest %s auto %d, prepared ahead %s auto %d",
					seed, round, ds, serial.AutoIncrement(7), da, ahead.AutoIncrement(7))
			}
		}
		serial.Close()
		ahead.Close()
	}
}
