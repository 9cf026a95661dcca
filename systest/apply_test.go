package systest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// TestParallelApplyMatchesSerial applies one log two ways: node 2 with
// four applier threads (parallel apply), node 3 with one. Clients on nodes
// 1 and 3 (two origins) run random transactions on a table with a unique
// and a plain secondary index: updates that move index values, deletes and
// re-inserts, and read-then-update transactions (keys certified at their
// snapshot position). Node 2's apply stage is slowed (1 ms per write-set)
// so its workers run far ahead of it. Every node must end with the same
// data, each digest matching a recomputation from its data, and node 2
// must really have built write-sets ahead (apply window above 1).
func TestParallelApplyMatchesSerial(t *testing.T) {
	c := testcluster.StartCluster(t, 3, "--enable-fault-injection")
	n1, n2, n3 := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	mustExec(t, n2.DB(""), "SET GLOBAL wsrep_applier_threads = 4")
	if got := qInt(t, n2.DB(""), "SELECT @@GLOBAL.wsrep_applier_threads"); got != 4 {
		t.Fatalf("wsrep_applier_threads = %d after SET GLOBAL, want 4", got)
	}
	const rows = 300
	mustExec(t, n1.DB(""), "CREATE DATABASE pa")
	mustExec(t, n1.DB(""), "CREATE TABLE pa.t (id INT PRIMARY KEY, u INT, k INT, c VARCHAR(40), UNIQUE KEY uu (u), KEY kk (k))")
	q := "INSERT INTO pa.t VALUES "
	for i := 0; i < rows; i++ {
		if i > 0 {
			q += ","
		}
		q += fmt.Sprintf("(%d, %d, %d, 'c%d')", i, i, i%17, i)
	}
	mustExec(t, n1.DB(""), q)
	awaitApplied(t, c)
	faultHTTP(t, n2, "apply_delay=1ms")

	ctx, cancel := context.WithTimeout(context.Background(), durationEnv("CERTUS_PARALLEL_APPLY_DURATION", 10*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	commits := 0
	for _, n := range []*testcluster.Node{n1, n3} {
		db := n.DB("pa")
		for w := 0; w < 6; w++ {
			wg.Add(1)
			go func(seed int64) {
				defer wg.Done()
				r := rand.New(rand.NewSource(seed))
				for ctx.Err() == nil {
					id := r.Intn(rows)
					var err error
					switch r.Intn(4) {
					case 0: // move both index values
						_, err = db.ExecContext(ctx, "UPDATE t SET k = k + 1, u = u + ? WHERE id = ?", rows*(1+r.Intn(1000)), id)
					case 1: // delete and re-insert in one transaction
						err = inTx(ctx, db, func(tx *sql.Tx) error {
							if _, err := tx.ExecContext(ctx, "DELETE FROM t WHERE id = ?", id); err != nil {
								return err
							}
							_, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (?, ?, ?, ?)", id, id+rows*(1001+r.Intn(1000)), r.Intn(17), fmt.Sprint("r", r.Int()))
							return err
						})
					case 2: // read at the snapshot, then update what was read
						err = inTx(ctx, db, func(tx *sql.Tx) error {
							var k int
							if err := tx.QueryRowContext(ctx, "SELECT k FROM t WHERE id = ?", id).Scan(&k); err != nil {
								return err
							}
							_, err := tx.ExecContext(ctx, "UPDATE t SET k = ?, c = ? WHERE id = ?", k+3, fmt.Sprint("s", r.Int()), id)
							return err
						})
					default: // several rows at once
						_, err = db.ExecContext(ctx, "UPDATE t SET c = ? WHERE id BETWEEN ? AND ?", fmt.Sprint("m", r.Int()), id, id+5)
					}
					if err == nil {
						mu.Lock()
						commits++
						mu.Unlock()
					}
				}
			}(int64(w) + int64(len(n.Name))*100)
		}
	}
	wg.Wait()
	faultHTTP(t, n2, "apply_delay=0")
	if commits < 100 {
		t.Fatalf("only %d commits in the run", commits)
	}
	awaitApplied(t, c)
	requireIdentical(t, c)
	var name string
	var window float64
	if err := adhoc(n2, "").QueryRow("SHOW GLOBAL STATUS LIKE 'wsrep_apply_window'").Scan(&name, &window); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d commits; node 2 (4 applier threads): wsrep_apply_window %.2f, wsrep_cert_deps_distance %d",
		commits, window, qStatus(t, n2, "wsrep_cert_deps_distance"))
	if window <= 1 {
		t.Errorf("node 2's wsrep_apply_window = %.2f: no write-set was built ahead of its turn", window)
	}
}

// inTx runs fn in a transaction and commits it.
func inTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
