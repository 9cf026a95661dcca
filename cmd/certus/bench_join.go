package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/certusdb/certus/bench"
)

func benchJoinCmd() *cobra.Command {
	var anchors, workload, gcache, sstRate string
	var tables, size, threads, sstNice int
	var warmup, maxJoin time.Duration
	var noGalera, keep bool
	cmd := &cobra.Command{
		Use:   "join",
		Short: "State transfer: a 4th node joins a loaded 3-node cluster, Certus and Galera side by side",
		Long: `Start a 3-node Certus cluster and, when the anchor scripts and Galera are
installed, the anchors' 3-node Galera cluster (rsync SST); load the same
sysbench data into both (default 4 x 1,250,000 rows, about 1 GB); run
sysbench on every member and, after a warmup, start a fourth node. Report
the time until the joiner is Synced and each member's throughput before and
during the transfer. Certus members keep a small log (--gcache-size) so the
joiner gets a full state transfer, as Galera's new node does. Holds
/tmp/bench.lock while running.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			self, unlock, err := benchStart()
			if err != nil {
				return err
			}
			defer unlock()
			opts := bench.SysbenchOpts{Tables: tables, TableSize: size, Threads: threads}
			flags := []string{"--sync-commit=false", "--gcache-size", gcache}
			if sstRate != "" {
				flags = append(flags, "--sst-max-rate", sstRate)
			}
			if sstNice >= 0 {
				flags = append(flags, "--sst-nice", strconv.Itoa(sstNice))
			}
			type run struct {
				name string
				res  bench.JoinResult
			}
			var runs []run
			progress("starting a 3-node certus cluster...")
			c, err := bench.StartCertus(self, 3, flags...)
			if err != nil {
				return err
			}
			c.Keep = keep
			res, err := joinRun("Certus", c, c.Joiner(self, flags...), c.DataDir(1), workload, opts, warmup, maxJoin)
			c.Stop()
			if keep {
				progress("Certus data dirs and logs kept in %s", c.Dir())
			}
			if err != nil {
				return err
			}
			runs = append(runs, run{"Certus", res})
			if !noGalera && bench.AnchorsAvailable(anchors) {
				progress("starting the anchors' 3-node Galera cluster...")
				g, err := bench.StartGalera(anchors, 3)
				if err != nil {
					return err
				}
				base := os.Getenv("GALERA_ANCHOR_BASE")
				if base == "" {
					base = "/tmp/galera-anchor"
				}
				res, err := joinRun("Galera", g, g.Joiner(), filepath.Join(base, "node1", "data"), workload, opts, warmup, maxJoin)
				g.Stop()
				if err != nil {
					return err
				}
				runs = append(runs, run{"Galera", res})
			}
			fmt.Printf("\nA 4th node joins a 3-node cluster under %s load (%d threads on each member): %d tables x %d rows\n\n", workload, threads, tables, size)
			header := []string{"system", "data on a member", "joiner Synced after", "member", "tps before", "tps during", "during / before", "worst second"}
			var rows [][]string
			for _, r := range runs {
				if r.res.Failed != "" {
					rows = append(rows, []string{r.name, "", "failed: " + r.res.Failed, "", "", "", "", ""})
					continue
				}
				for i := range r.res.Before {
					row := []string{"", "", "", fmt.Sprintf("n%d", i+1), fmt.Sprintf("%.0f", r.res.Before[i]), fmt.Sprintf("%.0f", r.res.During[i]),
						bench.Ratio(r.res.During[i], r.res.Before[i]), fmt.Sprintf("%.0f", r.res.Worst[i])}
					if i == 0 {
						row[0], row[1], row[2] = r.name, fmt.Sprintf("%.0f MB", float64(r.res.DataBytes)/1e6), r.res.Synced.Round(100*time.Millisecond).String()
					}
					rows = append(rows, row)
				}
			}
			fmt.Print(bench.Table(header, rows))
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&tables, "tables", 4, "sysbench tables")
	f.IntVar(&size, "size", 1_250_000, "rows per table (the default makes about 1 GB)")
	f.IntVar(&threads, "threads", 4, "sysbench threads on each member")
	f.StringVar(&workload, "workload", "oltp_read_write", "sysbench workload on the members")
	f.DurationVar(&warmup, "warmup", 20*time.Second, "load before the joiner starts")
	f.DurationVar(&maxJoin, "max-join", 15*time.Minute, "give up when the joiner is not Synced after this")
	f.StringVar(&gcache, "gcache-size", "64MB", "Certus members' --gcache-size")
	f.StringVar(&sstRate, "sst-max-rate", "", "Certus donors' --sst-max-rate (default unlimited)")
	f.IntVar(&sstNice, "sst-nice", -1, "Certus donors' --sst-nice (default: the node's default)")
	f.StringVar(&anchors, "anchors", defaultAnchors, "directory of the Galera/MariaDB anchor scripts")
	f.BoolVar(&noGalera, "no-galera", false, "run Certus only")
	f.BoolVar(&keep, "keep", false, "keep Certus's data dirs and logs")
	return cmd
}

// joinRun loads the data into sys and measures a join.
func joinRun(name string, sys bench.System, j bench.Joiner, dataDir, workload string, o bench.SysbenchOpts, warmup, maxJoin time.Duration) (bench.JoinResult, error) {
	t := sys.Targets()[0]
	progress("%s: preparing %d x %d rows (this takes a while)...", name, o.Tables, o.TableSize)
	prep := o
	prep.Threads = o.Tables
	_ = bench.Sysbench(t, "oltp_read_write", "cleanup", prep) // tables an earlier run left
	start := time.Now()
	if r := bench.Sysbench(t, "oltp_read_write", "prepare", prep); r.Failed {
		return bench.JoinResult{}, fmt.Errorf("prepare on %s: %s", name, r.FailureReason)
	}
	progress("%s: prepared in %v", name, time.Since(start).Round(time.Second))
	res := bench.MeasureJoin(sys.Targets(), workload, o, warmup, maxJoin, j, func(s string) { progress("%s: %s", name, s) })
	res.DataBytes = bench.DirSize(dataDir)
	return res, nil
}
