package systest

import (
	"database/sql"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// statusLine matches the answer to COM_STATISTICS.
var statusLine = regexp.MustCompile(`^Uptime: (\d+)  Threads: (\d+)  Questions: (\d+)  Slow queries: \d+  Opens: \d+  Flush tables: \d+  Open tables: \d+  Queries per second avg: \d+\.\d{3}$`)

// adminStatus runs `mysqladmin status ping status` against addr (one
// connection: the commands after the first show that it goes on) and
// returns the fields of the first status line: uptime, threads, questions.
func adminStatus(t *testing.T, addr string) (uptime, threads, questions int) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command("mysqladmin", "-h", host, "-P", port, "--protocol=tcp", "-u", "root", "status", "ping", "status").CombinedOutput()
	if err != nil {
		t.Fatalf("mysqladmin: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || lines[1] != "mysqld is alive" {
		t.Fatalf("mysqladmin status ping status printed %q", out)
	}
	var f [3]int
	for _, l := range []string{lines[0], lines[2]} {
		m := statusLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("status line %q", l)
		}
		for i := range f {
			f[i], _ = strconv.Atoi(m[i+1])
		}
	}
	return f[0], f[1], f[2]
}

// checkAdminStatus checks `mysqladmin status` against addr: at least its
// own session, and five more questions after five statements on db.
func checkAdminStatus(t *testing.T, addr string, db *sql.DB) {
	t.Helper()
	_, threads, before := adminStatus(t, addr)
	if threads < 1 {
		t.Fatalf("Threads: %d with mysqladmin connected", threads)
	}
	for i := 0; i < 5; i++ {
		mustExec(t, db, "DO 1")
	}
	if _, _, after := adminStatus(t, addr); after < before+5 {
		t.Fatalf("Questions: %d, then %d after five statements", before, after)
	}
}

// TestAdminStatus runs `mysqladmin status` (COM_STATISTICS, which the
// protocol library refused with "command handling not implemented yet")
// against a node: it answers MySQL's status line, counts the questions
// asked since, and the connection goes on after it.
func TestAdminStatus(t *testing.T) {
	if _, err := exec.LookPath("mysqladmin"); err != nil {
		t.Skip("mysqladmin not installed")
	}
	n, db := startNode(t, "admin", "")
	checkAdminStatus(t, n.SQLAddr, db)
	// COM_REFRESH (refresh, flush-threads) and the FLUSH statements of the
	// other flush commands; they need RELOAD
	host, port, _ := net.SplitHostPort(n.SQLAddr)
	admin := func(user string, args ...string) ([]byte, error) {
		return exec.Command("mysqladmin", append([]string{"-h", host, "-P", port, "--protocol=tcp", "-u", user, "-ppw"}, args...)...).CombinedOutput()
	}
	mustExec(t, db, "CREATE USER ops IDENTIFIED BY 'pw'")
	mustExec(t, db, "CREATE USER plain IDENTIFIED BY 'pw'")
	mustExec(t, db, "GRANT RELOAD ON *.* TO ops")
	if out, err := admin("ops", "refresh", "flush-threads", "flush-logs", "flush-hosts", "flush-status", "flush-privileges", "ping"); err != nil {
		t.Fatalf("mysqladmin refresh and flushes: %v\n%s", err, out)
	}
	out, err := admin("plain", "refresh")
	if err == nil || !strings.Contains(string(out), "RELOAD") {
		t.Fatalf("mysqladmin refresh without RELOAD: %v\n%s", err, out)
	}
}
