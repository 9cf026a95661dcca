package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/certusdb/certus/bench"
)

func benchFlowCmd() *cobra.Command {
	var anchors string
	var o bench.FlowOpts
	var noGalera bool
	var appliers []int
	// the variable each system sets the applier threads with
	appliersVar := map[string]string{"Certus": "wsrep_applier_threads", "Galera": "wsrep_slave_threads"}
	cmd := &cobra.Command{
		Use:   "flow",
		Short: "A slowed node 3 (SIGSTOP bursts) during writes on node 1: flow control of Certus and Galera side by side",
		Long: `Start a 3-node Certus cluster and, when the anchor scripts and Galera are
installed, the anchors' 3-node Galera cluster, each with its default flow
control settings; prepare sysbench tables; run sysbench oltp_write_only on
node 1 with one-second reports while node 3 is stopped (SIGSTOP) for --stop
out of every --stop + --run between --from and --to. Prints node 1's
per-second throughput side by side and a summary: tps before, mean and
worst second while node 3 was slowed, longest run at 0 tps, node 1's
wsrep_flow_control_paused, node 3's wsrep_flow_control_sent and largest
receive queue. With --appliers 1,4 each system runs once per applier
thread count on nodes 2 and 3 (wsrep_applier_threads / wsrep_slave_threads;
--stop 0 for applier scaling without a slowed node). Holds /tmp/bench.lock
while running.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			self, unlock, err := benchStart()
			if err != nil {
				return err
			}
			defer unlock()
			var names []string
			var runs []bench.FlowResult
			measure := func(name string, targets []bench.Target, pid3 int) error {
				progress("%s: preparing %d x %d sysbench rows...", name, o.Load.Tables, o.Load.TableSize)
				prep := o.Load
				prep.Threads = o.Load.Tables
				_ = bench.Sysbench(targets[0], "oltp_write_only", "cleanup", prep)
				if r := bench.Sysbench(targets[0], "oltp_write_only", "prepare", prep); r.Failed {
					return fmt.Errorf("prepare on %s: %s", name, r.FailureReason)
				}
				for _, k := range appliers {
					label := name
					if len(appliers) > 1 {
						label = fmt.Sprintf("%s appliers=%d", name, k)
					}
					for _, t := range targets[1:] {
						if err := bench.ExecOn(t, fmt.Sprintf("SET GLOBAL %s = %d", appliersVar[name], k)); err != nil {
							return fmt.Errorf("%s: %w", label, err)
						}
					}
					progress("%s: running for %v", label, o.Length)
					r := bench.MeasureFlow(targets, pid3, o, func(s string) { progress("%s: %s", label, s) })
					if r.Failed != "" {
						progress("%s: %s", label, r.Failed)
					}
					names, runs = append(names, label), append(runs, r)
				}
				return nil
			}
			progress("starting a 3-node certus cluster...")
			c, err := bench.StartCertus(self, 3, "--sync-commit=false")
			if err != nil {
				return err
			}
			err = measure("Certus", c.Targets(), c.PID(3))
			c.Stop()
			if err != nil {
				return err
			}
			if !noGalera && bench.AnchorsAvailable(anchors) {
				progress("starting the anchors' 3-node Galera cluster...")
				g, err := bench.StartGalera(anchors, 3)
				if err != nil {
					return err
				}
				pid, err := bench.GaleraPID(g.Targets()[2])
				if err == nil {
					err = measure("Galera", g.Targets(), pid)
				}
				g.Stop()
				if err != nil {
					return err
				}
			}
			fmt.Printf("\nSlow node: sysbench oltp_write_only, %d threads on node 1 (%d x %d rows); node 3 stopped %v of every %v from %v to %v\n\n",
				o.Load.Threads, o.Load.Tables, o.Load.TableSize, o.Stop, o.Stop+o.Run, o.From, o.To)
			series := make([][]float64, len(runs))
			for i, r := range runs {
				series[i] = r.PerSecond
			}
			from, to := int(o.From/time.Second), int(o.To/time.Second)
			slowed := o.Stop > 0
			fmt.Print(bench.FormatSeries(names, series, func(_, s int) string {
				if slowed && s >= from && s < to {
					return " *"
				}
				return ""
			}))
			while := fmt.Sprintf("tps %d-%d s", from, to)
			if slowed {
				fmt.Println("(* node 3 slowed)")
				while = "tps while slowed"
			}
			header := []string{"system", "tps before", while, "worst second then", "longest 0-tps run", "n1 flow_control_paused", "n3 flow_control_sent", "n3 recv_queue_max"}
			var table [][]string
			for i, r := range runs {
				base, during, worst, zero := r.Summary(o)
				st := func(node int, k string) string {
					if node < len(r.Status) && r.Status[node] != nil {
						return r.Status[node][k]
					}
					return "?"
				}
				table = append(table, []string{names[i], fmt.Sprintf("%.0f", base),
					fmt.Sprintf("%.0f (%s)", during, bench.Ratio(during, base)), fmt.Sprintf("%.0f (%s)", worst, bench.Ratio(worst, base)),
					fmt.Sprintf("%d s", zero), st(0, "wsrep_flow_control_paused"), st(2, "wsrep_flow_control_sent"), st(2, "wsrep_local_recv_queue_max")})
			}
			fmt.Println()
			fmt.Print(bench.Table(header, table))
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Load.Tables, "tables", 4, "sysbench tables")
	f.IntVar(&o.Load.TableSize, "size", 50_000, "rows per sysbench table")
	f.IntVar(&o.Load.Threads, "threads", 16, "sysbench threads on node 1")
	f.DurationVar(&o.Length, "time", 40*time.Second, "length of the load")
	f.DurationVar(&o.From, "from", 10*time.Second, "when node 3 starts being slowed")
	f.DurationVar(&o.To, "to", 30*time.Second, "when node 3 runs freely again")
	f.DurationVar(&o.Stop, "stop", 150*time.Millisecond, "node 3 stopped this long per cycle")
	f.DurationVar(&o.Run, "run", 50*time.Millisecond, "node 3 running this long per cycle")
	f.StringVar(&anchors, "anchors", defaultAnchors, "directory of the Galera/MariaDB anchor scripts")
	f.BoolVar(&noGalera, "no-galera", false, "run Certus only")
	f.IntSliceVar(&appliers, "appliers", []int{1}, "applier threads on nodes 2 and 3, one run per value (e.g. 1,4)")
	return cmd
}
