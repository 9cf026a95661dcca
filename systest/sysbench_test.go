package systest

import (
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// sysbenchScripts are the OLTP scripts of sysbench 1.0.20.
var sysbenchScripts = []string{
	"oltp_read_only", "oltp_read_write", "oltp_write_only", "oltp_point_select",
	"oltp_update_index", "oltp_update_non_index", "oltp_insert", "oltp_delete",
	"select_random_points", "select_random_ranges", "bulk_insert",
}

var (
	reTxns    = regexp.MustCompile(`transactions:\s+(\d+)`)
	reIgnored = regexp.MustCompile(`ignored errors:\s+(\d+)`)
)

// TestSysbenchScripts runs prepare/run/cleanup of every sysbench OLTP
// script against one node with prepared statements on and off, 16
// threads: every run must finish without a fatal error. The test is
// skipped when sysbench is not installed (CI installs it).
func TestSysbenchScripts(t *testing.T) {
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench is not installed (apt-get install sysbench)")
	}
	n := testcluster.NewNode(t, "n1", "--sync-commit=false")
	n.Start()
	mustExec(t, n.DB(""), "CREATE DATABASE sbtest")
	host, port, _ := net.SplitHostPort(n.SQLAddr)
	runTime := durationEnv("CERTUS_SYSBENCH_TIME", 3*time.Second)
	sb := func(script, cmd string, extra ...string) (string, error) {
		tables := "4"
		if strings.HasPrefix(script, "select_random") {
			tables = "1" // these scripts support one table only
		}
		args := []string{script, "--db-driver=mysql", "--mysql-host=" + host, "--mysql-port=" + port,
			"--mysql-user=root", "--mysql-db=sbtest", "--tables=" + tables, "--table-size=10000", "--threads=16"}
		args = append(args, extra...)
		args = append(args, cmd)
		out, err := exec.Command("sysbench", args...).CombinedOutput()
		return clip(string(out)), err
	}
	for _, script := range sysbenchScripts {
		t.Run(script, func(t *testing.T) {
			// bulk_insert writes the same ids on every run, so each run
			// gets its own prepare and cleanup
			for _, mode := range []string{"auto", "disable"} {
				if out, err := sb(script, "prepare"); err != nil || strings.Contains(out, "FATAL") {
					t.Fatalf("prepare: %v\n%s", err, out)
				}
				out, err := sb(script, "run", "--db-ps-mode="+mode,
					fmt.Sprintf("--time=%d", int(runTime.Seconds())), "--report-interval=0")
				if err != nil || strings.Contains(out, "FATAL") {
					t.Fatalf("run (ps-mode %s): %v\n%s\nnode log:\n%s", mode, err, out, n.LogTail(20))
				}
				txns, ignored := atoi(reTxns, out), atoi(reIgnored, out)
				t.Logf("ps-mode=%-7s %6d transactions, %d ignored errors", mode, txns, ignored)
				if txns == 0 {
					t.Fatalf("no transaction completed (ps-mode %s)\n%s", mode, out)
				}
				// InnoDB shows none or nearly none here (deadlocks between
				// random rows are possible but rare)
				if ignored*1000 > txns {
					t.Fatalf("%d ignored errors in %d transactions (ps-mode %s)", ignored, txns, mode)
				}
				if out, err := sb(script, "cleanup"); err != nil || strings.Contains(out, "FATAL") {
					t.Fatalf("cleanup: %v\n%s", err, out)
				}
			}
		})
	}
}

func atoi(re *regexp.Regexp, s string) int {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// clip shortens sysbench output for failure messages (bulk_insert echoes
// whole statements).
func clip(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + "..."
		}
	}
	return strings.Join(lines, "\n")
}
