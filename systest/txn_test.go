package systest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTxn checks single-node transaction semantics against what InnoDB
// does: snapshots, current reads, row locks, lock waits, deadlocks,
// savepoints, statement-level rollback and AUTO_INCREMENT. All subtests
// share one node; each uses its own table.
func TestTxn(t *testing.T) {
	n, db := startNode(t, "txn1", "txn")

	// kv creates table name (id INT PRIMARY KEY, v INT) with rows
	// id=1 v=10, id=2 v=20, ... (count rows).
	kv := func(t *testing.T, name string, count int) {
		t.Helper()
		xexec(t, db, "CREATE TABLE "+name+" (id INT PRIMARY KEY, v INT NOT NULL)")
		for i := 1; i <= count; i++ {
			xexec(t, db, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", name, i, i*10))
		}
	}

	t.Run("RepeatableReadSnapshot", func(t *testing.T) {
		kv(t, "rr", 2)
		a, b := conn(t, db), conn(t, db)
		if iso := qStr(t, a, "SELECT @@transaction_isolation"); iso != "REPEATABLE-READ" {
			t.Fatalf("default @@transaction_isolation = %q, want REPEATABLE-READ", iso)
		}
		xexec(t, a, "BEGIN")
		if v := qInt(t, a, "SELECT v FROM rr WHERE id = 1"); v != 10 {
			t.Fatalf("A first read v = %d, want 10", v)
		}
		xexec(t, b, "UPDATE rr SET v = 11 WHERE id = 1")
		xexec(t, b, "INSERT INTO rr VALUES (3, 30)")
		if v := qInt(t, b, "SELECT v FROM rr WHERE id = 1"); v != 11 {
			t.Fatalf("B after its commit reads v = %d, want 11", v)
		}
		if v := qInt(t, a, "SELECT v FROM rr WHERE id = 1"); v != 10 {
			t.Fatalf("A inside its transaction reads v = %d after B's commit, want the snapshot value 10", v)
		}
		if c := qInt(t, a, "SELECT COUNT(*) FROM rr"); c != 2 {
			t.Fatalf("A inside its transaction counts %d rows, want 2 (B's insert is after the snapshot)", c)
		}
		xexec(t, a, "COMMIT")
		if v := qInt(t, a, "SELECT v FROM rr WHERE id = 1"); v != 11 {
			t.Fatalf("A after COMMIT reads v = %d, want 11", v)
		}
		if c := qInt(t, a, "SELECT COUNT(*) FROM rr"); c != 3 {
			t.Fatalf("A after COMMIT counts %d rows, want 3", c)
		}
	})

	t.Run("ReadCommitted", func(t *testing.T) {
		kv(t, "rc", 2)
		a, b := conn(t, db), conn(t, db)
		xexec(t, a, "SET SESSION transaction_isolation = 'READ-COMMITTED'")
		if iso := qStr(t, a, "SELECT @@transaction_isolation"); iso != "READ-COMMITTED" {
			t.Fatalf("@@transaction_isolation = %q after SET, want READ-COMMITTED", iso)
		}
		xexec(t, a, "BEGIN")
		if v := qInt(t, a, "SELECT v FROM rc WHERE id = 1"); v != 10 {
			t.Fatalf("A first read v = %d, want 10", v)
		}
		xexec(t, b, "UPDATE rc SET v = 11 WHERE id = 1")
		if v := qInt(t, a, "SELECT v FROM rc WHERE id = 1"); v != 11 {
			t.Fatalf("READ COMMITTED: A reads v = %d after B's commit, want 11", v)
		}
		xexec(t, b, "INSERT INTO rc VALUES (3, 30)")
		if c := qInt(t, a, "SELECT COUNT(*) FROM rc"); c != 3 {
			t.Fatalf("READ COMMITTED: A counts %d rows after B's insert, want 3", c)
		}
		xexec(t, a, "COMMIT")
	})

	t.Run("DMLCurrentReadNoLostUpdate", func(t *testing.T) {
		kv(t, "cur", 1)
		a, b := conn(t, db), conn(t, db)
		xexec(t, a, "BEGIN")
		if v := qInt(t, a, "SELECT v FROM cur WHERE id = 1"); v != 10 {
			t.Fatalf("A snapshot read v = %d, want 10", v)
		}
		xexec(t, b, "UPDATE cur SET v = v + 1 WHERE id = 1")
		if v := qInt(t, a, "SELECT v FROM cur WHERE id = 1"); v != 10 {
			t.Fatalf("A snapshot read v = %d after B's commit, want 10", v)
		}
		r := xexec(t, a, "UPDATE cur SET v = v + 1 WHERE id = 1")
		if n, _ := r.RowsAffected(); n != 1 {
			t.Fatalf("A's UPDATE affected %d rows, want 1", n)
		}
		// InnoDB: the UPDATE read the latest committed row (11) and the
		// transaction sees its own change on top of it.
		if v := qInt(t, a, "SELECT v FROM cur WHERE id = 1"); v != 12 {
			t.Fatalf("A reads its own update as v = %d, want 12 (11 from B + 1)", v)
		}
		xexec(t, a, "COMMIT")
		if v := qInt(t, db, "SELECT v FROM cur WHERE id = 1"); v != 12 {
			t.Fatalf("final v = %d, want 12 (both increments; no lost update)", v)
		}
	})

	t.Run("LockingReadIsCurrentRead", func(t *testing.T) {
		kv(t, "lr", 1)
		a, b := conn(t, db), conn(t, db)
		xexec(t, a, "BEGIN")
		if v := qInt(t, a, "SELECT v FROM lr WHERE id = 1"); v != 10 {
			t.Fatalf("A snapshot read v = %d, want 10", v)
		}
		xexec(t, b, "UPDATE lr SET v = 15 WHERE id = 1")
		if v := qInt(t, a, "SELECT v FROM lr WHERE id = 1 LOCK IN SHARE MODE"); v != 15 {
			t.Fatalf("A LOCK IN SHARE MODE reads v = %d, want latest committed 15", v)
		}
		if v := qInt(t, a, "SELECT v FROM lr WHERE id = 1 FOR UPDATE"); v != 15 {
			t.Fatalf("A FOR UPDATE reads v = %d, want latest committed 15", v)
		}
		if v := qInt(t, a, "SELECT v FROM lr WHERE id = 1"); v != 10 {
			t.Fatalf("A plain read v = %d after locking reads, want snapshot value 10", v)
		}
		xexec(t, a, "COMMIT")
	})

	t.Run("RowLockBlocksUntilCommit", func(t *testing.T) {
		kv(t, "rl", 2)
		a, b, c := conn(t, db), conn(t, db), conn(t, db)
		xexec(t, a, "BEGIN")
		xexec(t, a, "UPDATE rl SET v = v + 1 WHERE id = 1")
		ch := goExec(b, "UPDATE rl SET v = v * 10 WHERE id = 1")
		mustBlock(t, ch, "B's UPDATE of the row A locked")
		// The lock is on the row, not the table: another row is free.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.ExecContext(ctx, "UPDATE rl SET v = v + 1 WHERE id = 2")
		cancel()
		if err != nil {
			t.Fatalf("UPDATE of an unlocked row while row 1 is locked: %v", err)
		}
		select {
		case o := <-ch:
			t.Fatalf("B's UPDATE finished while A still holds the lock (err=%v)", o.err)
		default:
		}
		xexec(t, a, "COMMIT")
		o := await(t, ch, "B's UPDATE")
		if o.err != nil {
			t.Fatalf("B's UPDATE after A's commit: %s", errDesc(o.err))
		}
		if v := qInt(t, db, "SELECT v FROM rl WHERE id = 1"); v != 110 {
			t.Fatalf("v = %d, want 110 ((10+1)*10: B applied on top of A's commit)", v)
		}
		if v := qInt(t, db, "SELECT v FROM rl WHERE id = 2"); v != 21 {
			t.Fatalf("row 2 v = %d, want 21", v)
		}
	})

	t.Run("RangeDMLLocksItsRangeOnly", func(t *testing.T) {
		// UPDATE/DELETE ... WHERE id BETWEEN a AND b reads (and locks)
		// the rows of the range through the primary key, not the table
		kv(t, "rg", 20)
		a, b := conn(t, db), conn(t, db)
		xexec(t, a, "BEGIN")
		if n, _ := xexec(t, a, "UPDATE rg SET v = v + 1 WHERE id BETWEEN 5 AND 10").RowsAffected(); n != 6 {
			t.Fatalf("UPDATE of the range affected %d rows, want 6", n)
		}
		xexec(t, b, "SET innodb_lock_wait_timeout = 2")
		for _, q := range []string{
			"UPDATE rg SET v = v + 1 WHERE id = 15",
			"UPDATE rg SET v = v + 1 WHERE id BETWEEN 12 AND 13",
			"DELETE FROM rg WHERE id BETWEEN 19 AND 20",
			"DELETE FROM rg WHERE id BETWEEN 1 AND 2 AND v > 0",
		} {
			if err := tryExec(b, q); err != nil {
				t.Fatalf("%s while A holds rows 5..10: %s", q, errDesc(err))
			}
		}
		ch := goExec(b, "DELETE FROM rg WHERE id BETWEEN 10 AND 11")
		mustBlock(t, ch, "B's DELETE of a range overlapping A's")
		xexec(t, a, "COMMIT")
		if o := await(t, ch, "B's DELETE"); o.err != nil {
			t.Fatalf("B's DELETE after A's commit: %s", errDesc(o.err))
		}
		want := []int64{3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16, 17, 18}
		if got := qInts(t, db, "SELECT id FROM rg ORDER BY id"); !equalInts(got, want) {
			t.Fatalf("ids = %v, want %v", got, want)
		}
		if s := qInt(t, db, "SELECT SUM(v) FROM rg WHERE id BETWEEN 5 AND 9"); s != 5*(5+9)*10/2+5 {
			t.Fatalf("sum of v over 5..9 = %d, want %d", s, 5*(5+9)*10/2+5)
		}
	})

	t.Run("SelectForUpdateBlocksUpdate", func(t *testing.T) {
		kv(t, "fu", 1)
		a, b := conn(t, db), conn(t, db)
		xexec(t, a, "BEGIN")
		if v := qInt(t, a, "SELECT v FROM fu WHERE id = 1 FOR UPDATE"); v != 10 {
			t.Fatalf("FOR UPDATE read v = %d, want 10", v)
		}
		ch := goExec(b, "UPDATE fu SET v = v + 5 WHERE id = 1")
		mustBlock(t, ch, "B's UPDATE of a row A read FOR UPDATE")
		xexec(t, a, "UPDATE fu SET v = v * 2 WHERE id = 1")
		xexec(t, a, "COMMIT")
		o := await(t, ch, "B's UPDATE")
		if o.err != nil {
			t.Fatalf("B's UPDATE after A's commit: %s", errDesc(o.err))
		}
		if v := qInt(t, db, "SELECT v FROM fu WHERE id = 1"); v != 25 {
			t.Fatalf("v = %d, want 25 (10*2 by A, then +5 by B)", v)
		}
	})

	t.Run("LockWaitTimeout", func(t *testing.T) {
		kv(t, "lw", 2)
		a, b := conn(t, db), conn(t, db)
		xexec(t, b, "SET SESSION innodb_lock_wait_timeout = 1")
		if v := qInt(t, b, "SELECT @@innodb_lock_wait_timeout"); v != 1 {
			t.Fatalf("@@innodb_lock_wait_timeout = %d, want 1", v)
		}
		for _, finish := range []string{"COMMIT", "ROLLBACK"} {
			xexec(t, a, "BEGIN")
			xexec(t, a, "UPDATE lw SET v = v + 1 WHERE id = 1")

			xexec(t, b, "BEGIN")
			want2 := qInt(t, b, "SELECT v FROM lw WHERE id = 2") + 100
			xexec(t, b, "UPDATE lw SET v = v + 100 WHERE id = 2")
			start := time.Now()
			err := tryExec(b, "UPDATE lw SET v = 0 WHERE id = 1")
			el := time.Since(start)
			wantErr(t, err, 1205, "HY000")
			if el < 900*time.Millisecond || el > 10*time.Second {
				t.Fatalf("lock wait timeout after %v, want about 1s", el)
			}
			// InnoDB (innodb_rollback_on_timeout=OFF) rolls back only the
			// statement: the transaction goes on with its earlier change.
			if v := qInt(t, b, "SELECT v FROM lw WHERE id = 2"); v != want2 {
				t.Fatalf("after the timeout B reads row 2 v = %d, want its own earlier update %d", v, want2)
			}
			xexec(t, b, finish)
			xexec(t, a, "ROLLBACK")
			if finish == "ROLLBACK" {
				want2 -= 100
			}
			if v := qInt(t, db, "SELECT v FROM lw WHERE id = 2"); v != want2 {
				t.Fatalf("after B's %s row 2 v = %d, want %d", finish, v, want2)
			}
			if v := qInt(t, db, "SELECT v FROM lw WHERE id = 1"); v != 10 {
				t.Fatalf("row 1 v = %d, want 10 (A rolled back, B's update timed out)", v)
			}
		}
	})

	t.Run("Deadlock", func(t *testing.T) {
		kv(t, "dl", 2)
		a, b := conn(t, db), conn(t, db)
		for _, c := range []*sql.Conn{a, b} {
			xexec(t, c, "SET SESSION innodb_lock_wait_timeout = 50")
			xexec(t, c, "BEGIN")
		}
		xexec(t, a, "UPDATE dl SET v = v + 100 WHERE id = 1")
		xexec(t, b, "UPDATE dl SET v = v + 200 WHERE id = 2")
		chA := goExec(a, "UPDATE dl SET v = v + 100 WHERE id = 2")
		mustBlock(t, chA, "A's UPDATE of the row B locked")
		start := time.Now()
		chB := goExec(b, "UPDATE dl SET v = v + 200 WHERE id = 1")

		// the victim gets 1213; the other one's UPDATE then proceeds (its
		// answer may even arrive first)
		var oa, ob outcome
		var gotA, gotB bool
		deadline := time.After(20 * time.Second)
		for {
			select {
			case oa = <-chA:
				gotA = true
			case ob = <-chB:
				gotB = true
			case <-deadline:
				t.Fatalf("no deadlock resolved within 20s (lock wait timeout is 50s)")
			}
			if (gotA && oa.err != nil) || (gotB && ob.err != nil) || (gotA && gotB) {
				break
			}
		}
		detected := time.Since(start)
		victim, winner, winnerCh, victimName := oa, b, chB, "A"
		if gotB && ob.err != nil {
			victim, winner, winnerCh, victimName = ob, a, chA, "B"
		}
		if victimName == "A" && gotB {
			winnerCh = replay(ob)
		} else if victimName == "B" && gotA {
			winnerCh = replay(oa)
		}
		wantErr(t, victim.err, 1213, "40001")
		if detected > 10*time.Second {
			t.Fatalf("deadlock reported after %v, want promptly (well before the 50s lock wait timeout)", detected)
		}
		t.Logf("victim %s got %s after %v", victimName, errDesc(victim.err), detected)
		victimConn := a
		if victimName == "B" {
			victimConn = b
		}
		// InnoDB rolls back the victim's whole transaction, releasing its
		// locks: the winner must proceed without any further action.
		var wo outcome
		select {
		case wo = <-winnerCh:
		case <-time.After(5 * time.Second):
			t.Errorf("the winner's UPDATE stayed blocked for 5s after the victim got 1213; " +
				"InnoDB rolls the victim's transaction back at once, releasing its locks")
			// the victim's own row must read as rolled back too
			vrow, orig := 2, int64(20)
			if victimName == "A" {
				vrow, orig = 1, 10
			}
			if v := qInt(t, victimConn, "SELECT v FROM dl WHERE id = ?", vrow); v != orig {
				t.Errorf("after 1213 the victim still sees its own earlier update (row %d v = %d, want %d)", vrow, v, orig)
			}
			xexec(t, victimConn, "ROLLBACK")
			wo = await(t, winnerCh, "winner's UPDATE")
			t.Logf("winner proceeded after the victim's explicit ROLLBACK: %s", errDesc(wo.err))
		}
		if wo.err != nil {
			t.Fatalf("winner's UPDATE: %s", errDesc(wo.err))
		}
		xexec(t, winner, "COMMIT")
		xexec(t, victimConn, "ROLLBACK")
		want1, want2 := int64(110), int64(120)
		if victimName == "A" {
			want1, want2 = 210, 220
		}
		got := qInts(t, db, "SELECT v FROM dl ORDER BY id")
		if !equalInts(got, []int64{want1, want2}) {
			t.Fatalf("after deadlock (victim %s) rows v = %v, want [%d %d] (winner's changes only)", victimName, got, want1, want2)
		}
	})

	t.Run("RollbackAndAutocommit", func(t *testing.T) {
		kv(t, "ac", 2)
		a, b := conn(t, db), conn(t, db)

		xexec(t, a, "BEGIN")
		xexec(t, a, "INSERT INTO ac VALUES (3, 30)")
		xexec(t, a, "UPDATE ac SET v = 99 WHERE id = 1")
		xexec(t, a, "DELETE FROM ac WHERE id = 2")
		if got := qInts(t, a, "SELECT id FROM ac ORDER BY id"); !equalInts(got, []int64{1, 3}) {
			t.Fatalf("inside the transaction ids = %v, want [1 3]", got)
		}
		xexec(t, a, "ROLLBACK")
		if got := qInts(t, a, "SELECT v FROM ac ORDER BY id"); !equalInts(got, []int64{10, 20}) {
			t.Fatalf("after ROLLBACK v = %v, want [10 20]", got)
		}

		xexec(t, a, "SET autocommit = 0")
		if v := qInt(t, a, "SELECT @@autocommit"); v != 0 {
			t.Fatalf("@@autocommit = %d, want 0", v)
		}
		xexec(t, a, "INSERT INTO ac VALUES (3, 30)")
		xexec(t, a, "UPDATE ac SET v = 11 WHERE id = 1")
		if c := qInt(t, b, "SELECT COUNT(*) FROM ac WHERE id = 3"); c != 0 {
			t.Fatalf("autocommit=0: another session sees the uncommitted insert")
		}
		if v := qInt(t, b, "SELECT v FROM ac WHERE id = 1"); v != 10 {
			t.Fatalf("autocommit=0: another session sees uncommitted v = %d", v)
		}
		if c := qInt(t, a, "SELECT COUNT(*) FROM ac"); c != 3 {
			t.Fatalf("autocommit=0: own session counts %d rows, want 3", c)
		}
		xexec(t, a, "COMMIT")
		if c := qInt(t, b, "SELECT COUNT(*) FROM ac WHERE id = 3"); c != 1 {
			t.Fatalf("after COMMIT another session does not see the insert")
		}
		if v := qInt(t, b, "SELECT v FROM ac WHERE id = 1"); v != 11 {
			t.Fatalf("after COMMIT another session reads v = %d, want 11", v)
		}
		// the next statement opens a new transaction implicitly
		xexec(t, a, "INSERT INTO ac VALUES (4, 40)")
		xexec(t, a, "DELETE FROM ac WHERE id = 1")
		if c := qInt(t, b, "SELECT COUNT(*) FROM ac WHERE id IN (1, 4)"); c != 1 {
			t.Fatalf("autocommit=0 second transaction visible to others before COMMIT (count %d, want 1)", c)
		}
		xexec(t, a, "ROLLBACK")
		if got := qInts(t, a, "SELECT id FROM ac ORDER BY id"); !equalInts(got, []int64{1, 2, 3}) {
			t.Fatalf("after ROLLBACK with autocommit=0 ids = %v, want [1 2 3]", got)
		}
		xexec(t, a, "SET autocommit = 1")
		xexec(t, a, "INSERT INTO ac VALUES (5, 50)")
		if c := qInt(t, b, "SELECT COUNT(*) FROM ac WHERE id = 5"); c != 1 {
			t.Fatalf("autocommit=1 insert not visible to another session")
		}
	})

	// Reading a view inside a transaction committed it (go-mysql-server
	// kept the DDL flag of the view's CREATE VIEW, bound to read it): the
	// ROLLBACK kept the row, and a savepoint was gone. DDL still commits.
	t.Run("ViewInTransaction", func(t *testing.T) {
		xexec(t, db, "CREATE TABLE vt (id INT PRIMARY KEY)")
		xexec(t, db, "CREATE VIEW vtv AS SELECT id FROM vt")
		a := conn(t, db)
		count := func() int64 { return qInt(t, db, "SELECT COUNT(*) FROM vt") }
		for _, begin := range []string{"START TRANSACTION", "SET autocommit = 0"} {
			xexec(t, a, begin)
			xexec(t, a, "INSERT INTO vt VALUES (1)")
			xexec(t, a, "SAVEPOINT s")
			if n := qInt(t, a, "SELECT COUNT(*) FROM vtv"); n != 1 {
				t.Fatalf("%s: the view shows %d rows, want the transaction's 1", begin, n)
			}
			xexec(t, a, "INSERT INTO vt SELECT id + 1 FROM vtv")
			xexec(t, a, "ROLLBACK TO SAVEPOINT s")
			if n := count(); n != 0 {
				t.Fatalf("%s: another session sees %d rows before ROLLBACK", begin, n)
			}
			xexec(t, a, "ROLLBACK")
			if n := count(); n != 0 {
				t.Fatalf("%s: %d rows after ROLLBACK, want 0", begin, n)
			}
			xexec(t, a, "SET autocommit = 1")
		}
		// a qualified CREATE VIEW needs no database selected
		nodb := n.DB("")
		defer nodb.Close()
		xexec(t, nodb, "CREATE VIEW txn.vtv2 AS SELECT id + 1 AS id FROM txn.vt")
		xexec(t, a, "START TRANSACTION")
		xexec(t, a, "INSERT INTO vt VALUES (2)")
		xexec(t, a, "CREATE TABLE vt2 (id INT PRIMARY KEY)") // commits first
		xexec(t, a, "ROLLBACK")
		if n := count(); n != 1 {
			t.Fatalf("%d rows after DDL and ROLLBACK, want the 1 the DDL committed", n)
		}
		if id := qInt(t, db, "SELECT id FROM vtv2"); id != 3 {
			t.Fatalf("vtv2 shows %d, want 3", id)
		}
		// and reading one does not either, as text or prepared
		if id := qInt(t, nodb, "SELECT v.id FROM txn.vtv2 AS v JOIN txn.vt ON vt.id = v.id - 1"); id != 3 {
			t.Fatalf("txn.vtv2 with no database selected shows %d, want 3", id)
		}
		if id := qInt(t, nodb, "SELECT id FROM txn.vtv2 WHERE id = ?", 3); id != 3 {
			t.Fatalf("txn.vtv2 prepared with no database selected shows %d, want 3", id)
		}
		for _, q := range []string{"SELECT id FROM vtv2", "SELECT DATABASE(), id FROM txn.vtv2"} {
			_, err := nodb.Exec(q)
			wantErr(t, err, 1046, "3D000")
		}
	})

	t.Run("Savepoints", func(t *testing.T) {
		xexec(t, db, "CREATE TABLE sp (id INT PRIMARY KEY, v INT NOT NULL)")
		a := conn(t, db)
		ids := func() []int64 { return qInts(t, a, "SELECT id FROM sp ORDER BY id") }
		xexec(t, a, "BEGIN")
		xexec(t, a, "INSERT INTO sp VALUES (1, 10)")
		xexec(t, a, "SAVEPOINT sp1")
		xexec(t, a, "INSERT INTO sp VALUES (2, 20)")
		xexec(t, a, "UPDATE sp SET v = 100 WHERE id = 1")
		xexec(t, a, "SAVEPOINT sp2")
		xexec(t, a, "INSERT INTO sp VALUES (3, 30)")
		xexec(t, a, "ROLLBACK TO SAVEPOINT sp2")
		if got := ids(); !equalInts(got, []int64{1, 2}) {
			t.Fatalf("after ROLLBACK TO sp2 ids = %v, want [1 2]", got)
		}
		if v := qInt(t, a, "SELECT v FROM sp WHERE id = 1"); v != 100 {
			t.Fatalf("after ROLLBACK TO sp2 v = %d, want 100 (change before sp2 stays)", v)
		}
		xexec(t, a, "ROLLBACK TO SAVEPOINT sp1")
		if got := ids(); !equalInts(got, []int64{1}) {
			t.Fatalf("after ROLLBACK TO sp1 ids = %v, want [1]", got)
		}
		if v := qInt(t, a, "SELECT v FROM sp WHERE id = 1"); v != 10 {
			t.Fatalf("after ROLLBACK TO sp1 v = %d, want 10", v)
		}
		// savepoints set after sp1 are gone
		if err := tryExec(a, "ROLLBACK TO SAVEPOINT sp2"); err == nil {
			t.Fatalf("ROLLBACK TO SAVEPOINT sp2 succeeded after ROLLBACK TO sp1 (later savepoints must be deleted)")
		} else {
			checkErr(t, err, 1305, "42000", "ROLLBACK TO a savepoint deleted by an earlier ROLLBACK TO")
		}
		xexec(t, a, "INSERT INTO sp VALUES (4, 40)")
		xexec(t, a, "SAVEPOINT sp3")
		xexec(t, a, "INSERT INTO sp VALUES (5, 50)")
		xexec(t, a, "RELEASE SAVEPOINT sp3")
		if got := ids(); !equalInts(got, []int64{1, 4, 5}) {
			t.Fatalf("after RELEASE SAVEPOINT ids = %v, want [1 4 5]", got)
		}
		for _, q := range []string{"ROLLBACK TO SAVEPOINT sp3", "ROLLBACK TO SAVEPOINT nosuch", "RELEASE SAVEPOINT nosuch"} {
			err := tryExec(a, q)
			if err == nil {
				t.Fatalf("%s: succeeded, want an error (no such savepoint)", q)
			}
			checkErr(t, err, 1305, "42000", q)
		}
		// a failed savepoint statement does not end the transaction
		if got := ids(); !equalInts(got, []int64{1, 4, 5}) {
			t.Fatalf("after the savepoint errors ids = %v, want [1 4 5]", got)
		}
		xexec(t, a, "COMMIT")
		if got := qInts(t, db, "SELECT id FROM sp ORDER BY id"); !equalInts(got, []int64{1, 4, 5}) {
			t.Fatalf("after COMMIT ids = %v, want [1 4 5]", got)
		}
		if v := qInt(t, db, "SELECT v FROM sp WHERE id = 1"); v != 10 {
			t.Fatalf("after COMMIT v = %d, want 10", v)
		}
	})

	t.Run("StatementLevelRollback", func(t *testing.T) {
		xexec(t, db, "CREATE TABLE sr (id INT PRIMARY KEY, v INT NOT NULL)")
		xexec(t, db, "INSERT INTO sr VALUES (10, 10)")
		a := conn(t, db)
		xexec(t, a, "BEGIN")
		xexec(t, a, "INSERT INTO sr VALUES (1, 1)")
		xexec(t, a, "UPDATE sr SET v = 11 WHERE id = 10")
		wantErr(t, tryExec(a, "INSERT INTO sr VALUES (2, 2), (10, 10), (3, 3)"), 1062, "23000")
		if got := qInts(t, a, "SELECT id FROM sr ORDER BY id"); !equalInts(got, []int64{1, 10}) {
			t.Fatalf("after the failed INSERT ids = %v, want [1 10] (earlier statement kept, failed one undone)", got)
		}
		xexec(t, a, "INSERT INTO sr VALUES (4, 4)")
		xexec(t, a, "COMMIT")
		if got := qInts(t, db, "SELECT id FROM sr ORDER BY id"); !equalInts(got, []int64{1, 4, 10}) {
			t.Fatalf("after COMMIT ids = %v, want [1 4 10]", got)
		}
		if v := qInt(t, db, "SELECT v FROM sr WHERE id = 10"); v != 11 {
			t.Fatalf("after COMMIT v = %d, want 11", v)
		}
		// autocommit: a failed multi-row INSERT leaves nothing behind
		wantErr(t, tryExec(db, "INSERT INTO sr VALUES (20, 20), (21, 21), (10, 0)"), 1062, "23000")
		if c := qInt(t, db, "SELECT COUNT(*) FROM sr WHERE id IN (20, 21)"); c != 0 {
			t.Fatalf("failed autocommit INSERT left %d of its rows behind", c)
		}
		// a failed multi-row UPDATE inside a transaction is undone as a whole
		xexec(t, db, "CREATE TABLE sru (id INT PRIMARY KEY, u INT NOT NULL, UNIQUE KEY uu (u))")
		xexec(t, db, "INSERT INTO sru VALUES (1, 1), (2, 2), (3, 3)")
		xexec(t, a, "BEGIN")
		xexec(t, a, "UPDATE sru SET u = 100 WHERE id = 1")
		wantErr(t, tryExec(a, "UPDATE sru SET u = 3 WHERE id IN (1, 2)"), 1062, "23000")
		if got := qInts(t, a, "SELECT u FROM sru ORDER BY id"); !equalInts(got, []int64{100, 2, 3}) {
			t.Fatalf("after the failed UPDATE u = %v, want [100 2 3]", got)
		}
		xexec(t, a, "COMMIT")
		if got := qInts(t, db, "SELECT u FROM sru ORDER BY id"); !equalInts(got, []int64{100, 2, 3}) {
			t.Fatalf("after COMMIT u = %v, want [100 2 3]", got)
		}
	})

	t.Run("ConcurrentIncrements", func(t *testing.T) {
		xexec(t, db, "CREATE TABLE inc (id INT PRIMARY KEY, v INT NOT NULL)")
		xexec(t, db, "INSERT INTO inc VALUES (1, 0)")
		const workers, per = 2, 1000
		var wg sync.WaitGroup
		errs := make(chan error, workers*per)
		startGate := make(chan struct{})
		began := time.Now()
		for w := 0; w < workers; w++ {
			c := conn(t, db)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-startGate
				for i := 0; i < per; i++ {
					if err := tryExec(c, "UPDATE inc SET v = v + 1 WHERE id = 1"); err != nil {
						errs <- fmt.Errorf("update %d: %s", i, errDesc(err))
					}
				}
			}()
		}
		close(startGate)
		wg.Wait()
		close(errs)
		n := 0
		for err := range errs {
			if n < 5 {
				t.Errorf("concurrent increment failed: %v", err)
			}
			n++
		}
		if n > 0 {
			t.Errorf("%d of %d increments failed", n, workers*per)
		}
		if v := qInt(t, db, "SELECT v FROM inc WHERE id = 1"); v != workers*per {
			t.Fatalf("v = %d, want %d (%d increments reported an error)", v, workers*per, n)
		}
		t.Logf("%d increments in %v", workers*per, time.Since(began))
	})

	t.Run("Do", func(t *testing.T) {
		c := conn(t, db)
		xexec(t, c, "DO GET_LOCK('systest_do', 5), 1 + 1")
		if got := qInt(t, c, "SELECT IS_USED_LOCK('systest_do') IS NOT NULL"); got != 1 {
			t.Fatalf("DO GET_LOCK(...) did not take the lock")
		}
		xexec(t, c, "DO RELEASE_LOCK('systest_do')")
		if got := qInt(t, c, "SELECT IS_USED_LOCK('systest_do') IS NULL"); got != 1 {
			t.Fatalf("DO RELEASE_LOCK(...) did not release the lock")
		}
	})

	t.Run("OptimizeTable", func(t *testing.T) {
		xexec(t, db, "CREATE TABLE opt (id INT PRIMARY KEY, v VARCHAR(20))")
		xexec(t, db, "INSERT INTO opt VALUES (1, 'a'), (2, 'b')")
		xexec(t, db, "UPDATE opt SET v = 'c'")
		xexec(t, db, "DELETE FROM opt WHERE id = 2")
		r, err := runStmt(context.Background(), conn(t, db), true, "OPTIMIZE LOCAL TABLE opt, nosuch")
		if err != nil || r.Err != 0 || len(r.Cols) != 4 {
			t.Fatalf("OPTIMIZE TABLE: %v %+v", err, r)
		}
		if len(r.Rows) != 3 || r.Rows[0][2] != "'status'" || r.Rows[0][3] != "'OK'" || r.Rows[1][2] != "'Error'" || r.Rows[2][3] != "'Operation failed'" {
			t.Fatalf("OPTIMIZE TABLE opt, nosuch answered %v", r.Rows)
		}
		if got := qStr(t, db, "SELECT v FROM opt WHERE id = 1"); got != "c" {
			t.Fatalf("after OPTIMIZE TABLE the row reads %q, want c", got)
		}
	})

	t.Run("ChecksumTable", func(t *testing.T) {
		xexec(t, db, "CREATE TABLE ck1 (id INT PRIMARY KEY, v VARCHAR(10))")
		xexec(t, db, "CREATE TABLE ck2 (id INT PRIMARY KEY, v VARCHAR(10))")
		xexec(t, db, "CREATE TABLE ck3 (a INT, b INT)") // keyless: row order is not insertion order
		xexec(t, db, "INSERT INTO ck1 VALUES (1, 'a'), (2, NULL), (3, '')")
		xexec(t, db, "INSERT INTO ck2 VALUES (3, ''), (2, NULL), (1, 'a')")
		sums := func(q string) []string {
			t.Helper()
			r, err := runStmt(context.Background(), conn(t, db), true, q)
			if err != nil || r.Err != 0 || len(r.Cols) != 2 || !strings.HasPrefix(r.Cols[0], "Table:") || !strings.HasPrefix(r.Cols[1], "Checksum:") {
				t.Fatalf("%s: %v %+v", q, err, r)
			}
			var out []string
			for _, row := range r.Rows {
				out = append(out, row[1])
			}
			return out
		}
		got := sums("CHECKSUM TABLE ck1, ck2, nosuch, ck3 EXTENDED")
		if len(got) != 4 || got[0] != got[1] || got[0] == "NULL" || got[2] != "NULL" {
			t.Fatalf("CHECKSUM TABLE ck1, ck2, nosuch, ck3 = %v: want equal sums for equal rows, NULL for a missing table", got)
		}
		empty := got[3]
		xexec(t, db, "UPDATE ck2 SET v = NULL WHERE id = 3")
		if g := sums("CHECKSUM TABLE ck1, ck2"); g[0] == g[1] {
			t.Fatalf("CHECKSUM TABLE is %v after ck2 changed ('' became NULL)", g)
		}
		xexec(t, db, "INSERT INTO ck3 VALUES (1, 1), (1, 1)")
		xexec(t, db, "CREATE TABLE ck4 (a INT, b INT)")
		xexec(t, db, "INSERT INTO ck4 VALUES (1, 1)")
		if g := sums("CHECKSUM TABLE ck3, ck4"); g[0] == g[1] || g[0] == empty {
			t.Fatalf("CHECKSUM TABLE of a duplicated row %v: a duplicate must count", g)
		}
	})

	t.Run("AutoIncrement", func(t *testing.T) {
		xexec(t, db, "CREATE TABLE ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL)")
		a, b := conn(t, db), conn(t, db)
		var last int64
		for i := 1; i <= 5; i++ {
			r := xexec(t, a, "INSERT INTO ai (v) VALUES (?)", i)
			id, err := r.LastInsertId()
			if err != nil {
				t.Fatal(err)
			}
			if id <= last {
				t.Fatalf("insert %d got id %d, not greater than the previous %d", i, id, last)
			}
			if lid := qInt(t, a, "SELECT LAST_INSERT_ID()"); lid != id {
				t.Fatalf("LAST_INSERT_ID() = %d, OK packet said %d", lid, id)
			}
			if got := qInt(t, a, "SELECT id FROM ai WHERE v = ?", i); got != id {
				t.Fatalf("row v=%d has id %d, LastInsertId said %d", i, got, id)
			}
			last = id
		}
		// a multi-row insert: LAST_INSERT_ID() is the first generated id
		xexec(t, a, "INSERT INTO ai (v) VALUES (6), (7), (8)")
		first := qInt(t, a, "SELECT id FROM ai WHERE v = 6")
		if lid := qInt(t, a, "SELECT LAST_INSERT_ID()"); lid != first {
			t.Fatalf("after a 3-row insert LAST_INSERT_ID() = %d, want the first row's id %d", lid, first)
		}
		got := qInts(t, a, "SELECT id FROM ai WHERE v IN (6, 7, 8) ORDER BY v")
		if len(got) != 3 || !(last < got[0] && got[0] < got[1] && got[1] < got[2]) {
			t.Fatalf("multi-row insert ids = %v, want 3 increasing ids above %d", got, last)
		}
		last = got[2]
		// another session's inserts do not change this session's LAST_INSERT_ID()
		xexec(t, b, "INSERT INTO ai (v) VALUES (9)")
		if lid := qInt(t, a, "SELECT LAST_INSERT_ID()"); lid != first {
			t.Fatalf("LAST_INSERT_ID() = %d after another session's insert, want %d", lid, first)
		}
		if lid := qInt(t, b, "SELECT LAST_INSERT_ID()"); lid <= last {
			t.Fatalf("B's LAST_INSERT_ID() = %d, want above %d", lid, last)
		}
		// an explicit larger id moves the counter
		xexec(t, a, "INSERT INTO ai (id, v) VALUES (100, 100)")
		if lid := qInt(t, a, "SELECT LAST_INSERT_ID()"); lid != first {
			t.Fatalf("LAST_INSERT_ID() = %d after inserting an explicit id, want it unchanged (%d)", lid, first)
		}
		r := xexec(t, a, "INSERT INTO ai (v) VALUES (101)")
		id, _ := r.LastInsertId()
		inc := qInt(t, a, "SELECT @@auto_increment_increment")
		if id <= 100 || (inc == 1 && id != 101) {
			t.Fatalf("after explicit id 100 the next generated id is %d, want 101 (auto_increment_increment=%d)", id, inc)
		}
		if lid := qInt(t, a, "SELECT LAST_INSERT_ID()"); lid != id {
			t.Fatalf("LAST_INSERT_ID() = %d, want %d", lid, id)
		}
		// concurrent sessions get unique ids
		const workers, per = 4, 25
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := map[int64]bool{}
		var failures []string
		for w := 0; w < workers; w++ {
			c := conn(t, db)
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < per; i++ {
					ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
					r, err := c.ExecContext(ctx, "INSERT INTO ai (v) VALUES (?)", 1000+w*per+i)
					cancel()
					mu.Lock()
					if err != nil {
						failures = append(failures, errDesc(err))
					} else if id, _ := r.LastInsertId(); seen[id] || id <= 101 {
						failures = append(failures, fmt.Sprintf("id %d handed out twice or below the counter", id))
					} else {
						seen[id] = true
					}
					mu.Unlock()
				}
			}(w)
		}
		wg.Wait()
		if len(failures) > 0 {
			t.Fatalf("%d concurrent auto-increment inserts failed, first: %s", len(failures), failures[0])
		}
		if c := qInt(t, db, "SELECT COUNT(DISTINCT id) FROM ai WHERE v >= 1000"); c != workers*per {
			t.Fatalf("%d distinct ids from concurrent inserts, want %d", c, workers*per)
		}
		for _, id := range qInts(t, db, "SELECT id FROM ai WHERE v >= 1000") {
			if !seen[id] {
				t.Fatalf("row id %d was not reported by any INSERT's LastInsertId", id)
			}
		}
	})

	t.Run("UniqueIndexConcurrentDuplicate", func(t *testing.T) {
		xexec(t, db, "CREATE TABLE uq (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, UNIQUE KEY uname (name))")
		xexec(t, db, "INSERT INTO uq VALUES (1, 'a')")
		wantErr(t, tryExec(db, "INSERT INTO uq VALUES (2, 'a')"), 1062, "23000")
		a, b := conn(t, db), conn(t, db)
		for i, finish := range []string{"COMMIT", "ROLLBACK"} {
			name := fmt.Sprintf("x%d", i)
			idA, idB := 10+2*i, 11+2*i
			xexec(t, a, "BEGIN")
			xexec(t, a, "INSERT INTO uq VALUES (?, ?)", idA, name)
			ch := goExec(b, "INSERT INTO uq VALUES (?, ?)", idB, name)
			mustBlock(t, ch, "B's INSERT of a unique value A inserted uncommitted")
			xexec(t, a, finish)
			o := await(t, ch, "B's INSERT")
			if finish == "COMMIT" {
				wantErr(t, o.err, 1062, "23000")
				if got := qInts(t, db, "SELECT id FROM uq WHERE name = ?", name); !equalInts(got, []int64{int64(idA)}) {
					t.Fatalf("rows with name %s: ids %v, want [%d]", name, got, idA)
				}
			} else {
				if o.err != nil {
					t.Fatalf("B's INSERT after A's ROLLBACK: %s", errDesc(o.err))
				}
				if got := qInts(t, db, "SELECT id FROM uq WHERE name = ?", name); !equalInts(got, []int64{int64(idB)}) {
					t.Fatalf("rows with name %s: ids %v, want [%d]", name, got, idB)
				}
			}
		}
	})
}

// replay returns a channel that yields an outcome already received.
func replay(o outcome) <-chan outcome {
	ch := make(chan outcome, 1)
	ch <- o
	return ch
}
