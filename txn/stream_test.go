package txn

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/storage"
)

// keylessTable adds d.k (v INT, no primary key) and returns it.
func keylessTable(t *testing.T, m *Manager) *storage.TableInfo {
	t.Helper()
	def := &storage.TableDef{ID: 8, DB: "d", Name: "k", NextColumnID: 2, NextIndexID: 1,
		Columns: []storage.ColumnDef{{ID: 1, Name: "v", Type: "int", Nullable: true}}}
	tx := m.Begin(Options{})
	if err := tx.SchemaChange(&storage.SchemaOp{Kind: storage.OpPutTable, Table: def, TableID: def.ID}); err != nil {
		t.Fatal(err)
	}
	commit(t, tx)
	d, _ := m.Engine().Catalog().Table(def.ID)
	ti, err := d.Info()
	if err != nil {
		t.Fatal(err)
	}
	return ti
}

// TestStreamingEqualsOneWriteSet runs one transaction twice: streamed in
// fragments of two rows, and as one write-set. Rows change again after a
// fragment carried them, keyless rows' counts move across fragments; the
// committed states must be the same.
func TestStreamingEqualsOneWriteSet(t *testing.T) {
	ctx := context.Background()
	var digests []string
	for _, opts := range []Options{{FragmentUnit: FragmentRows, FragmentSize: 2}, {}} {
		m, r, ti := newTestManager(t)
		kl := keylessTable(t, m)
		tx := m.Begin(opts)
		steps := []func() error{
			func() error { return tx.Insert(ctx, ti, sql.Row{int64(10), int32(1)}) },
			func() error { return tx.Insert(ctx, kl, sql.Row{int32(7)}) },
			func() error { return tx.Update(ctx, ti, sql.Row{int64(1), int32(10)}, sql.Row{int64(1), int32(11)}) },
			func() error { return tx.Insert(ctx, kl, sql.Row{int32(7)}) },
			func() error { return tx.Insert(ctx, ti, sql.Row{int64(11), int32(1)}) },
			func() error { return tx.Update(ctx, ti, sql.Row{int64(10), int32(1)}, sql.Row{int64(10), int32(2)}) },
			func() error { return tx.Insert(ctx, kl, sql.Row{int32(7)}) },
			func() error { return tx.Delete(ctx, ti, sql.Row{int64(2), int32(20)}) },
			func() error { return tx.Delete(ctx, kl, sql.Row{int32(7)}) },
			func() error { return tx.Update(ctx, ti, sql.Row{int64(1), int32(11)}, sql.Row{int64(1), int32(12)}) },
			func() error { return tx.Insert(ctx, kl, sql.Row{int32(8)}) },
		}
		for i, step := range steps {
			tx.StatementBegin()
			if err := step(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			tx.StatementComplete()
		}
		commit(t, tx)
		if frags, _ := r.counts(); opts.FragmentSize > 0 && frags < 4 {
			t.Fatalf("%d fragments replicated, want one per two rows", frags)
		}
		if n := m.Engine().OpenStreams(); n != 0 {
			t.Fatalf("%d streams open after the commit", n)
		}
		_, d := m.Engine().StateDigest()
		digests = append(digests, d.String())
	}
	if digests[0] != digests[1] {
		t.Fatalf("streamed state %s, one write-set %s", digests[0], digests[1])
	}
}

// A statement or savepoint rollback that would undo rows a fragment
// carried rolls the whole streaming transaction back, on every node.
func TestStreamRollsBackWhole(t *testing.T) {
	ctx := context.Background()
	for _, viaSavepoint := range []bool{false, true} {
		m, r, ti := newTestManager(t)
		tx := m.Begin(Options{FragmentUnit: FragmentRows, FragmentSize: 1})
		tx.Savepoint("sp")
		tx.StatementBegin()
		for id := int64(10); id < 14; id++ {
			if err := tx.Insert(ctx, ti, sql.Row{id, int32(0)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.awaitFragment(); err != nil {
			t.Fatal(err)
		}
		if frags, _ := r.counts(); frags == 0 || m.Engine().OpenStreams() != 1 {
			t.Fatalf("no fragment replicated (%d) or no stream open (%d)", frags, m.Engine().OpenStreams())
		}
		if viaSavepoint {
			tx.StatementComplete()
			if err := tx.RollbackToSavepoint("sp"); !errors.Is(err, ErrDeadlock) {
				t.Fatalf("ROLLBACK TO SAVEPOINT below a fragment: %v, want a deadlock error", err)
			}
		} else {
			tx.StatementDiscard()
		}
		if _, rb := r.counts(); !tx.Aborted() || rb != 1 || m.Engine().OpenStreams() != 0 {
			t.Fatalf("aborted %v, rollback fragments %d, open streams %d: want the whole transaction rolled back",
				tx.Aborted(), rb, m.Engine().OpenStreams())
		}
		if err := tx.Insert(ctx, ti, sql.Row{int64(20), int32(0)}); !errors.Is(err, ErrDeadlock) {
			t.Fatalf("write after the rollback: %v", err)
		}
		tx.Rollback()
		if _, rb := r.counts(); rb != 1 {
			t.Fatalf("%d rollback fragments, want one", rb)
		}
	}
}

// A shipped fragment drops the undo records of what it carried; rolling a
// statement or a savepoint back above it still restores exactly the state
// at its mark, and the commit keeps the fragment's rows.
func TestRollbackAboveAFragment(t *testing.T) {
	ctx := context.Background()
	m, r, ti := newTestManager(t)
	tx := m.Begin(Options{FragmentUnit: FragmentRows, FragmentSize: 2})
	stmt := func(steps ...func() error) {
		t.Helper()
		tx.StatementBegin()
		for i, step := range steps {
			if err := step(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		tx.StatementComplete()
	}
	insert := func(id int64, v int32) func() error {
		return func() error { return tx.Insert(ctx, ti, sql.Row{id, v}) }
	}
	stmt(insert(10, 0), insert(11, 0))
	stmt(insert(12, 0)) // ships 10 and 11 before buffering 12
	if err := tx.awaitFragment(); err != nil {
		t.Fatal(err)
	}
	if frags, _ := r.counts(); frags != 1 || tx.undoBase != 2 || len(tx.undo) != 1 {
		t.Fatalf("fragments %d, undo base %d, undo records %d: want 1, 2, 1", frags, tx.undoBase, len(tx.undo))
	}
	tx.Savepoint("sp")
	stmt(func() error { return tx.Update(ctx, ti, sql.Row{int64(12), int32(0)}, sql.Row{int64(12), int32(5)}) })
	if err := tx.RollbackToSavepoint("sp"); err != nil {
		t.Fatalf("ROLLBACK TO SAVEPOINT above the fragment: %v", err)
	}
	tx.StatementBegin()
	if err := tx.Insert(ctx, ti, sql.Row{int64(13), int32(0)}); err != nil {
		t.Fatal(err)
	}
	tx.StatementDiscard()
	if tx.Aborted() {
		t.Fatal("a rollback above the fragment rolled the whole transaction back")
	}
	commit(t, tx)
	check := m.Begin(Options{})
	defer check.Rollback()
	if ids := scanAll(t, check, ti, Snapshot, false); !slices.Equal(ids, []int64{1, 2, 10, 11, 12}) {
		t.Fatalf("committed ids %v, want [1 2 10 11 12]", ids)
	}
	pk, err := ti.EncodePK(ctx, sql.Row{int64(12), int32(0)})
	if err != nil {
		t.Fatal(err)
	}
	if row, ok, err := check.Get(ctx, ti, pk, Snapshot); err != nil || !ok || row[1] != int32(0) {
		t.Fatalf("row 12 = %v (found %v, %v), want its value before the savepoint, 0", row, ok, err)
	}
}
