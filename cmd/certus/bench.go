package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/certusdb/certus/bench"
)

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks against MariaDB and Galera on this machine",
	}
	cmd.AddCommand(benchSysbenchCmd(), benchClusterCmd(), benchJoinCmd(), benchBigTxnCmd(), benchFlowCmd(), benchDiffCmd())
	return cmd
}

// defaultAnchors is where the anchor scripts live relative to the repository.
const defaultAnchors = "../shared/anchors/galera"

func benchSysbenchCmd() *cobra.Command {
	var workloads, anchors, profileDir, psMode string
	var threads, tables, size, runs int
	var dur time.Duration
	var noMaria, syncCommit, tlsCost bool
	cmd := &cobra.Command{
		Use:   "sysbench",
		Short: "sysbench on one Certus node and a plain MariaDB, in the same run",
		Long: `Start one Certus node (from this binary) and, when the anchor scripts and
MariaDB are installed, the plain MariaDB of ../shared/anchors/galera
(single.sh); prepare the same sysbench tables on both; run each workload on
both, alternating which goes first; print one table with both and the ratio.
Holds /tmp/bench.lock while running.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			self, unlock, err := benchStart()
			if err != nil {
				return err
			}
			defer unlock()
			opts := bench.SysbenchOpts{Tables: tables, TableSize: size, Threads: threads, Time: dur, PSMode: psMode}
			extra := []string{fmt.Sprintf("--sync-commit=%v", syncCommit)}
			var files *bench.TLSFiles
			if tlsCost {
				f, err := bench.MakeTLS("")
				if err != nil {
					return err
				}
				defer os.RemoveAll(f.Dir)
				files, extra = &f, append(extra, f.CertusFlags()...)
			}
			fmt.Fprintf(os.Stderr, "starting certus (sync-commit=%v)...\n", syncCommit)
			certus, err := bench.StartCertus(self, 1, extra...)
			if err != nil {
				return err
			}
			defer certus.Stop()
			var systems []benchSystem
			systems = withTLS(systems, "Certus", certus.Targets()[0], files)
			if !noMaria && bench.AnchorsAvailable(anchors) {
				fmt.Fprintln(os.Stderr, "starting MariaDB (anchors single.sh)...")
				scripts := anchors
				if files != nil {
					if scripts, err = files.AnchorScripts(anchors); err != nil {
						return err
					}
				}
				maria, err := bench.StartMariaDB(scripts)
				if err != nil {
					return err
				}
				defer maria.Stop()
				systems = withTLS(systems, "MariaDB", maria.Targets()[0], files)
			} else if !noMaria {
				fmt.Fprintf(os.Stderr, "MariaDB or the anchor scripts (%s) are not installed: Certus only\n", anchors)
			}
			for _, s := range systems {
				fmt.Fprintf(os.Stderr, "preparing %d x %d rows on %s...\n", tables, size, s.name)
				_ = bench.Sysbench(s.t, "oltp_read_write", "cleanup", opts)
				if r := bench.Sysbench(s.t, "oltp_read_write", "prepare", opts); r.Failed {
					return fmt.Errorf("prepare on %s: %s", s.name, r.FailureReason)
				}
			}
			header := []string{"workload", "threads"}
			for _, s := range systems {
				header = append(header, s.name+" tps", s.name+" qps", s.name+" p95 ms", s.name+" errors")
			}
			if len(systems) == 2 {
				header = append(header, "ratio (qps)")
			}
			var rows, costs [][]string
			for _, w := range strings.Split(workloads, ",") {
				w = strings.TrimSpace(w)
				results := make([][]bench.Result, len(systems))
				for run := 0; run < runs; run++ {
					for k := range systems {
						i := (k + run) % len(systems) // alternate who goes first
						s := systems[i]
						if profileDir != "" && s.name == "Certus" && run == 0 {
							go profile(certus.HTTP[0], filepath.Join(profileDir, w+".cpu.pprof"), dur)
						}
						fmt.Fprintf(os.Stderr, "%s on %s, run %d...\n", w, s.name, run+1)
						r := bench.Sysbench(s.t, w, "run", opts)
						if r.Failed {
							fmt.Fprintf(os.Stderr, "  %s failed: %s\n", s.name, r.FailureReason)
						} else {
							fmt.Fprintf(os.Stderr, "  %.0f qps, p95 %.2f ms\n", r.QPS, r.P95Ms)
						}
						results[i] = append(results[i], r)
					}
				}
				row := []string{w, fmt.Sprint(threads)}
				var qps []float64
				for i := range systems {
					m := median(results[i])
					row = append(row, fmt.Sprintf("%.0f", m.TPS), fmt.Sprintf("%.0f", m.QPS), fmt.Sprintf("%.2f", m.P95Ms), fmt.Sprint(m.Errors))
					qps = append(qps, m.QPS)
				}
				if len(systems) == 2 {
					row = append(row, bench.Ratio(qps[0], qps[1]))
				}
				rows = append(rows, row)
				if files != nil {
					cost := []string{w}
					for i := 0; i+1 < len(systems); i += 2 {
						cost = append(cost, tlsCostOf(median(results[i]), median(results[i+1]))...)
					}
					costs = append(costs, cost)
				}
			}
			fmt.Printf("\nsysbench 1.0.20, %d tables x %d rows, %d threads, %s per run, median of %d run(s), ps-mode %s, Certus --sync-commit=%v\n\n",
				tables, size, threads, dur, runs, psMode, syncCommit)
			fmt.Print(bench.Table(header, rows))
			if files != nil {
				h := []string{"workload"}
				for i := 0; i+1 < len(systems); i += 2 {
					h = append(h, systems[i].name+" TLS cost (qps)", systems[i].name+" p95 ms plain / TLS")
				}
				fmt.Printf("\nThe cost of TLS (each system without and with TLS in the same run; sysbench --mysql-ssl=on)\n\n")
				fmt.Print(bench.Table(h, costs))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&workloads, "workloads", "oltp_point_select,oltp_read_only,oltp_read_write,oltp_write_only", "comma-separated sysbench workloads")
	f.IntVar(&threads, "threads", 16, "sysbench threads")
	f.IntVar(&tables, "tables", 4, "tables")
	f.IntVar(&size, "size", 50000, "rows per table")
	f.DurationVar(&dur, "time", 30*time.Second, "duration of each run")
	f.IntVar(&runs, "runs", 1, "runs per workload and system (median reported)")
	f.StringVar(&psMode, "ps-mode", "auto", "sysbench --db-ps-mode")
	f.StringVar(&anchors, "anchors", defaultAnchors, "directory of the Galera/MariaDB anchor scripts")
	f.BoolVar(&noMaria, "no-mariadb", false, "run Certus only")
	f.BoolVar(&syncCommit, "sync-commit", false, "Certus --sync-commit (MariaDB runs with innodb_flush_log_at_trx_commit=2)")
	f.StringVar(&profileDir, "profile", "", "write a CPU profile of Certus during each workload's first run into this directory")
	f.BoolVar(&tlsCost, "tls", false, "also run every workload over TLS on each system (same servers, sysbench --mysql-ssl=on) and report what TLS costs each")
	return cmd
}

// benchSystem is one system a benchmark compares, as a client reaches it.
type benchSystem struct {
	name string
	t    bench.Target
}

// withTLS adds the system to systems, and when files is not nil the same
// system over TLS right after it.
func withTLS(systems []benchSystem, name string, t bench.Target, files *bench.TLSFiles) []benchSystem {
	systems = append(systems, benchSystem{name, t})
	if files != nil {
		systems = append(systems, benchSystem{name + " TLS", t.WithTLS(*files)})
	}
	return systems
}

// tlsCostOf is the throughput lost to TLS and the p95 latency without
// and with it.
func tlsCostOf(plain, tls bench.Result) []string {
	cost := "-"
	if plain.QPS > 0 {
		cost = fmt.Sprintf("%.1f%%", 100*(1-tls.QPS/plain.QPS))
	}
	return []string{cost, fmt.Sprintf("%.2f / %.2f", plain.P95Ms, tls.P95Ms)}
}

// benchStart takes the benchmark lock (released by unlock) and returns
// this binary's path, from which the benchmark starts certus nodes.
func benchStart() (self string, unlock func(), err error) {
	unlock, err = bench.Lock()
	if err != nil {
		return "", nil, err
	}
	self, err = os.Executable()
	if err != nil {
		unlock()
		return "", nil, err
	}
	return self, unlock, nil
}

func median(rs []bench.Result) bench.Result {
	if len(rs) == 0 {
		return bench.Result{}
	}
	sorted := append([]bench.Result(nil), rs...)
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			if sorted[j].QPS < sorted[i].QPS {
				sorted[i], sorted[j] = sorted[j], sorted[i]
			}
		}
	}
	return sorted[len(sorted)/2]
}

// profile saves a CPU profile of a node, skipping the first seconds of
// the run.
func profile(httpAddr, path string, dur time.Duration) {
	if length := dur - 4*time.Second; length >= 2*time.Second {
		_ = bench.SaveCPUProfile(httpAddr, path, 2*time.Second, length)
	}
}
