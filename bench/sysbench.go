// Package bench runs benchmarks that compare Certus with MariaDB and
// Galera on the same machine in the same run: it starts the systems, runs
// sysbench against them (alternating, so drift hits both) and prints one
// table with both and their ratio. Timed runs hold /tmp/bench.lock so two
// benchmarks never overlap (the anchor scripts take the same lock).
package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Target is a MySQL endpoint sysbench runs against.
type Target struct {
	Name     string
	Host     string
	Port     int
	User     string
	Password string
	// TLS, when set, is where sysbench finds its TLS files: it connects
	// over TLS.
	TLS *TLSFiles
}

// WithTLS returns t connecting over TLS with f's files.
func (t Target) WithTLS(f TLSFiles) Target {
	t.TLS = &f
	return t
}

// SysbenchOpts are the sysbench settings common to a comparison.
type SysbenchOpts struct {
	Tables    int
	TableSize int
	Threads   int
	Time      time.Duration
	// PSMode is --db-ps-mode (auto or disable).
	PSMode string
	// Extra are additional sysbench arguments.
	Extra []string
}

// Result is one sysbench run.
type Result struct {
	TPS, QPS      float64
	P95Ms, AvgMs  float64
	Errors        int
	Transactions  int
	PerSecond     []float64 // tps of each --report-interval line
	Output        string
	Failed        bool
	FailureReason string
}

// ignoredErrors are the errors sysbench retries instead of aborting:
// deadlock/certification (1213), and what Galera's anchor also ignores.
const ignoredErrors = "1213,1020,1205,1180"

func (t Target) args(db string) []string {
	a := []string{"--db-driver=mysql", "--mysql-host=" + t.Host, "--mysql-port=" + strconv.Itoa(t.Port),
		"--mysql-user=" + t.User, "--mysql-db=" + db}
	if t.Password != "" {
		a = append(a, "--mysql-password="+t.Password)
	}
	return a
}

// Sysbench runs `sysbench <workload> <cmd>` against t.
func Sysbench(t Target, workload, cmd string, o SysbenchOpts) Result {
	args := []string{workload}
	args = append(args, t.args("sbtest")...)
	tables := o.Tables
	if strings.HasPrefix(workload, "select_random") {
		tables = 1
	}
	args = append(args, "--tables="+strconv.Itoa(tables), "--table-size="+strconv.Itoa(o.TableSize),
		"--threads="+strconv.Itoa(o.Threads), "--mysql-ignore-errors="+ignoredErrors)
	if cmd == "run" {
		args = append(args, "--time="+strconv.Itoa(int(o.Time.Seconds())), "--report-interval=1")
		if o.PSMode != "" {
			args = append(args, "--db-ps-mode="+o.PSMode)
		}
	}
	args = append(args, o.Extra...)
	c := exec.Command("sysbench", append(args, cmd)...)
	if t.TLS != nil {
		c.Args = append(c.Args[:len(c.Args)-1], "--mysql-ssl=on", cmd)
		c.Dir = t.TLS.Dir
	}
	out, err := c.CombinedOutput()
	r := Parse(string(out))
	if err != nil || strings.Contains(r.Output, "FATAL") {
		r.Failed = true
		r.FailureReason = firstLine(string(out), "FATAL")
		if r.FailureReason == "" && err != nil {
			r.FailureReason = err.Error()
		}
	}
	return r
}

var (
	reTPS    = regexp.MustCompile(`transactions:\s+(\d+)\s+\(([\d.]+) per sec`)
	reQPS    = regexp.MustCompile(`queries:\s+\d+\s+\(([\d.]+) per sec`)
	reP95    = regexp.MustCompile(`95th percentile:\s+([\d.]+)`)
	reAvg    = regexp.MustCompile(`avg:\s+([\d.]+)`)
	reErrs   = regexp.MustCompile(`ignored errors:\s+(\d+)`)
	reReport = regexp.MustCompile(`^\[ *\d+s \].* tps: ([\d.]+)`)
)

// Parse extracts the numbers of a sysbench run's output.
func Parse(out string) Result {
	r := Result{Output: out}
	if m := reTPS.FindStringSubmatch(out); m != nil {
		r.Transactions, _ = strconv.Atoi(m[1])
		r.TPS, _ = strconv.ParseFloat(m[2], 64)
	}
	if m := reQPS.FindStringSubmatch(out); m != nil {
		r.QPS, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := reP95.FindStringSubmatch(out); m != nil {
		r.P95Ms, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := reAvg.FindStringSubmatch(out); m != nil {
		r.AvgMs, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := reErrs.FindStringSubmatch(out); m != nil {
		r.Errors, _ = strconv.Atoi(m[1])
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if m := reReport.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			r.PerSecond = append(r.PerSecond, v)
		}
	}
	return r
}

func firstLine(s, substr string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			if len(l) > 240 {
				l = l[:240] + "..."
			}
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// Lock takes /tmp/bench.lock (blocking) and returns its release.
func Lock() (func(), error) {
	f, err := os.OpenFile("/tmp/bench.lock", os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// Table formats rows as a Markdown table.
func Table(header []string, rows [][]string) string {
	var b bytes.Buffer
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for range header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// Ratio formats a/b.
func Ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// SaveCPUProfile waits wait, then fetches a CPU profile of length from the
// /debug/pprof of the process at httpAddr and writes it to path.
func SaveCPUProfile(httpAddr, path string, wait, length time.Duration) error {
	time.Sleep(wait)
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", httpAddr, max(int(length.Seconds()), 1)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}
