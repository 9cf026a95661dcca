package systest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// TestFaultsUnderLoad runs bank transfers (each recorded in a ledger in the
// same transaction) and causal reads on all three nodes of a real cluster
// while a seeded schedule kills (-9), pauses (SIGSTOP) and partitions nodes.
// At the end, healed and quiet, it checks: the bank total never changed;
// every acknowledged transfer is in every node's ledger; balances agree
// with the ledger; every causal read saw the reader's own last write; and
// all nodes hold identical state.
//
// CERTUS_FAULT_DURATION sets the load phase (default 20s; `bash
// bench/faults.sh 10m` runs a long one), CERTUS_FAULT_SEED the schedule.
func TestFaultsUnderLoad(t *testing.T) {
	dur := durationEnv("CERTUS_FAULT_DURATION", 20*time.Second)
	seed := time.Now().UnixNano()
	if s := os.Getenv("CERTUS_FAULT_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("fault schedule seed %d (CERTUS_FAULT_SEED=%d to repeat it)", seed, seed)
	r := rand.New(rand.NewSource(seed))
	c := testcluster.StartCluster(t, 3, "--enable-fault-injection")
	const accounts, initial = 8, 1000
	db0 := c.Nodes[0].DB("")
	mustExec(t, db0, "CREATE DATABASE f")
	mustExec(t, db0, "CREATE TABLE f.accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL)")
	mustExec(t, db0, "CREATE TABLE f.ledger (id VARCHAR(40) PRIMARY KEY, src INT NOT NULL, dst INT NOT NULL, amount INT NOT NULL)")
	mustExec(t, db0, "CREATE TABLE f.marks (client INT PRIMARY KEY, v BIGINT NOT NULL)")
	for i := 0; i < accounts; i++ {
		mustExec(t, db0, "INSERT INTO f.accounts VALUES (?, ?)", i, initial)
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]bool{}
	var transfers, failed, reads, stale atomic.Int64
	errc := make(chan error, 100)
	for ni, n := range c.Nodes {
		for w := 0; w < 2; w++ {
			client := ni*10 + w
			wg.Add(1)
			go func(n *testcluster.Node) {
				defer wg.Done()
				cr := rand.New(rand.NewSource(seed + int64(client)))
				for i := 0; ctx.Err() == nil; i++ {
					db, err := sql.Open("mysql", n.DSN("f"))
					if err != nil {
						continue
					}
					db.SetMaxOpenConns(1)
					for j := 0; j < 50 && ctx.Err() == nil; j++ {
						id := fmt.Sprintf("c%d-%d-%d", client, i, j)
						from, to := cr.Intn(accounts), cr.Intn(accounts)
						if from == to {
							continue
						}
						err := ledgerTransfer(ctx, db, id, from, to, 1+cr.Intn(20))
						switch {
						case err == nil:
							transfers.Add(1)
							mu.Lock()
							acked[id] = true
							mu.Unlock()
						case ctx.Err() != nil:
						default:
							failed.Add(1)
							time.Sleep(20 * time.Millisecond)
						}
					}
					db.Close()
				}
			}(n)
		}
		// a session that writes its own mark and reads it back with
		// wsrep_sync_wait=1 on the next node
		wg.Add(1)
		go func(ni int) {
			defer wg.Done()
			wdb := c.Nodes[ni].DB("f")
			rdb := c.Nodes[(ni+1)%3].DB("f")
			for v := int64(1); ctx.Err() == nil; v++ {
				if _, err := wdb.ExecContext(ctx, "REPLACE INTO marks VALUES (?, ?)", ni, v); err != nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				conn, err := rdb.Conn(ctx)
				if err != nil {
					continue
				}
				var got int64
				_, err = conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait=1")
				if err == nil {
					err = conn.QueryRowContext(ctx, "SELECT v FROM marks WHERE client = ?", ni).Scan(&got)
				}
				conn.Close()
				if err != nil {
					continue // the reader is down or cut off: no answer is fine
				}
				reads.Add(1)
				if got < v {
					stale.Add(1)
					select {
					case errc <- fmt.Errorf("causal read on node %d saw mark %d after %d committed", (ni+1)%3+1, got, v):
					default:
					}
				}
			}
		}(ni)
	}

	// the fault schedule
	deadline := time.Now().Add(dur)
	faults := 0
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(1500+r.Intn(2500)) * time.Millisecond)
		victim := c.Nodes[r.Intn(3)]
		switch r.Intn(3) {
		case 0:
			t.Logf("kill -9 %s", victim.Name)
			victim.Kill()
			time.Sleep(time.Duration(500+r.Intn(2000)) * time.Millisecond)
			victim.Start()
		case 1:
			t.Logf("SIGSTOP %s", victim.Name)
			victim.Pause()
			time.Sleep(time.Duration(500+r.Intn(3000)) * time.Millisecond)
			victim.Resume()
		case 2:
			var others []string
			for _, o := range c.Nodes {
				if o != victim {
					others = append(others, o.Name)
				}
			}
			t.Logf("partition %s from %v", victim.Name, others)
			faultHTTP(t, victim, "block="+others[0]+","+others[1])
			for _, o := range c.Nodes {
				if o != victim {
					faultHTTP(t, o, "block="+victim.Name)
				}
			}
			time.Sleep(time.Duration(1000+r.Intn(3000)) * time.Millisecond)
			for _, o := range c.Nodes {
				faultHTTP(t, o, "heal=1")
			}
		}
		faults++
		for _, n := range c.Nodes {
			if err := n.WaitSynced(60 * time.Second); err != nil {
				t.Fatalf("%s after a fault: %v\n%s", n.Name, err, n.LogTail(30))
			}
		}
	}
	stop()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	t.Logf("%d faults; %d transfers acknowledged, %d failed; %d causal reads, %d stale", faults, transfers.Load(), failed.Load(), reads.Load(), stale.Load())
	if transfers.Load() == 0 {
		t.Fatal("no transfer was acknowledged")
	}
	for _, n := range c.Nodes {
		checkLedger(t, n, accounts, initial, acked)
	}
	requireIdentical(t, c)
}

