package txn

import (
	"context"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// localReplicator applies every write-set at once, as a cluster of one
// without certification (streaming transactions' fragments included), and
// keeps the last one.
type localReplicator struct {
	mu                   sync.Mutex // a fragment is replicated concurrently with its transaction
	eng                  *storage.Engine
	seqno                uint64
	last                 *writeset.WriteSet
	fragments, rollbacks int
}

// counts returns the fragments and rollbacks replicated so far.
func (r *localReplicator) counts() (fragments, rollbacks int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fragments, r.rollbacks
}

func (r *localReplicator) Origin() uint64 { return 1 }

func (r *localReplicator) Replicate(_ context.Context, ws *writeset.WriteSet) (writeset.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seqno++
	r.last = ws
	var res storage.ApplyResult
	var err error
	switch {
	case ws.Flags&writeset.FlagFragment != 0:
		if ws.Stream.Frag == 0 {
			ws.Stream.ID = ws.ID
		}
		r.fragments++
		err = r.eng.ApplyFragment(r.seqno, ws, ws.Encode(nil), nil)
	case ws.Flags&writeset.FlagStreamCommit != 0:
		res, err = r.eng.CommitStream(r.seqno, ws, nil, nil)
	case ws.Flags&writeset.FlagStreamRollback != 0:
		r.rollbacks++
		err = r.eng.MarkApplied(r.seqno, r.eng.EndStreams([]writeset.ID{ws.Stream.ID}))
	default:
		res, err = r.eng.Apply(r.seqno, ws, nil, nil)
	}
	return writeset.Outcome{Seqno: r.seqno, Committed: res.Rejected == nil, Rejected: res.Rejected}, err
}

// newTestManager returns a manager over an in-memory engine with table
// d.t (id BIGINT PRIMARY KEY, v INT) holding rows 1 and 2.
func newTestManager(t *testing.T) (*Manager, *localReplicator, *storage.TableInfo) {
	t.Helper()
	eng, err := storage.Open(storage.Config{Dir: "db", FS: vfs.NewMem(), CacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	r := &localReplicator{eng: eng}
	m := NewManager(Config{Engine: eng, Replicator: r})
	def := &storage.TableDef{ID: 7, DB: "d", Name: "t", NextColumnID: 3, NextIndexID: 1,
		Columns: []storage.ColumnDef{{ID: 1, Name: "id", Type: "bigint"}, {ID: 2, Name: "v", Type: "int", Nullable: true}},
		PK:      []uint32{1}}
	tx := m.Begin(Options{})
	for _, op := range []*storage.SchemaOp{
		{Kind: storage.OpPutDatabase, Database: &storage.DatabaseDef{Name: "d", Tables: map[string]uint64{}}},
		{Kind: storage.OpPutTable, Table: def, TableID: def.ID},
	} {
		if err := tx.SchemaChange(op); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, tx)
	d, _ := eng.Catalog().Table(def.ID)
	ti, err := d.Info()
	if err != nil {
		t.Fatal(err)
	}
	tx = m.Begin(Options{})
	for _, row := range []sql.Row{{int64(1), int32(10)}, {int64(2), int32(20)}} {
		if err := tx.Insert(context.Background(), ti, row); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, tx)
	return m, r, ti
}

func commit(t *testing.T, tx *Txn) {
	t.Helper()
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// scanAll returns the ids a scan in mode reads.
func scanAll(t *testing.T, tx *Txn, ti *storage.TableInfo, mode ReadMode, live bool) []int64 {
	t.Helper()
	scan := tx.Scan
	if live {
		scan = func(ctx context.Context, ti *storage.TableInfo, lo, hi []byte, rev bool, mode ReadMode) (*RowIter, error) {
			return tx.LiveScan(ctx, ti, nil, lo, hi, rev, mode)
		}
	}
	it, err := scan(context.Background(), ti, nil, nil, false, mode)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var ids []int64
	for {
		_, row, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ids
		}
		ids = append(ids, row[0].(int64))
	}
}

// A row read in Reference mode (a foreign key's parent) is certified with
// the write-set, so a concurrent change of it on another node conflicts.
func TestReferenceReadIsCertified(t *testing.T) {
	m, r, ti := newTestManager(t)
	tx := m.Begin(Options{})
	if got := scanAll(t, tx, ti, Reference, false); len(got) != 2 {
		t.Fatalf("reference scan read %v", got)
	}
	if err := tx.Insert(context.Background(), ti, sql.Row{int64(3), int32(30)}); err != nil {
		t.Fatal(err)
	}
	commit(t, tx)
	keys := map[string]bool{}
	for _, k := range r.last.Keys {
		keys[string(k.Key)] = true
	}
	for _, id := range []int64{1, 2, 3} {
		pk, err := ti.EncodePK(context.Background(), sql.Row{id, nil})
		if err != nil {
			t.Fatal(err)
		}
		if !keys[string(storage.CertKey(ti.Def.ID, pk))] {
			t.Errorf("row %d is not certified with the write-set", id)
		}
	}
	if len(r.last.Keys) != 3 {
		t.Errorf("write-set keys %d, want 3 (no duplicate of the written row)", len(r.last.Keys))
	}
}

// A statement's scans do not see the rows it changed; LiveScan does.
func TestStatementDoesNotReadItsOwnChanges(t *testing.T) {
	m, _, ti := newTestManager(t)
	tx := m.Begin(Options{})
	defer tx.Rollback()
	ctx := context.Background()
	if err := tx.Insert(ctx, ti, sql.Row{int64(5), int32(50)}); err != nil {
		t.Fatal(err)
	}
	tx.StatementBegin()
	if err := tx.Delete(ctx, ti, sql.Row{int64(1), int32(10)}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Insert(ctx, ti, sql.Row{int64(11), int32(10)}); err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, tx, ti, CurrentExclusive, false); !equalIDs(got, 1, 2, 5) {
		t.Errorf("statement scan read %v, want the rows as the statement began", got)
	}
	if got := scanAll(t, tx, ti, CurrentExclusive, true); !equalIDs(got, 2, 5, 11) {
		t.Errorf("live scan read %v, want the statement's changes too", got)
	}
	tx.StatementComplete()
	if got := scanAll(t, tx, ti, Snapshot, false); !equalIDs(got, 2, 5, 11) {
		t.Errorf("next statement read %v, want the changes", got)
	}
}

func equalIDs(got []int64, want ...int64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// Row locks are this node's own: another node's write-set applies without
// them. A transaction that read a row under its lock before such a write
// must not go on reading the new row as if its lock still covered it (a
// DELETE that found no row, then an INSERT of it failing with a duplicate
// key); it is aborted with ErrDeadlock at its next access of the row, as
// certification would abort it at commit. A lock taken after the write
// is not affected, even when the node reports the write late.
func TestRemoteWriteAbortsLockHolder(t *testing.T) {
	m, r, ti := newTestManager(t)
	other := NewManager(Config{Engine: m.Engine(), Replicator: r}) // another node's lock table
	ctx := context.Background()
	pk3, err := ti.EncodePK(ctx, sql.Row{int64(3), nil})
	if err != nil {
		t.Fatal(err)
	}
	remoteInsert := func(id int64) uint64 {
		t.Helper()
		tx := other.Begin(Options{})
		if err := tx.Insert(ctx, ti, sql.Row{id, int32(0)}); err != nil {
			t.Fatal(err)
		}
		out, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m.RemoteWrite(r.last, out.Seqno)
		return out.Seqno
	}

	victim := m.Begin(Options{})
	if _, found, err := victim.Get(ctx, ti, pk3, CurrentExclusive); err != nil || found {
		t.Fatalf("DELETE's current read of row 3: found %v, err %v", found, err)
	}
	seqno := remoteInsert(3)
	err = victim.Insert(ctx, ti, sql.Row{int64(3), int32(30)})
	if err != ErrDeadlock {
		t.Fatalf("INSERT after another node inserted the locked row: %v, want ErrDeadlock", err)
	}
	if _, err := victim.Commit(ctx); err != ErrDeadlock {
		t.Fatalf("commit of the aborted transaction: %v, want ErrDeadlock", err)
	}
	if n := m.BFAborts.Load(); n != 1 {
		t.Fatalf("BFAborts = %d, want 1", n)
	}

	// a lock taken after the write (its observer runs late) reads the
	// new row and keeps going
	later := m.Begin(Options{})
	if _, found, err := later.Get(ctx, ti, pk3, CurrentExclusive); err != nil || !found {
		t.Fatalf("current read of row 3 after the write: found %v, err %v", found, err)
	}
	m.RemoteWrite(r.last, seqno)
	if err := later.Delete(ctx, ti, sql.Row{int64(3), int32(0)}); err != nil {
		t.Fatalf("DELETE under a lock taken after the write: %v", err)
	}
	// nor does a remote write of a row it does not hold
	remoteInsert(4)
	if err := later.Insert(ctx, ti, sql.Row{int64(3), int32(31)}); err != nil {
		t.Fatalf("INSERT after a remote write of another row: %v", err)
	}
	commit(t, later)
	if n := m.BFAborts.Load(); n != 1 {
		t.Fatalf("BFAborts = %d after an unaffected transaction, want 1", n)
	}
}

// A written key counts as read at the snapshot only when the transaction
// read it there first: by a point read, a primary-key range that holds
// it, or a scan of the whole table. Other keys are certified from the
// moment the transaction locked them, so a remote write between its first
// read and that lock does not fail it.
func TestSnapshotReadPositions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		read func(tx *Txn, ti *storage.TableInfo, pk func(int64) []byte) error
		// atSnapshot[i]: row i+1's key is certified at the snapshot
		atSnapshot [2]bool
	}{
		{"point read of row 1", func(tx *Txn, ti *storage.TableInfo, pk func(int64) []byte) error {
			_, _, err := tx.Get(ctx, ti, pk(1), Snapshot)
			return err
		}, [2]bool{true, false}},
		{"range [1, 2)", func(tx *Txn, ti *storage.TableInfo, pk func(int64) []byte) error {
			return drain(tx.Scan(ctx, ti, pk(1), pk(2), false, Snapshot))
		}, [2]bool{true, false}},
		{"range [2, ∞) in reverse", func(tx *Txn, ti *storage.TableInfo, pk func(int64) []byte) error {
			return drain(tx.Scan(ctx, ti, pk(2), nil, true, Snapshot))
		}, [2]bool{false, true}},
		{"range (-∞, 1)", func(tx *Txn, ti *storage.TableInfo, pk func(int64) []byte) error {
			return drain(tx.Scan(ctx, ti, nil, pk(1), false, Snapshot))
		}, [2]bool{false, false}},
		{"whole table", func(tx *Txn, ti *storage.TableInfo, pk func(int64) []byte) error {
			return drain(tx.Scan(ctx, ti, nil, nil, false, Snapshot))
		}, [2]bool{true, true}},
		{"range, then whole table", func(tx *Txn, ti *storage.TableInfo, pk func(int64) []byte) error {
			if err := drain(tx.Scan(ctx, ti, pk(1), pk(2), false, Snapshot)); err != nil {
				return err
			}
			return drain(tx.Scan(ctx, ti, nil, nil, false, Snapshot))
		}, [2]bool{true, true}},
		{"more ranges than recorded", func(tx *Txn, ti *storage.TableInfo, pk func(int64) []byte) error {
			for i := 0; i <= maxSnapSpans; i++ {
				if err := drain(tx.Scan(ctx, ti, pk(100+int64(i)), pk(101+int64(i)), false, Snapshot)); err != nil {
					return err
				}
			}
			return nil
		}, [2]bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, r, ti := newTestManager(t)
			pk := func(id int64) []byte {
				k, err := ti.EncodePK(ctx, sql.Row{id, nil})
				if err != nil {
					t.Fatal(err)
				}
				return k
			}
			tx := m.Begin(Options{})
			snap := tx.snapshot().Seqno
			if err := tc.read(tx, ti, pk); err != nil {
				t.Fatal(err)
			}
			other := m.Begin(Options{}) // a later commit of another row
			if err := other.Insert(ctx, ti, sql.Row{int64(50), int32(0)}); err != nil {
				t.Fatal(err)
			}
			commit(t, other)
			for _, id := range []int64{1, 2} {
				if err := tx.Update(ctx, ti, sql.Row{id, int32(0)}, sql.Row{id, int32(1)}); err != nil {
					t.Fatal(err)
				}
			}
			commit(t, tx)
			for i, id := range []int64{1, 2} {
				var pos uint64
				for _, k := range r.last.Keys {
					if string(k.Key) == string(storage.CertKey(ti.Def.ID, pk(id))) {
						pos = k.Pos
					}
				}
				if got := pos == snap; got != tc.atSnapshot[i] || pos == 0 || pos > snap+1 {
					t.Errorf("row %d certified at %d (snapshot %d): at the snapshot %v, want %v", id, pos, snap, got, tc.atSnapshot[i])
				}
			}
		})
	}
}

// drain reads a scan to its end and closes it.
func drain(it *RowIter, err error) error {
	if err != nil {
		return err
	}
	defer it.Close()
	for {
		_, _, ok, err := it.Next()
		if err != nil || !ok {
			return err
		}
	}
}
