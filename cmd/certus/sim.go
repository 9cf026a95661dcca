package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/certusdb/certus/sim"
)

func simCmd() *cobra.Command {
	var seed, first int64
	var seeds int
	var duration time.Duration
	var ticks int
	var trace, logs bool
	cmd := &cobra.Command{
		Use:   "sim [--seed S | --seeds N]",
		Short: "Run the deterministic simulation of the replication core",
		Long: `Run the replication core (raft, certification, apply, storage on an
in-memory crashable filesystem) of several nodes in one process on a
simulated network and clock, with faults drawn from a seed, checking
invariants as it goes.

  certus sim --seed S            replay one seed; prints its trace digest
  certus sim --seeds N           run seeds --first .. --first+N-1
  certus sim --duration 10m      run consecutive seeds for a while

A failure prints the seed and the command that replays it, and the
command exits non-zero. The same seed always gives the same digest.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("seed") {
				cfg := sim.Defaults(seed)
				if ticks > 0 {
					cfg.Ticks = ticks
				}
				if logs {
					cfg.Log = os.Stderr
				}
				if trace {
					cfg.Trace = os.Stdout
				}
				res := sim.Run(cfg)
				printResult(res)
				fmt.Printf("trace digest: %s\n", res.Digest)
				if res.Err != nil {
					return fmt.Errorf("seed %d failed: %v (replay: %s)", res.Seed, res.Err, sim.Replay(res.Seed))
				}
				return nil
			}
			return runSeeds(first, seeds, duration, ticks)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&seed, "seed", 0, "replay this seed")
	f.IntVar(&seeds, "seeds", 0, "number of seeds to run")
	f.Int64Var(&first, "first", 1, "first seed of --seeds")
	f.DurationVar(&duration, "duration", 0, "run consecutive seeds for this long")
	f.IntVar(&ticks, "ticks", 0, "ticks of faults per run (default from the seed's config)")
	f.BoolVar(&trace, "trace", false, "print the event trace of --seed")
	f.BoolVar(&logs, "log", false, "print the nodes' own log of --seed (to stderr)")
	return cmd
}

func printResult(r *sim.Result) {
	fmt.Printf("seed %d: applied=%d commits=%d cert_failures=%d unknown=%d causal_reads=%d link_rounds=%d commit_notices=%d fragments=%d crashes=%d disk_losses=%d partitions=%d pauses=%d dropped=%d duplicated=%d\n",
		r.Seed, r.Applied, r.Commits, r.CertFailures, r.Unknown, r.Reads, r.LinkRounds, r.CommitNotices, r.Fragments, r.Crashes, r.Wipes, r.Partitions, r.Pauses, r.MessagesDropped, r.MessagesDuplicated)
}

// runSeeds runs consecutive seeds one after another (runs must not overlap
// in one process: they share crypto/rand).
func runSeeds(first int64, n int, d time.Duration, ticks int) error {
	if n == 0 && d == 0 {
		return fmt.Errorf("give --seed, --seeds or --duration")
	}
	start := time.Now()
	ran, failed := 0, 0
	for s := first; ; s++ {
		if n > 0 && ran >= n {
			break
		}
		if d > 0 && time.Since(start) > d {
			break
		}
		cfg := sim.Defaults(s)
		if ticks > 0 {
			cfg.Ticks = ticks
		}
		res := sim.Run(cfg)
		ran++
		if res.Err != nil {
			failed++
			fmt.Printf("FAIL seed %d: %v\n  replay: %s\n", s, res.Err, sim.Replay(s))
		}
		if ran%500 == 0 {
			fmt.Printf("%d seeds, %d failed, %s\n", ran, failed, time.Since(start).Round(time.Second))
		}
	}
	fmt.Printf("%d seeds run (from %d), %d failed, in %s\n", ran, first, failed, time.Since(start).Round(time.Second))
	if failed > 0 {
		return fmt.Errorf("%d of %d seeds failed", failed, ran)
	}
	return nil
}
