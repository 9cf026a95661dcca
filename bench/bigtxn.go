package bench

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// A big-transaction benchmark (scenario f of ../shared/anchors/galera/
// bench.sh): sysbench oltp_read_write on node 1 with one-second reports
// while node 2 runs one UPDATE over every row of a big table. Node 1's
// per-second throughput shows whether the cluster stalls while the big
// write-set is certified, replicated and applied.

// BigTxnResult is one system's run.
type BigTxnResult struct {
	// PerSecond is node 1's tps, one entry per second of the load.
	PerSecond []float64
	// UpdateStart, UpdateDone and Applied are times since the load
	// started: the UPDATE sent on node 2, its COMMIT answered there, and
	// its effect visible on node 1.
	UpdateStart, UpdateDone, Applied time.Duration
	// Failed says why the run failed, if it did.
	Failed string
}

// Baseline is node 1's mean tps over the seconds before the UPDATE
// started, skipping the first two (warmup).
func (r BigTxnResult) Baseline() float64 {
	end := min(int(r.UpdateStart/time.Second), len(r.PerSecond))
	var sum float64
	n := 0
	for i := 2; i < end; i++ {
		sum += r.PerSecond[i]
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// Window is node 1's tps from the second the UPDATE started until two
// seconds after node 1 applied it.
func (r BigTxnResult) Window() []float64 {
	from := min(int(r.UpdateStart/time.Second), len(r.PerSecond))
	to := min(int(r.Applied/time.Second)+3, len(r.PerSecond))
	if to < from {
		to = from
	}
	return r.PerSecond[from:to]
}

// Stall summarizes the window against the baseline: the longest run of
// seconds at 0 tps, the seconds below half the baseline, and the worst
// second.
func (r BigTxnResult) Stall() (zeroRun, belowHalf int, worst float64) {
	base := r.Baseline()
	run := 0
	worst = -1
	for _, v := range r.Window() {
		if v == 0 {
			run++
			zeroRun = max(zeroRun, run)
		} else {
			run = 0
		}
		if v < base/2 {
			belowHalf++
		}
		if worst < 0 || v < worst {
			worst = v
		}
	}
	return zeroRun, belowHalf, max(worst, 0)
}

// CreateBigTable creates table big (id, c, pad like the anchors') with
// rows rows in t's sbtest database, in statements of at most 65,536 rows.
func CreateBigTable(t Target, rows int, progress func(string)) error {
	db, err := Open(t)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"DROP TABLE IF EXISTS big",
		"CREATE TABLE big (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, c INT NOT NULL DEFAULT 0, pad CHAR(60) NOT NULL DEFAULT '')",
		"INSERT INTO big (c, pad) VALUES (0, 'x')",
	} {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	for n := 1; n < rows; {
		k := min(n, rows-n, 65536)
		if _, err := db.Exec(fmt.Sprintf("INSERT INTO big (c, pad) SELECT c, pad FROM big LIMIT %d", k)); err != nil {
			return fmt.Errorf("filling big: %w", err)
		}
		n += k
		if n%(1<<18) == 0 || n == rows {
			progress(fmt.Sprintf("big: %d of %d rows", n, rows))
		}
	}
	return nil
}

// BigTxnOpts configure MeasureBigTxn.
type BigTxnOpts struct {
	// Load is the sysbench oltp_read_write load on node 1.
	Load SysbenchOpts
	// Start is when the UPDATE starts after the load did.
	Start time.Duration
	// Tail is how long the load goes on after node 1 applied the UPDATE.
	Tail time.Duration
	// MaxWait bounds the wait for the UPDATE and its apply on node 1.
	MaxWait time.Duration
	// Session are statements run on node 2's session before BEGIN (for
	// example Galera's streaming replication settings).
	Session []string
}

// MeasureBigTxn runs the big-transaction scenario on targets (node 1 takes
// the load, node 2 the UPDATE).
func MeasureBigTxn(targets []Target, o BigTxnOpts, progress func(string)) BigTxnResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var res BigTxnResult
	loadDone := make(chan Result, 1)
	start := time.Now()
	go func() {
		loadDone <- sysbenchUntil(ctx, targets[0], "oltp_read_write", o.Load, o.Start+o.MaxWait+o.Tail+10*time.Second)
	}()
	finish := func() BigTxnResult {
		if res.Failed != "" {
			progress(res.Failed)
		}
		cancel()
		res.PerSecond = (<-loadDone).PerSecond
		return res
	}
	n1, err := Open(targets[0])
	if err != nil {
		res.Failed = err.Error()
		return finish()
	}
	defer n1.Close()
	var id, before int
	if err := n1.QueryRow("SELECT id, c FROM big ORDER BY id LIMIT 1").Scan(&id, &before); err != nil {
		res.Failed = "reading big on node 1: " + err.Error()
		return finish()
	}
	time.Sleep(o.Start - time.Since(start))
	progress("UPDATE big SET c = c + 1 on node 2")
	res.UpdateStart = time.Since(start)
	if err := runBigUpdate(targets[1], o.Session, o.MaxWait); err != nil {
		res.Failed = "the big UPDATE: " + err.Error()
		return finish()
	}
	res.UpdateDone = time.Since(start)
	progress(fmt.Sprintf("committed on node 2 after %v", (res.UpdateDone - res.UpdateStart).Round(100*time.Millisecond)))
	deadline := time.Now().Add(o.MaxWait)
	for {
		var c int
		err := n1.QueryRow("SELECT c FROM big WHERE id = ?", id).Scan(&c)
		if err == nil && c == before+1 {
			break
		}
		if time.Now().After(deadline) {
			res.Failed = fmt.Sprintf("node 1 did not apply the UPDATE within %v (last error %v)", o.MaxWait, err)
			return finish()
		}
		time.Sleep(100 * time.Millisecond)
	}
	res.Applied = time.Since(start)
	progress(fmt.Sprintf("applied on node 1 after %v", (res.Applied - res.UpdateStart).Round(100*time.Millisecond)))
	time.Sleep(o.Tail)
	return finish()
}

// runBigUpdate runs the big UPDATE as one transaction on t.
func runBigUpdate(t Target, session []string, timeout time.Duration) error {
	db, err := openWithReadTimeout(t, timeout) // a big COMMIT may take minutes

	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, q := range append(append(session, "BEGIN"), "UPDATE big SET c = c + 1", "COMMIT") {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// FormatTimeline prints per-second tps of several runs side by side, with
// markers where each run's UPDATE started (U), committed (C) and was
// applied on node 1 (A).
func FormatTimeline(names []string, runs []BigTxnResult) string {
	series := make([][]float64, len(runs))
	for i, r := range runs {
		series[i] = r.PerSecond
	}
	return FormatSeries(names, series, func(i, s int) string { return marks(runs[i], s) })
}

// FormatSeries prints per-second values of several runs side by side;
// mark (nil: none) tags run i's second s.
func FormatSeries(names []string, series [][]float64, mark func(i, s int) string) string {
	var b strings.Builder
	b.WriteString("second")
	for _, n := range names {
		fmt.Fprintf(&b, " | %-14s", n)
	}
	b.WriteString("\n")
	longest := 0
	for _, r := range series {
		longest = max(longest, len(r))
	}
	for s := 0; s < longest; s++ {
		fmt.Fprintf(&b, "%6d", s+1)
		for i, r := range series {
			cell := ""
			if s < len(r) {
				cell = fmt.Sprintf("%.0f", r[s])
				if mark != nil {
					cell += mark(i, s)
				}
			}
			fmt.Fprintf(&b, " | %-14s", cell)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// marks are the events of second s of r.
func marks(r BigTxnResult, s int) string {
	m := ""
	for _, e := range []struct {
		at  time.Duration
		tag string
	}{{r.UpdateStart, "U"}, {r.UpdateDone, "C"}, {r.Applied, "A"}} {
		if e.at > 0 && int(e.at/time.Second) == s {
			m += e.tag
		}
	}
	if m != "" {
		return " " + m
	}
	return ""
}