func faultHTTP(t *testing.T, n *testcluster.Node, q string) {
	t.Helper()
	resp, err := http.Post("http://"+n.HTTPAddr+"/debug/fault?"+q, "text/plain", nil)
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	resp.Body.Close()
}

func ledgerTransfer(ctx context.Context, db *sql.DB, id string, from, to, amount int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var bal int64
	if err := tx.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = ? FOR UPDATE", from).Scan(&bal); err != nil {
		return err
	}
	if bal < int64(amount) {
		return fmt.Errorf("insufficient")
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"UPDATE accounts SET balance = balance - ? WHERE id = ?", []any{amount, from}},
		{"UPDATE accounts SET balance = balance + ? WHERE id = ?", []any{amount, to}},
		{"INSERT INTO ledger VALUES (?, ?, ?, ?)", []any{id, from, to, amount}},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// checkLedger checks one node: total unchanged, every acknowledged transfer
// present, and balances equal to the initial ones plus the ledger.
func checkLedger(t *testing.T, n *testcluster.Node, accounts int, initial int64, acked map[string]bool) {
	t.Helper()
	db := n.DB("f")
	mustExec(t, db, "SET SESSION wsrep_sync_wait=1")
	bal := map[int]int64{}
	rows, err := db.Query("SELECT id, balance FROM accounts")
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	total := int64(0)
	for rows.Next() {
		var id int
		var b int64
		if err := rows.Scan(&id, &b); err != nil {
			t.Fatal(err)
		}
		bal[id] = b
		total += b
	}
	rows.Close()
	if total != int64(accounts)*initial {
		t.Fatalf("%s: bank total %d, want %d", n.Name, total, int64(accounts)*initial)
	}
	want := map[int]int64{}
	for i := 0; i < accounts; i++ {
		want[i] = initial
	}
	seen := map[string]bool{}
	rows, err = db.Query("SELECT id, src, dst, amount FROM ledger")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var src, dst, amount int
		if err := rows.Scan(&id, &src, &dst, &amount); err != nil {
			t.Fatal(err)
		}
		seen[id] = true
		want[src] -= int64(amount)
		want[dst] += int64(amount)
	}
	rows.Close()
	for id := range acked {
		if !seen[id] {
			t.Fatalf("%s: acknowledged transfer %s is missing from the ledger", n.Name, id)
		}
	}
	for i := 0; i < accounts; i++ {
		if bal[i] != want[i] {
			t.Fatalf("%s: account %d holds %d, the ledger says %d", n.Name, i, bal[i], want[i])
		}
	}
}
