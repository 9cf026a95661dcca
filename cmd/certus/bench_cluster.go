package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/certusdb/certus/bench"
)

// cluster3 is a 3-node system in a cluster benchmark.
type cluster3 struct {
	name    string
	targets []bench.Target
}

func benchClusterCmd() *cobra.Command {
	var scenarios, anchors string
	var tables, size, threads, tries int
	var dur, staleTime time.Duration
	var noGalera, tlsCost bool
	var nodeFlags []string
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "3-node Certus and 3-node Galera side by side: scenarios b–e of the anchors",
		Long: `Start a 3-node Certus cluster (from this binary, --sync-commit=false like
Galera's innodb_flush_log_at_trx_commit=2) and, when the anchor scripts and
MariaDB/Galera are installed, the 3-node Galera cluster of
../shared/anchors/galera (cluster.sh); prepare the same sysbench tables on
both and run, alternating which system goes first:

  b  all load on node 1: oltp_read_write, oltp_point_select, oltp_write_only
  c  load spread: one sysbench per node (threads/3 each): oltp_read_write, oltp_write_only
  d  causal-read cost: oltp_read_only on node 2 with wsrep_sync_wait 0 and 3
     while oltp_write_only runs on node 1 (threads/2 each); the settings
     alternate 0, 3, 3, 0, 0, 3, 3, 0 (half the run time each) under one
     write load, and the means are reported
  e  stale reads: commit on node 1, read at once on nodes 2 and 3, with
     wsrep_sync_wait 0 and 1, under oltp_write_only load on node 1

Certus's raft leader is put on node 1 before each scenario (certus lead).
Prints one table per scenario with both systems and the ratio. With --tls
it then starts both clusters again with TLS between their members and to
their clients, runs the same scenarios, and prints what TLS cost each
system in b and c. Holds /tmp/bench.lock while running.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			self, unlock, err := benchStart()
			if err != nil {
				return err
			}
			defer unlock()
			r := clusterRun{self: self, anchors: anchors, noGalera: noGalera, nodeFlags: nodeFlags, tries: tries, staleTime: staleTime,
				opts: bench.SysbenchOpts{Tables: tables, TableSize: size, Threads: threads, Time: dur}}
			for _, sc := range strings.Split(scenarios, ",") {
				sc = strings.TrimSpace(sc)
				if !slices.Contains([]string{"b", "c", "d", "e"}, sc) {
					return fmt.Errorf("unknown scenario %q (b, c, d, e)", sc)
				}
				r.scenarios = append(r.scenarios, sc)
			}
			plain, err := r.phase(nil)
			if err != nil || !tlsCost {
				return err
			}
			files, err := bench.MakeTLS("")
			if err != nil {
				return err
			}
			defer os.RemoveAll(files.Dir)
			withTLS, err := r.phase(&files)
			if err != nil {
				return err
			}
			printClusterTLSCost(plain, withTLS)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&scenarios, "scenarios", "b,c,d,e", "comma-separated scenarios")
	f.IntVar(&threads, "threads", 16, "sysbench threads (split over nodes in c and d)")
	f.IntVar(&tables, "tables", 4, "tables")
	f.IntVar(&size, "size", 50000, "rows per table")
	f.DurationVar(&dur, "time", 30*time.Second, "duration of each sysbench run")
	f.IntVar(&tries, "stale-tries", 3000, "write-then-read tries of the stale-read probe (e)")
	f.DurationVar(&staleTime, "stale-time", 20*time.Second, "time limit of each stale-read probe (e)")
	f.StringVar(&anchors, "anchors", defaultAnchors, "directory of the Galera/MariaDB anchor scripts")
	f.BoolVar(&noGalera, "no-galera", false, "run Certus only")
	f.BoolVar(&tlsCost, "tls", false, "run everything again with TLS (Certus: between members and to clients; Galera: socket.ssl_* and ssl_* of its nodes; sysbench --mysql-ssl=on) and report what TLS costs each")
	f.StringArrayVar(&nodeFlags, "node-flag", nil, "a flag for every Certus node, e.g. --node-flag=--safe-reads (repeatable), to compare settings")
	return cmd
}

// clusterRun is what one cluster benchmark runs.
type clusterRun struct {
	self, anchors string
	noGalera      bool
	nodeFlags     []string
	scenarios     []string
	opts          bench.SysbenchOpts
	tries         int
	staleTime     time.Duration
}

// phaseResults are the results of scenarios b and c of one phase, per
// "scenario workload" and system, in the order they ran.
type phaseResults struct {
	systems []string
	keys    []string
	res     map[string][]bench.Result
}

func (p *phaseResults) add(key string, res []bench.Result) {
	p.keys = append(p.keys, key)
	p.res[key] = res
}

// phase starts the clusters (with TLS between members and to clients when
// files is not nil), runs the scenarios on them, prints their tables and
// stops the clusters.
func (r clusterRun) phase(files *bench.TLSFiles) (*phaseResults, error) {
	flags, scripts, over := append([]string{"--sync-commit=false"}, r.nodeFlags...), r.anchors, ""
	if files != nil {
		flags = append(append(flags, files.CertusFlags()...), files.PeerFlags()...)
		over = " over TLS"
	}
	progress("starting a 3-node certus cluster%s...", over)
	c, err := bench.StartCertus(r.self, 3, flags...)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	systems := []cluster3{{"Certus", c.Targets()}}
	if !r.noGalera && bench.AnchorsAvailable(r.anchors) {
		if files != nil {
			if scripts, err = files.AnchorScripts(r.anchors); err != nil {
				return nil, err
			}
		}
		progress("starting a 3-node Galera cluster%s (anchors cluster.sh)...", over)
		g, err := bench.StartGalera(scripts, 3)
		if err != nil {
			return nil, err
		}
		defer g.Stop()
		systems = append(systems, cluster3{"Galera", g.Targets()})
	} else if !r.noGalera {
		progress("Galera or the anchor scripts (%s) are not installed: Certus only", r.anchors)
	}
	out := &phaseResults{res: map[string][]bench.Result{}}
	for i, s := range systems {
		if files != nil {
			systems[i].targets = nil
			for _, t := range s.targets {
				systems[i].targets = append(systems[i].targets, t.WithTLS(*files))
			}
		}
		out.systems = append(out.systems, s.name)
		progress("preparing %d x %d rows on %s node 1...", r.opts.Tables, r.opts.TableSize, s.name)
		_ = bench.Sysbench(systems[i].targets[0], "oltp_read_write", "cleanup", r.opts)
		if res := bench.Sysbench(systems[i].targets[0], "oltp_read_write", "prepare", r.opts); res.Failed {
			return nil, fmt.Errorf("prepare on %s: %s", s.name, res.FailureReason)
		}
	}
	fmt.Printf("\n3-node clusters%s on one machine, sysbench 1.0.20, %d tables x %d rows, %s per run\n", over, r.opts.Tables, r.opts.TableSize, r.opts.Time)
	for _, sc := range r.scenarios {
		// node 1 takes the writes of b, d and e: followers forward
		// theirs to the leader, so it leads there (it does after the
		// bootstrap; an election may have moved it)
		if msg, err := c.Lead(1); err != nil {
			progress("Certus: could not make node 1 the leader: %v", err)
		} else {
			progress("Certus: %s", msg)
		}
		switch sc {
		case "b":
			scenarioB(systems, r.opts, out)
		case "c":
			scenarioC(systems, r.opts, out)
		case "d":
			scenarioD(systems, r.opts)
		case "e":
			scenarioE(systems, r.opts, r.tries, r.staleTime)
		}
	}
	return out, nil
}

// printClusterTLSCost prints, for each run of b and c, the throughput
// each system lost to TLS and its p95 latency without and with it.
func printClusterTLSCost(plain, withTLS *phaseResults) {
	h := []string{"scenario", "workload"}
	for _, s := range plain.systems {
		h = append(h, s+" TLS cost (qps)", s+" p95 ms plain / TLS")
	}
	var rows [][]string
	for _, key := range plain.keys {
		sc, w, _ := strings.Cut(key, " ")
		row := []string{sc, w}
		for i := range plain.systems {
			if i < len(withTLS.res[key]) {
				row = append(row, tlsCostOf(plain.res[key][i], withTLS.res[key][i])...)
			}
		}
		rows = append(rows, row)
	}
	fmt.Printf("\nThe cost of TLS (each cluster without and then with TLS between its members and to its clients, in the same run)\n\n%s", bench.Table(h, rows))
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// alternate runs fn for each system, the first system going first on
// even rounds and last on odd ones, each once the machine is quiet (see
// bench.WaitQuiet).
func alternate(systems []cluster3, round int, fn func(i int, s cluster3)) {
	for k := range systems {
		i := (k + round) % len(systems)
		if w := bench.WaitQuiet(30 * time.Second); w > 2*time.Second {
			progress("waited %.0fs for the machine to quiet down", w.Seconds())
		}
		fn(i, systems[i])
	}
}

// ratioHeader adds the per-system column titles and the ratio column.
func ratioHeader(systems []cluster3, first []string, cols ...string) []string {
	h := append([]string(nil), first...)
	for _, s := range systems {
		for _, c := range cols {
			h = append(h, s.name+" "+c)
		}
	}
	if len(systems) == 2 {
		h = append(h, "Certus / Galera")
	}
	return h
}

func scenarioB(systems []cluster3, opts bench.SysbenchOpts, out *phaseResults) {
	var rows [][]string
	for round, w := range []string{"oltp_read_write", "oltp_point_select", "oltp_write_only"} {
		res := make([]bench.Result, len(systems))
		alternate(systems, round, func(i int, s cluster3) {
			progress("b: %s, %d threads on %s node 1", w, opts.Threads, s.name)
			res[i] = bench.Sysbench(s.targets[0], w, "run", opts)
		})
		out.add("b "+w, res)
		row := []string{w, fmt.Sprint(opts.Threads)}
		for _, r := range res {
			row = append(row, fmt.Sprintf("%.0f", r.TPS), fmt.Sprintf("%.0f", r.QPS), fmt.Sprintf("%.2f", r.P95Ms), fmt.Sprint(r.Errors))
		}
		rows = append(rows, appendRatio(row, res, func(r bench.Result) float64 { return r.QPS }))
	}
	fmt.Printf("\nb. all load on node 1\n\n%s", bench.Table(ratioHeader(systems, []string{"workload", "threads"}, "tps", "qps", "p95 ms", "errors"), rows))
}

func scenarioC(systems []cluster3, opts bench.SysbenchOpts, out *phaseResults) {
	per := opts
	per.Threads = max(1, opts.Threads/3)
	var rows [][]string
	for round, w := range []string{"oltp_read_write", "oltp_write_only"} {
		res := make([]bench.Result, len(systems))
		alternate(systems, round, func(i int, s cluster3) {
			progress("c: %s, %d threads on each %s node", w, per.Threads, s.name)
			_, res[i] = bench.Spread(s.targets, w, per)
		})
		out.add("c "+w, res)
		row := []string{w, fmt.Sprintf("3x%d", per.Threads)}
		for _, r := range res {
			row = append(row, fmt.Sprintf("%.0f", r.TPS), fmt.Sprintf("%.0f", r.QPS), fmt.Sprintf("%.1f", float64(r.Errors)/opts.Time.Seconds()))
		}
		rows = append(rows, appendRatio(row, res, func(r bench.Result) float64 { return r.TPS }))
	}
	fmt.Printf("\nc. load spread over the 3 nodes (errors: certification conflicts, retried by sysbench)\n\n%s",
		bench.Table(ratioHeader(systems, []string{"workload", "threads"}, "tps", "qps", "errors/s"), rows))
}

// scenarioD alternates wsrep_sync_wait 0 and 3 in the order 0, 3, 3, 0,
// 0, 3, 3, 0, runs of half the run time each, under one write load, and
// reports the means per setting: the cluster's speed drifts under writes
// (tables and LSM grow, compactions come and go), by more than causal
// reads cost when each setting ran twice under a load of its own.
func scenarioD(systems []cluster3, opts bench.SysbenchOpts) {
	half := opts
	half.Threads = max(1, opts.Threads/2)
	half.Time = max(5*time.Second, opts.Time/2)
	settings := []int{0, 3}
	order := []int{0, 3, 3, 0, 0, 3, 3, 0}
	type sums struct {
		readQPS, readP95, writeTPS float64
		failed                     bool // a run ended early: its share is what it reached
	}
	total := make([][]sums, len(settings)) // [setting][system]
	for k := range total {
		total[k] = make([]sums, len(systems))
	}
	alternate(systems, 0, func(i int, s cluster3) {
		progress("d: %s, oltp_read_only on node 2 with wsrep_sync_wait %v, %s each, while oltp_write_only runs on node 1", s.name, order, half.Time)
		reads, writes, err := bench.CausalCost(s.targets[0], s.targets[1], order, half)
		if err != nil {
			progress("d: %s: %v", s.name, err)
		}
		for j, r := range reads {
			k := slices.Index(settings, order[j])
			progress("d: %s, wsrep_sync_wait=%d: read %.0f qps, write %.0f tps", s.name, order[j], r.QPS, writes[j])
			n := float64(len(order) / len(settings))
			total[k][i].readQPS += r.QPS / n
			total[k][i].readP95 += r.P95Ms / n
			total[k][i].writeTPS += writes[j] / n
			total[k][i].failed = total[k][i].failed || r.Failed
		}
	})
	var rows [][]string
	for k, sw := range settings {
		row := []string{fmt.Sprint(sw)}
		reads := make([]bench.Result, len(systems))
		for i := range systems {
			m := total[k][i]
			reads[i] = bench.Result{QPS: m.readQPS}
			lost := ""
			if base := total[0][i].readQPS; k > 0 && base > 0 {
				lost = fmt.Sprintf("%.1f%%", 100*(1-m.readQPS/base))
			}
			qps := fmt.Sprintf("%.0f", m.readQPS)
			if m.failed {
				qps += " (a run failed, see above)"
			}
			row = append(row, qps, fmt.Sprintf("%.2f", m.readP95), fmt.Sprintf("%.0f", m.writeTPS), lost)
		}
		rows = append(rows, appendRatio(row, reads, func(r bench.Result) float64 { return r.QPS }))
	}
	fmt.Printf("\nd. causal-read cost: oltp_read_only (%d threads) on node 2 while oltp_write_only (%d threads) runs on node 1; wsrep_sync_wait %v, %s each under one write load, means per setting\n\n%s",
		half.Threads, half.Threads, order, half.Time, bench.Table(ratioHeader(systems, []string{"wsrep_sync_wait"}, "read qps", "read p95 ms", "write tps", "read qps lost"), rows))
}

func scenarioE(systems []cluster3, opts bench.SysbenchOpts, tries int, limit time.Duration) {
	bg := opts
	bg.Threads = max(1, opts.Threads/2)
	bg.Time = limit + 5*time.Second
	var rows [][]string
	for round, sw := range []int{0, 1} {
		alternate(systems, round, func(i int, s cluster3) {
			progress("e: %s, stale-read probe with wsrep_sync_wait=%d under oltp_write_only on node 1", s.name, sw)
			done := make(chan bench.Result, 1)
			go func() { done <- bench.Sysbench(s.targets[0], "oltp_write_only", "run", bg) }()
			time.Sleep(3 * time.Second)
			res, err := bench.StaleReads(s.targets[0], s.targets[1:], sw, tries, limit)
			w := <-done
			if err != nil {
				progress("e: %s: %v", s.name, err)
				rows = append(rows, []string{s.name, fmt.Sprint(sw), "probe failed: " + err.Error()})
				return
			}
			row := []string{s.name, fmt.Sprint(sw), fmt.Sprint(res[0].Reads)}
			for _, r := range res {
				row = append(row, fmt.Sprintf("%d (%.1f%%)", r.Stale, r.StalePercent), fmt.Sprint(r.MaxLag), fmt.Sprintf("%.2f", r.AvgReadMs))
			}
			row = append(row, fmt.Sprintf("%.2f", res[0].AvgWriteMs), fmt.Sprintf("%.0f", w.TPS))
			rows = append(rows, row)
		})
	}
	fmt.Printf("\ne. stale reads: UPDATE on node 1, then SELECT at once on nodes 2 and 3\n\n%s",
		bench.Table([]string{"system", "wsrep_sync_wait", "tries", "node 2 stale", "node 2 max lag", "node 2 read ms", "node 3 stale", "node 3 max lag", "node 3 read ms", "write ms", "background write tps"}, rows))
}

// appendRatio adds Certus/Galera of metric when both ran.
func appendRatio(row []string, res []bench.Result, metric func(bench.Result) float64) []string {
	if len(res) == 2 {
		row = append(row, bench.Ratio(metric(res[0]), metric(res[1])))
	}
	return row
}
