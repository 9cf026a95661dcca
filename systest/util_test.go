package systest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// opTimeout bounds every single statement a test runs, so a hang fails the
// test with a message instead of stalling the package until go test's
// global timeout. It is generous: the machine is small and shared.
const opTimeout = 60 * time.Second

// blockCheck is how long a statement that must wait for a row lock has to
// stay blocked before the test lets the lock holder finish.
const blockCheck = 300 * time.Millisecond

type execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

type queryer interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// startNode starts a fresh single node and returns it with a pool on db
// (created if it is not empty).
func startNode(t *testing.T, name, db string, flags ...string) (*testcluster.Node, *sql.DB) {
	t.Helper()
	n := testcluster.NewNode(t, name, flags...)
	n.Start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node %s running=%v health=%d; log tail:\n%s", n.Name, n.Running(), n.Health(), n.LogTail(60))
			return
		}
		if n.Running() {
			n.Stop() // a clean shutdown: storage closes with nothing leaked
		}
	})
	root := n.DB("")
	if db != "" {
		mustExec(t, root, "CREATE DATABASE "+db)
		return n, n.DB(db)
	}
	return n, root
}

// adhoc is a pool of root sessions on n for a statement or two: it keeps
// no idle connection, so that helpers that poll a node do not pile up
// sessions (a node refuses logins past max_connections, as MySQL does).
func adhoc(n *testcluster.Node, db string) *sql.DB {
	p := n.DB(db)
	p.SetMaxIdleConns(0)
	return p
}

// conn returns a dedicated session of db, closed at cleanup.
func conn(t testing.TB, db *sql.DB) *sql.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatalf("open session: %v", err)
	}
	// Discard the connection instead of returning it to the pool, so
	// session state (isolation level, autocommit, timeouts) set by one
	// test never leaks into a session another test gets from the pool.
	t.Cleanup(func() {
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
		c.Close()
	})
	return c
}

// xexec runs q on e (a pool, session or transaction) and fails on error.
func xexec(t testing.TB, e execer, q string, args ...any) sql.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r, err := e.ExecContext(ctx, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return r
}

// tryExec runs q on e and returns its error.
func tryExec(e execer, q string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	_, err := e.ExecContext(ctx, q, args...)
	return err
}

// qInt returns the single integer q yields.
func qInt(t testing.TB, e queryer, q string, args ...any) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var v sql.NullInt64
	if err := e.QueryRowContext(ctx, q, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if !v.Valid {
		t.Fatalf("%s: NULL", q)
	}
	return v.Int64
}

// qStr returns the single string q yields.
func qStr(t testing.TB, e queryer, q string, args ...any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var v sql.NullString
	if err := e.QueryRowContext(ctx, q, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v.String
}

// qInts returns the first column of every row of q.
func qInts(t testing.TB, e queryer, q string, args ...any) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rows, err := e.QueryContext(ctx, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// qLines returns every row of q as its columns joined by "|", NULL as
// "NULL".
func qLines(t testing.TB, e queryer, q string, args ...any) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rows, err := e.QueryContext(ctx, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = "NULL"
			if v.Valid {
				parts[i] = v.String
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// wantRows fails t unless got (from qLines) is want.
func wantRows(t testing.TB, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// answer is a query and its rows as qLines gives them, joined by "\n".
type answer struct{ q, want string }

// wantAnswers fails t for each query of answers whose rows differ.
func wantAnswers(t testing.TB, e queryer, answers []answer) {
	t.Helper()
	for _, a := range answers {
		if got := strings.Join(qLines(t, e, a.q), "\n"); got != a.want {
			t.Errorf("%s:\n got %s\nwant %s", a.q, got, a.want)
		}
	}
}

// qMap returns the two-column result of q (SHOW VARIABLES / STATUS) as a
// map keyed by the lower-cased first column.
func qMap(t testing.TB, e queryer, q string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rows, err := e.QueryContext(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var k string
		var v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		m[strings.ToLower(k)] = v.String
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return m
}

// outcome is the result of a statement run in the background.
type outcome struct {
	err error
	dur time.Duration
}

// goExec starts q on e in a goroutine; the channel yields its outcome.
func goExec(e execer, q string, args ...any) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		_, err := e.ExecContext(ctx, q, args...)
		ch <- outcome{err: err, dur: time.Since(start)}
	}()
	return ch
}

// mustBlock fails if the background statement finishes within blockCheck.
func mustBlock(t testing.TB, ch <-chan outcome, what string) {
	t.Helper()
	select {
	case o := <-ch:
		t.Fatalf("%s did not block: finished after %v with err=%v", what, o.dur, o.err)
	case <-time.After(blockCheck):
	}
}

// await waits for the background statement's outcome.
func await(t testing.TB, ch <-chan outcome, what string) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(opTimeout + 5*time.Second):
		t.Fatalf("%s never finished", what)
	}
	return outcome{}
}

// checkErr is wantErr that reports with t.Errorf, so a test can go on
// checking what follows a wrong error code. It reports whether err matched.
func checkErr(t testing.TB, err error, code uint16, state string, what string) bool {
	t.Helper()
	if err == nil {
		t.Errorf("%s: want error %d (%s), got none", what, code, state)
		return false
	}
	c, s := mysqlErr(err)
	if c != code || s != state {
		t.Errorf("%s: want error %d (%s), got %d (%s): %v", what, code, state, c, s, err)
		return false
	}
	return true
}

// errDesc describes err as "code (state): message" for logs and reports.
func errDesc(err error) string {
	if err == nil {
		return "no error"
	}
	c, s := mysqlErr(err)
	return fmt.Sprintf("%d (%s): %v", c, s, err)
}

func sortedInts(v []int64) []int64 {
	out := append([]int64(nil), v...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// awaitApplied waits until every node of c has applied what the first node
// had applied when it was called (a DDL just run there, say), so work
// started on the others finds it.
func awaitApplied(t testing.TB, c *testcluster.Cluster) {
	t.Helper()
	var gtid string
	if err := adhoc(c.Nodes[0], "").QueryRow("SELECT WSREP_LAST_SEEN_GTID()").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes[1:] {
		var ok int
		if err := adhoc(n, "").QueryRow("SELECT WSREP_SYNC_WAIT_UPTO_GTID(?, 30)", gtid).Scan(&ok); err != nil {
			t.Fatalf("%s did not apply %s: %v", n.Name, gtid, err)
		}
	}
}
