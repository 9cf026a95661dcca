package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The cluster scenarios of ../shared/anchors/galera/bench.sh (b–e), run
// the same way against any 3-node system: sysbench for load, a Go client
// for the stale-read probe.

// Spread runs one sysbench per target at once (threads each) and returns
// their results and the sum of their throughput.
func Spread(targets []Target, workload string, o SysbenchOpts) (per []Result, sum Result) {
	per = make([]Result, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			per[i] = Sysbench(t, workload, "run", o)
		}()
	}
	wg.Wait()
	for _, r := range per {
		sum.TPS += r.TPS
		sum.QPS += r.QPS
		sum.Errors += r.Errors
		sum.Transactions += r.Transactions
		if r.P95Ms > sum.P95Ms {
			sum.P95Ms = r.P95Ms
		}
		if r.Failed {
			sum.Failed, sum.FailureReason = true, r.FailureReason
		}
	}
	return per, sum
}

// Open opens a connection pool to t's sbtest database.
func Open(t Target) (*sql.DB, error) { return openWithReadTimeout(t, 60*time.Second) }

// openWithReadTimeout is Open with the given wait for each answer.
func openWithReadTimeout(t Target, read time.Duration) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = t.User, t.Password, "tcp", fmt.Sprintf("%s:%d", t.Host, t.Port), "sbtest"
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 10*time.Second, read, 60*time.Second
	if t.TLS != nil {
		tc, err := t.TLS.ClientConfig()
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// SetGlobal runs SET GLOBAL name = value on t (new sysbench sessions
// inherit it).
func SetGlobal(t Target, name string, value any) error {
	db, err := Open(t)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(fmt.Sprintf("SET GLOBAL %s = %v", name, value))
	return err
}

// CausalCost is scenario d: oltp_write_only runs on writer throughout
// while oltp_read_only runs on reader once per entry of syncWaits, in
// that order, for o.Time each, its sessions using that wsrep_sync_wait.
// Under one unbroken write load, settings that alternate share the drift
// of a cluster taking writes (its tables and LSM grow, compactions come
// and go), which separate runs read as a cost of causal reads. reads[i] is
// the read run of syncWaits[i], writeTPS[i] the writer's throughput
// meanwhile. A run that sysbench ended early is reported in err, with the
// numbers it reached.
func CausalCost(writer, reader Target, syncWaits []int, o SysbenchOpts) (reads []Result, writeTPS []float64, err error) {
	defer SetGlobal(reader, "wsrep_sync_wait", 0) //nolint:errcheck // best effort reset
	// the writer outlasts the reads: each read run also connects and
	// prepares, and the writer's own start takes a moment
	wo := o
	wo.Time = time.Duration(len(syncWaits))*(o.Time+3*time.Second) + 5*time.Second
	started := time.Now()
	done := make(chan Result, 1)
	go func() { done <- Sysbench(writer, "oltp_write_only", "run", wo) }()
	type span struct{ from, to time.Duration }
	spans := make([]span, len(syncWaits))
	for i, sw := range syncWaits {
		if err := SetGlobal(reader, "wsrep_sync_wait", sw); err != nil {
			<-done // no load left behind for what runs next
			return reads, writeTPS, err
		}
		from := time.Since(started)
		r := Sysbench(reader, "oltp_read_only", "run", o)
		spans[i] = span{from, time.Since(started)}
		if r.Failed {
			err = errors.Join(err, fmt.Errorf("oltp_read_only with wsrep_sync_wait=%d stopped early: %s", sw, r.FailureReason))
		}
		reads = append(reads, r)
	}
	write := <-done
	if write.Failed {
		err = errors.Join(err, fmt.Errorf("oltp_write_only on the writer stopped early: %s", write.FailureReason))
	}
	for _, sp := range spans {
		// report k covers second k+1 of the writer's run
		var sum float64
		n := 0
		for k := int(sp.from.Seconds()) + 1; k < int(sp.to.Seconds()) && k < len(write.PerSecond); k++ {
			sum += write.PerSecond[k]
			n++
		}
		if n > 0 {
			sum /= float64(n)
		}
		writeTPS = append(writeTPS, sum)
	}
	return reads, writeTPS, err
}

// StaleResult is the outcome of the stale-read probe on one reader.
type StaleResult struct {
	Reads, Stale  int
	MaxLag        int64 // versions behind, at most
	AvgReadMs     float64
	AvgWriteMs    float64
	StalePercent  float64
	ProbeDuration time.Duration
}

// StaleReads is scenario e: on writer, UPDATE a counter (autocommit), then
// at once read it on each reader (sessions with wsrep_sync_wait =
// syncWait) and count reads older than the committed value; bounded by
// tries and maxDur. Background load (if any) is the caller's.
func StaleReads(writer Target, readers []Target, syncWait, tries int, maxDur time.Duration) ([]StaleResult, error) {
	ctx := context.Background()
	wdb, err := Open(writer)
	if err != nil {
		return nil, err
	}
	defer wdb.Close()
	w, err := wdb.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if _, err := w.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS stale_counter (id INT PRIMARY KEY, v BIGINT NOT NULL)"); err != nil {
		return nil, err
	}
	if _, err := w.ExecContext(ctx, "REPLACE INTO stale_counter VALUES (1, 0)"); err != nil {
		return nil, err
	}
	var rs []*sql.Conn
	for _, t := range readers {
		db, err := Open(t)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		c, err := db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, fmt.Sprintf("SET SESSION wsrep_sync_wait = %d", syncWait)); err != nil {
			return nil, err
		}
		// the table must exist on the reader before the probe starts
		deadline := time.Now().Add(30 * time.Second)
		for {
			var v int64
			if err := c.QueryRowContext(ctx, "SELECT v FROM stale_counter WHERE id = 1").Scan(&v); err == nil {
				break
			} else if time.Now().After(deadline) {
				return nil, fmt.Errorf("%s: stale_counter not replicated: %w", t.Name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		rs = append(rs, c)
	}
	out := make([]StaleResult, len(readers))
	var writeTotal time.Duration
	readTotals := make([]time.Duration, len(readers))
	start := time.Now()
	v := int64(0)
	n := 0
	for ; n < tries && time.Since(start) < maxDur; n++ {
		t0 := time.Now()
		if _, err := w.ExecContext(ctx, "UPDATE stale_counter SET v = v + 1 WHERE id = 1"); err != nil {
			return nil, fmt.Errorf("write: %w", err)
		}
		writeTotal += time.Since(t0)
		v++
		for i, c := range rs {
			t0 := time.Now()
			var got int64
			if err := c.QueryRowContext(ctx, "SELECT v FROM stale_counter WHERE id = 1").Scan(&got); err != nil {
				return nil, fmt.Errorf("read on %s: %w", readers[i].Name, err)
			}
			d := time.Since(t0)
			readTotals[i] += d
			r := &out[i]
			r.Reads++
			if got < v {
				r.Stale++
				if v-got > r.MaxLag {
					r.MaxLag = v - got
				}
			}
		}
	}
	for i := range out {
		r := &out[i]
		r.ProbeDuration = time.Since(start)
		if r.Reads > 0 {
			r.AvgReadMs = float64(readTotals[i].Microseconds()) / 1000 / float64(r.Reads)
			r.StalePercent = 100 * float64(r.Stale) / float64(r.Reads)
		}
		if n > 0 {
			r.AvgWriteMs = float64(writeTotal.Microseconds()) / 1000 / float64(n)
		}
	}
	return out, nil
}
