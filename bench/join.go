package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A join benchmark: a fourth node joins a loaded 3-node cluster and
// receives the whole state (SST). It measures the time until the joiner is
// Synced and the throughput each member's clients got before and during
// the transfer.

// JoinResult is one system's join measurement.
type JoinResult struct {
	// DataBytes is the on-disk size of a member's data.
	DataBytes int64
	// Synced is the time from starting the joiner until it was Synced.
	Synced time.Duration
	// Before and During are each member's mean tps before the joiner
	// started and while it joined.
	Before, During []float64
	// Worst is each member's lowest one-second tps during the join.
	Worst []float64
	// Failed says why the measurement failed, if it did.
	Failed string
}

// Joiner is how a system adds its fourth node.
type Joiner interface {
	// StartJoiner starts the fourth node.
	StartJoiner() error
	// JoinerSynced reports whether it is Synced.
	JoinerSynced() bool
}

// MeasureJoin runs sysbench (workload, o.Threads each) on every target with
// one-second reports; after warmup it starts the joiner and waits (up to
// maxJoin) until it is Synced, then stops the load.
func MeasureJoin(targets []Target, workload string, o SysbenchOpts, warmup, maxJoin time.Duration, j Joiner, progress func(string)) JoinResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := make([]Result, len(targets))
	var wg sync.WaitGroup
	start := time.Now()
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = sysbenchUntil(ctx, t, workload, o, warmup+maxJoin+10*time.Second)
		}()
	}
	var res JoinResult
	time.Sleep(warmup)
	joinAt := time.Since(start)
	progress("starting the joiner")
	if err := j.StartJoiner(); err != nil {
		res.Failed = err.Error()
	}
	deadline := time.Now().Add(maxJoin)
	for res.Failed == "" && !j.JoinerSynced() {
		if time.Now().After(deadline) {
			res.Failed = fmt.Sprintf("joiner not Synced after %v", maxJoin)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	res.Synced = time.Since(start) - joinAt
	progress(fmt.Sprintf("joiner Synced after %v", res.Synced.Round(100*time.Millisecond)))
	if s, ok := j.(interface{ TransferSummary() string }); ok {
		progress(s.TransferSummary())
	}
	time.Sleep(2 * time.Second)
	cancel()
	wg.Wait()
	w := int(warmup.Seconds())
	d := int((joinAt + res.Synced).Seconds())
	for _, r := range runs {
		before, during := window(r.PerSecond, 2, w), window(r.PerSecond, w, max(d, w+1))
		res.Before = append(res.Before, mean(before))
		res.During = append(res.During, mean(during))
		res.Worst = append(res.Worst, minimum(during))
	}
	return res
}

func window(v []float64, lo, hi int) []float64 {
	lo, hi = min(lo, len(v)), min(hi, len(v))
	return v[lo:hi]
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func minimum(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

// sysbenchUntil runs sysbench for at most dur, stopping it when ctx ends;
// the per-second reports printed so far are parsed.
func sysbenchUntil(ctx context.Context, t Target, workload string, o SysbenchOpts, dur time.Duration) Result {
	args := append([]string{workload}, t.args("sbtest")...)
	args = append(args, "--tables="+strconv.Itoa(o.Tables), "--table-size="+strconv.Itoa(o.TableSize),
		"--threads="+strconv.Itoa(o.Threads), "--mysql-ignore-errors="+ignoredErrors,
		"--time="+strconv.Itoa(int(dur.Seconds())), "--report-interval=1", "run")
	cmd := exec.CommandContext(ctx, "sysbench", args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 15 * time.Second // sysbench may not stop while a query hangs
	out, _ := cmd.CombinedOutput()
	return Parse(string(out))
}

// DirSize is the size of the files under dir.
func DirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// certusJoiner adds a fourth certus node to a Certus system.
type certusJoiner struct {
	c     *Certus
	bin   string
	extra []string
	http  string
}

// Joiner returns the way to add a fourth node to c (started from bin with
// extra flags).
func (c *Certus) Joiner(bin string, extra ...string) Joiner {
	return &certusJoiner{c: c, bin: bin, extra: extra}
}

func (j *certusJoiner) StartJoiner() error {
	var err error
	j.http, err = j.c.startNode(j.bin, len(j.c.procs)+1, j.extra)
	return err
}

func (j *certusJoiner) JoinerSynced() bool { return j.http != "" && healthy(j.http) }

// TransferSummary describes the joiner's state transfer from its /status.
func (j *certusJoiner) TransferSummary() string {
	resp, err := http.Get("http://" + j.http + "/status")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var st struct {
		SST struct {
			Total uint64  `json:"total"`
			Rate  float64 `json:"rate_bytes_per_sec"`
			Peer  string  `json:"peer"`
		} `json:"sst"`
		Members []struct {
			Name string `json:"name"`
			Peer string `json:"peer_addr"`
		} `json:"members"`
	}
	if json.NewDecoder(resp.Body).Decode(&st) != nil || st.SST.Total == 0 {
		return ""
	}
	donor := st.SST.Peer
	for _, m := range st.Members {
		if m.Peer == st.SST.Peer {
			donor = m.Name + " (" + m.Peer + ")"
		}
	}
	return fmt.Sprintf("state transfer of %.0f MB from donor %s at %.1f MB/s", float64(st.SST.Total)/1e6, donor, st.SST.Rate/1e6)
}

// DataDir is node i's (from 1) data directory.
func (c *Certus) DataDir(i int) string { return filepath.Join(c.dir, strconv.Itoa(i)) }

// galeraJoiner adds node 4 to the anchors' Galera cluster.
type galeraJoiner struct {
	a    *Anchor
	done chan error
}

// Joiner returns the way to add a node to the anchors' Galera cluster.
func (a *Anchor) Joiner() Joiner { return &galeraJoiner{a: a} }

func (j *galeraJoiner) StartJoiner() error {
	n := len(j.a.targets) + 1
	j.done = make(chan error, 1)
	go func() { j.done <- j.a.run("start", strconv.Itoa(n)) }()
	j.a.targets = append(j.a.targets, Target{Name: fmt.Sprintf("galera n%d", n), Host: "127.0.0.1", Port: 4306 + n, User: "sb", Password: "sb"})
	j.a.nodes = n
	return nil
}

func (j *galeraJoiner) JoinerSynced() bool {
	t := j.a.targets[len(j.a.targets)-1]
	out, err := exec.Command("mysql", "-h", t.Host, "-P", strconv.Itoa(t.Port), "-u", t.User, "-p"+t.Password, "-N", "-B",
		"-e", "SHOW STATUS LIKE 'wsrep_local_state_comment'").Output()
	return err == nil && strings.Contains(string(out), "Synced")
}
