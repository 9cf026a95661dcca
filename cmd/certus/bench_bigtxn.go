package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/certusdb/certus/bench"
)

// streamingModes are the sessions of the big UPDATE: plain, and streaming
// as the anchors run it on Galera. Certus streams a plain one too, past
// --stream-threshold.
var streamingModes = map[string][]string{
	"plain":     nil,
	"streaming": {"SET SESSION wsrep_trx_fragment_unit = 'rows'", "SET SESSION wsrep_trx_fragment_size = 1000"},
}

func benchBigTxnCmd() *cobra.Command {
	var anchors string
	var tables, size, threads, rows int
	var start, tail, maxWait time.Duration
	var noGalera, keep bool
	cmd := &cobra.Command{
		Use:   "bigtxn",
		Short: "A 1M-row UPDATE on node 2 during load on node 1: Certus and Galera side by side (scenario f)",
		Long: `Scenario f of the anchors: start a 3-node Certus cluster and, when the
anchor scripts and Galera are installed, the anchors' 3-node Galera cluster;
prepare sysbench tables and a table big of --rows rows on each. Then run
sysbench oltp_read_write on node 1 with one-second reports and, after
--start, one UPDATE big SET c=c+1 on node 2. Each system runs it twice: plain
and with streaming replication (wsrep_trx_fragment_unit=rows, size 1000);
Certus streams the plain one too, as it passes --stream-threshold.
Prints node 1's per-second throughput of every run side by side (U: UPDATE
sent, C: committed on node 2, A: applied on node 1) and a summary: baseline
tps, longest run of seconds at 0 tps, seconds below half the baseline, and
the worst second. Holds /tmp/bench.lock while running.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			self, unlock, err := benchStart()
			if err != nil {
				return err
			}
			defer unlock()
			o := bench.BigTxnOpts{
				Load:  bench.SysbenchOpts{Tables: tables, TableSize: size, Threads: threads},
				Start: start, Tail: tail, MaxWait: maxWait,
			}
			var names []string
			var runs []bench.BigTxnResult
			measure := func(name string, targets []bench.Target, variants map[string][]string, order []string) error {
				progress("%s: preparing %d x %d sysbench rows and big (%d rows)...", name, tables, size, rows)
				prep := o.Load
				prep.Threads = tables
				_ = bench.Sysbench(targets[0], "oltp_read_write", "cleanup", prep)
				if r := bench.Sysbench(targets[0], "oltp_read_write", "prepare", prep); r.Failed {
					return fmt.Errorf("prepare on %s: %s", name, r.FailureReason)
				}
				if err := bench.CreateBigTable(targets[0], rows, func(s string) { progress("%s: %s", name, s) }); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				for _, v := range order {
					label := name + " " + v
					progress("%s: running", label)
					run := o
					run.Session = variants[v]
					r := bench.MeasureBigTxn(targets, run, func(s string) { progress("%s: %s", label, s) })
					names, runs = append(names, label), append(runs, r)
				}
				return nil
			}
			progress("starting a 3-node certus cluster...")
			c, err := bench.StartCertus(self, 3, "--sync-commit=false")
			if err != nil {
				return err
			}
			c.Keep = keep
			err = measure("Certus", c.Targets(), streamingModes, []string{"plain", "streaming"})
			c.Stop()
			if keep {
				progress("Certus data dirs and logs kept in %s", c.Dir())
			}
			if err != nil {
				return err
			}
			if !noGalera && bench.AnchorsAvailable(anchors) {
				progress("starting the anchors' 3-node Galera cluster...")
				g, err := bench.StartGalera(anchors, 3)
				if err != nil {
					return err
				}
				err = measure("Galera", g.Targets(), streamingModes, []string{"plain", "streaming"})
				g.Stop()
				if err != nil {
					return err
				}
			}
			fmt.Printf("\nBig transaction: sysbench oltp_read_write, %d threads on node 1 (%d x %d rows); UPDATE of %d rows on node 2 after %v\n\n",
				threads, tables, size, rows, start)
			fmt.Print(bench.FormatTimeline(names, runs))
			header := []string{"run", "UPDATE committed after", "applied on node 1 after", "baseline tps", "longest 0-tps run", "seconds below half", "worst second", "worst / baseline"}
			var table [][]string
			for i, r := range runs {
				if r.Failed != "" {
					table = append(table, []string{names[i], "failed: " + r.Failed, "", "", "", "", "", ""})
					continue
				}
				zero, below, worst := r.Stall()
				table = append(table, []string{names[i],
					(r.UpdateDone - r.UpdateStart).Round(100 * time.Millisecond).String(),
					(r.Applied - r.UpdateStart).Round(100 * time.Millisecond).String(),
					fmt.Sprintf("%.0f", r.Baseline()), fmt.Sprintf("%d s", zero), fmt.Sprintf("%d s", below),
					fmt.Sprintf("%.0f", worst), bench.Ratio(worst, r.Baseline())})
			}
			fmt.Println()
			fmt.Print(bench.Table(header, table))
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&tables, "tables", 4, "sysbench tables")
	f.IntVar(&size, "size", 50_000, "rows per sysbench table")
	f.IntVar(&threads, "threads", 16, "sysbench threads on node 1")
	f.IntVar(&rows, "rows", 1<<20, "rows of table big")
	f.DurationVar(&start, "start", 10*time.Second, "load before the UPDATE starts")
	f.DurationVar(&tail, "tail", 10*time.Second, "load after node 1 applied the UPDATE")
	f.DurationVar(&maxWait, "max-wait", 10*time.Minute, "give up on the UPDATE or its apply after this")
	f.StringVar(&anchors, "anchors", defaultAnchors, "directory of the Galera/MariaDB anchor scripts")
	f.BoolVar(&noGalera, "no-galera", false, "run Certus only")
	f.BoolVar(&keep, "keep", false, "keep Certus's data dirs and logs")
	return cmd
}
