package systest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// TestCrashRecovery kills a node with SIGKILL while eight sessions insert
// rows; after a restart on the same data dir every acknowledged row must be
// there, no row that was never inserted may appear, an uncommitted
// transaction must be gone, and the table must be usable. Then a clean
// stop/start must keep everything.
func TestCrashRecovery(t *testing.T) {
	n, db := startNode(t, "rec1", "r")
	xexec(t, db, "CREATE TABLE w (id BIGINT PRIMARY KEY, writer INT NOT NULL, seq INT NOT NULL, pad VARCHAR(64))")
	xexec(t, db, "CREATE TABLE k (id INT PRIMARY KEY, v INT NOT NULL)")
	xexec(t, db, "INSERT INTO k VALUES (1, 100)")

	const writers = 8
	const idBase = 1_000_000
	var (
		killing  atomic.Bool
		mu       sync.Mutex
		acked    = map[int64]bool{}
		tried    = map[int64]bool{}
		early    []string // errors before the kill
		lateErrs int      // errors caused by the kill
		wg       sync.WaitGroup
		stop     = make(chan struct{})
	)
	for w := 1; w <= writers; w++ {
		c := conn(t, db)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for seq := 1; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				id := int64(w*idBase + seq)
				mu.Lock()
				tried[id] = true
				mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := c.ExecContext(ctx, "INSERT INTO w VALUES (?, ?, ?, ?)", id, w, seq, strings.Repeat("p", 40))
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					acked[id] = true
				case killing.Load():
					lateErrs++
				default:
					early = append(early, fmt.Sprintf("writer %d seq %d: %s", w, seq, errDesc(err)))
				}
				mu.Unlock()
				if err != nil {
					if killing.Load() {
						return // the session died with the node
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		}(w)
	}

	// An open transaction at the time of the crash must not survive it.
	open := conn(t, db)
	xexec(t, open, "BEGIN")
	xexec(t, open, "INSERT INTO w VALUES (-1, 0, 0, 'uncommitted')")
	xexec(t, open, "UPDATE k SET v = 999 WHERE id = 1")

	time.Sleep(3 * time.Second) // let the writers run: this is the workload's duration
	mu.Lock()
	ackedBeforeKill := len(acked)
	mu.Unlock()
	killing.Store(true)
	n.Kill()
	close(stop)
	wg.Wait()
	if n.Running() {
		t.Fatalf("node still running after SIGKILL")
	}
	if len(early) > 0 {
		t.Errorf("%d inserts failed before the kill, first: %s", len(early), early[0])
	}
	if ackedBeforeKill == 0 {
		t.Fatalf("no insert was acknowledged in 3s")
	}
	if lateErrs == 0 {
		t.Errorf("no insert was in flight when the node was killed (want the kill to interrupt writers)")
	}
	t.Logf("acknowledged %d inserts of %d attempted; %d failed because of the kill", len(acked), len(tried), lateErrs)

	n.Start()
	db = n.DB("r")
	present := qInts(t, db, "SELECT id FROM w ORDER BY id")
	have := map[int64]bool{}
	for _, id := range present {
		have[id] = true
	}
	var missing []int64
	for id := range acked {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d acknowledged rows are missing after the crash, e.g. %v", len(missing), sortedInts(missing)[:min(10, len(missing))])
	}
	for _, id := range present {
		if !tried[id] {
			t.Errorf("row %d is present but was never inserted", id)
			break
		}
	}
	if c := qInt(t, db, "SELECT COUNT(*) FROM w"); c != int64(len(present)) {
		t.Errorf("COUNT(*) = %d, but SELECT id returned %d rows", c, len(present))
	}
	if c := qInt(t, db, fmt.Sprintf("SELECT COUNT(*) FROM w WHERE id <> writer * %d + seq", idBase)); c != 0 {
		t.Errorf("%d rows have columns that do not match their id", c)
	}
	if have[-1] {
		t.Errorf("a row of a transaction that never committed survived the crash")
	}
	if v := qInt(t, db, "SELECT v FROM k WHERE id = 1"); v != 100 {
		t.Errorf("k.v = %d after the crash, want 100 (the update never committed)", v)
	}
	t.Logf("after restart: %d rows (%d acknowledged, %d committed without acknowledgement)", len(present), len(acked), len(present)-len(acked)+len(missing))

	// The table is usable: writes, reads, updates, deletes, DDL.
	xexec(t, db, "INSERT INTO w VALUES (1, 0, 1, 'after'), (2, 0, 2, 'after')")
	xexec(t, db, "UPDATE w SET pad = 'updated' WHERE id IN (1, 2)")
	xexec(t, db, "DELETE FROM w WHERE id = 2")
	if got := qStr(t, db, "SELECT pad FROM w WHERE id = 1"); got != "updated" {
		t.Fatalf("pad = %q after the post-crash update", got)
	}
	wantErr(t, tryExec(db, "INSERT INTO w VALUES (1, 0, 1, 'dup')"), 1062, "23000")
	xexec(t, db, "UPDATE k SET v = v + 1 WHERE id = 1")
	xexec(t, db, "CREATE TABLE after_crash (id INT PRIMARY KEY)")
	xexec(t, db, "INSERT INTO after_crash VALUES (1)")
	if h := n.Health(); h != 200 {
		t.Fatalf("/health = %d after the restart", h)
	}
	before := qInt(t, db, "SELECT COUNT(*) FROM w")
	idsBefore := qInts(t, db, "SELECT id FROM w ORDER BY id")

	t.Run("CleanStopStart", func(t *testing.T) {
		n.Stop()
		if n.Running() {
			t.Fatalf("node still running after SIGTERM")
		}
		n.Start()
		db := n.DB("r")
		if c := qInt(t, db, "SELECT COUNT(*) FROM w"); c != before {
			t.Fatalf("COUNT(*) = %d after a clean restart, want %d", c, before)
		}
		if ids := qInts(t, db, "SELECT id FROM w ORDER BY id"); !equalInts(ids, idsBefore) {
			t.Fatalf("the ids in w changed across a clean restart (%d rows before, %d after)", len(idsBefore), len(ids))
		}
		if v := qInt(t, db, "SELECT v FROM k WHERE id = 1"); v != 101 {
			t.Fatalf("k.v = %d after a clean restart, want 101", v)
		}
		if c := qInt(t, db, "SELECT COUNT(*) FROM after_crash"); c != 1 {
			t.Fatalf("after_crash has %d rows after a clean restart, want 1", c)
		}
		xexec(t, db, "INSERT INTO w VALUES (3, 0, 3, 'after restart')")
		if c := qInt(t, db, "SELECT COUNT(*) FROM w"); c != before+1 {
			t.Fatalf("COUNT(*) = %d after an insert, want %d", c, before+1)
		}
	})
}

