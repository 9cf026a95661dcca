package txn

import (
	"context"
	"errors"
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
