package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A slow-node benchmark: sysbench oltp_write_only on node 1 with
// one-second reports while node 3 is stopped (SIGSTOP) for Stop out of
// every Stop+Run between From and To. Node 1's per-second throughput shows
// what flow control does to the writers: Galera pauses them while node 3
// is past gcs.fc_limit; Certus slows them to node 3's rate.

// FlowOpts configure MeasureFlow.
type FlowOpts struct {
	// Load is the sysbench oltp_write_only load on node 1.
	Load SysbenchOpts
	// Length is how long the load runs.
	Length time.Duration
	// From and To bound the time node 3 is slowed, from the load's start.
	From, To time.Duration
	// Stop and Run are one cycle of the slowing: stopped, then running.
	Stop, Run time.Duration
}

// FlowResult is one system's run.
type FlowResult struct {
	// PerSecond is node 1's tps, one entry per second of the load.
	PerSecond []float64
	// Status are wsrep status variables after the run, per node.
	Status []map[string]string
	// Failed says why the run failed, if it did.
	Failed string
}

// MeasureFlow runs the slow-node scenario on targets; pid3 is node 3's
// process.
func MeasureFlow(targets []Target, pid3 int, o FlowOpts, progress func(string)) FlowResult {
	var res FlowResult
	for _, t := range targets {
		if err := ExecOn(t, "FLUSH STATUS"); err != nil {
			res.Failed = fmt.Sprintf("FLUSH STATUS on %s: %v", t.Name, err)
			return res
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slowed := make(chan struct{})
	if o.Stop <= 0 {
		close(slowed) // nothing slows node 3
	} else {
		go slow(ctx, slowed, pid3, o, progress)
	}
	r := sysbenchUntil(ctx, targets[0], "oltp_write_only", o.Load, o.Length)
	cancel()
	<-slowed
	_ = syscall.Kill(pid3, syscall.SIGCONT)
	res.PerSecond = r.PerSecond
	for _, t := range targets {
		st, err := wsrepStatus(t)
		if err != nil {
			res.Failed = fmt.Sprintf("status of %s: %v", t.Name, err)
		}
		res.Status = append(res.Status, st)
	}
	return res
}

// slow stops and continues node 3 (pid3) in cycles between o.From and
// o.To, and closes done when it ends.
func slow(ctx context.Context, done chan struct{}, pid3 int, o FlowOpts, progress func(string)) {
	defer close(done)
	select {
	case <-time.After(o.From):
	case <-ctx.Done():
		return
	}
	progress(fmt.Sprintf("slowing node 3: stopped %v of every %v", o.Stop, o.Stop+o.Run))
	end := time.Now().Add(o.To - o.From)
	for time.Now().Before(end) && ctx.Err() == nil {
		_ = syscall.Kill(pid3, syscall.SIGSTOP)
		time.Sleep(o.Stop)
		_ = syscall.Kill(pid3, syscall.SIGCONT)
		time.Sleep(o.Run)
	}
	progress("node 3 runs freely again")
}

// Summary is node 1's mean tps before the slowing (skipping two warmup
// seconds), its mean and worst second while node 3 was slowed, and the
// longest run of seconds at 0 tps then.
func (r FlowResult) Summary(o FlowOpts) (base, during, worst float64, zeroRun int) {
	mean := func(from, to int) float64 {
		to = min(to, len(r.PerSecond))
		if to <= from {
			return 0
		}
		s := 0.0
		for _, v := range r.PerSecond[from:to] {
			s += v
		}
		return s / float64(to-from)
	}
	from, to := int(o.From/time.Second), int(o.To/time.Second)
	base, during = mean(2, from), mean(from, to)
	worst = -1
	run := 0
	for i := from; i < min(to, len(r.PerSecond)); i++ {
		v := r.PerSecond[i]
		if worst < 0 || v < worst {
			worst = v
		}
		if v == 0 {
			run++
			zeroRun = max(zeroRun, run)
		} else {
			run = 0
		}
	}
	return base, during, max(worst, 0), zeroRun
}

// GaleraPID reads the process id of the Galera node behind t.
func GaleraPID(t Target) (int, error) {
	db, err := Open(t)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var file string
	if err := db.QueryRow("SELECT @@pid_file").Scan(&file); err != nil {
		return 0, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// ExecOn runs one statement on t.
func ExecOn(t Target, q string) error {
	db, err := Open(t)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(q)
	return err
}

func wsrepStatus(t Target) (map[string]string, error) {
	db, err := Open(t)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query("SHOW GLOBAL STATUS LIKE 'wsrep_%'")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k string
		var v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[strings.ToLower(k)] = v.String
	}
	return out, rows.Err()
}