// TestRootPassword checks --root-password-file: no password or a wrong
// one is refused with 1045, the right one works, and the password is on
// no command line.
func TestRootPassword(t *testing.T) {
	const pw = "s3cret-pw"
	file := filepath.Join(t.TempDir(), "root-password")
	if err := os.WriteFile(file, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := testcluster.NewNode(t, "pw1", "--root-password-file", file)
	if err := n.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", n.PID())); err != nil || strings.Contains(string(cmdline), pw) {
		t.Fatalf("the root password on the node's command line %q (%v)", cmdline, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node %s log tail:\n%s", n.Name, n.LogTail(40))
		}
	})
	dsn := func(pass string) string {
		if pass == "" {
			return fmt.Sprintf("root@tcp(%s)/?timeout=5s&readTimeout=60s", n.SQLAddr)
		}
		return fmt.Sprintf("root:%s@tcp(%s)/?timeout=5s&readTimeout=60s", pass, n.SQLAddr)
	}
	open := func(t *testing.T, d string) *sql.DB {
		db, err := sql.Open("mysql", d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	good := open(t, dsn(pw))
	if err := n.WaitSynced(60 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, n.LogTail(30))
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := good.PingContext(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) || !n.Running() {
			t.Fatalf("cannot connect with the root password: %s\n%s", errDesc(err), n.LogTail(30))
		}
		time.Sleep(50 * time.Millisecond)
	}

	for _, tc := range []struct{ name, pass string }{{"NoPassword", ""}, {"WrongPassword", "wrong"}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			err := open(t, dsn(tc.pass)).PingContext(ctx)
			wantErr(t, err, 1045, "28000")
		})
	}
	t.Run("RightPassword", func(t *testing.T) {
		if v := qInt(t, good, "SELECT 1"); v != 1 {
			t.Fatalf("SELECT 1 = %d", v)
		}
		xexec(t, good, "CREATE DATABASE p")
		xexec(t, good, "CREATE TABLE p.t (id INT PRIMARY KEY)")
		xexec(t, good, "INSERT INTO p.t VALUES (1)")
		if c := qInt(t, good, "SELECT COUNT(*) FROM p.t"); c != 1 {
			t.Fatalf("COUNT(*) = %d, want 1", c)
		}
		if u := qStr(t, good, "SELECT CURRENT_USER()"); !strings.HasPrefix(u, "root@") {
			t.Fatalf("CURRENT_USER() = %q, want root@...", u)
		}
	})
}
