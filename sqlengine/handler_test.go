package sqlengine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/certusdb/certus/replication"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/txn"
)

// TestHandler runs testdata/handler through a real server of one node in
// this process (storage, a replication node of one, the transaction
// manager, the handler) with a MySQL protocol client on a socket: for each
// statement, the class the handler gives it (inspect), the text
// go-mysql-server is given when a rewrite changed it, whether the fast path
// answered, and the answer. It checks in seconds what the system tests
// check with processes. Run with -rewrite to update the expected answers.
//
//	run [conn=name] [user=u]   runs the statements of the input, one per
//	                  line (a line ending in \ goes on), on connection name
//	                  (default "a"; each connection is its own session,
//	                  logged in as u, default root, at its first use)
//
// Each file of testdata/handler runs on a node of its own.
func TestHandler(t *testing.T) {
	datadriven.Walk(t, "testdata/handler", runHandlerFile)
}

func runHandlerFile(t *testing.T, path string) {
	h := startTestServer(t)
	conns := map[string]*mysql.Conn{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "run" {
			return fmt.Sprintf("unknown command %q\n", d.Cmd)
		}
		name := "a"
		if d.HasArg("conn") {
			d.ScanArgs(t, "conn", &name)
		}
		c := conns[name]
		if c == nil {
			user := "root"
			if d.HasArg("user") {
				d.ScanArgs(t, "user", &user)
			}
			var err error
			c, err = mysql.Connect(context.Background(), &mysql.ConnParams{Host: "127.0.0.1", Port: h.port, Uname: user})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			conns[name] = c
		}
		var out strings.Builder
		qs := statements(d.Input)
		for _, q := range qs {
			if len(qs) > 1 {
				fmt.Fprintf(&out, "> %s\n", q)
			}
			out.WriteString(h.run(c, q))
		}
		return out.String()
	})
}

// statements splits a test's input into statements: one per line, a line
// ending in \ continuing on the next.
func statements(input string) []string {
	var out []string
	cur := ""
	for _, line := range strings.Split(input, "\n") {
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + "\n"
			continue
		}
		if s := cur + line; strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
		cur = ""
	}
	return out
}

type testServer struct {
	srv  *Server
	port int
}

// startTestServer starts a node of one in this process: its storage in a
// temporary directory, a replication node that bootstraps a cluster of one,
// and the SQL server on a free port of 127.0.0.1.
func startTestServer(t *testing.T) *testServer {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	eng, err := storage.Open(storage.Config{Dir: dir, CacheBytes: 8 << 20, MemTableBytes: 8 << 20, LogSpans: replication.LogSpans()})
	if err != nil {
		t.Fatal(err)
	}
	repl, err := replication.Start(replication.Config{
		Self: replication.Member{ID: 1, Name: "n1"}, ClusterName: "test", Engine: eng, Bootstrap: true,
		TickInterval: 5 * time.Millisecond, Logger: log,
	})
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	mgr := txn.NewManager(txn.Config{Engine: eng, Replicator: repl, Logger: log})
	repl.SetRemoteWriteObserver(mgr.RemoteWrite)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{Listener: ln, Provider: NewProvider(mgr), Cluster: testCluster{repl}, RootHost: "%", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Start() }()
	t.Cleanup(func() {
		srv.Close()
		repl.Stop()
		eng.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !repl.Recovered() || !repl.Primary() {
		if ctx.Err() != nil {
			t.Fatal("the node of one did not become primary")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return &testServer{srv: srv, port: ln.Addr().(*net.TCPAddr).Port}
}

// testCluster is the replication node as the handler sees it.
type testCluster struct{ *replication.Node }

func (c testCluster) Applied() uint64 { return c.Core().Applied() }

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// run runs q on c and describes what the handler did with it and the
// answer.
func (h *testServer) run(c *mysql.Conn, q string) string {
	var out strings.Builder
	rewritten, _ := rewriteText(q, false)
	if class := describe(inspect(rewritten)); class != "(nothing)" {
		fmt.Fprintf(&out, "class: %s\n", class)
	}
	if rewritten != q {
		fmt.Fprintf(&out, "rewritten: %s\n", rewritten)
	}
	fast := h.srv.Handler.fast.Statements()
	res, err := c.ExecuteFetch(q, 1000, true)
	if h.srv.Handler.fast.Statements() != fast {
		out.WriteString("fast path\n")
	}
	var se *mysql.SQLError
	switch {
	case errors.As(err, &se):
		fmt.Fprintf(&out, "error %d (%s): %s\n", se.Number(), se.SQLState(), se.Message)
		return out.String()
	case err != nil:
		fmt.Fprintf(&out, "error: %v\n", err)
		return out.String()
	}
	writeResult(&out, res)
	return clientPort.ReplaceAllString(out.String(), "$1:<port>")
}

// clientPort is a test client's address, whose port changes every run.
var clientPort = regexp.MustCompile(`(localhost|127\.0\.0\.1):[0-9]+`)

// writeResult writes a result set as a header of column names and a line
// per row (NULL as NULL), or the rows a statement affected.
func writeResult(out *strings.Builder, res *sqltypes.Result) {
	if len(res.Fields) == 0 {
		fmt.Fprintf(out, "ok, %d rows affected", res.RowsAffected)
		if res.InsertID != 0 {
			fmt.Fprintf(out, ", insert id %d", res.InsertID)
		}
		out.WriteString("\n")
		return
	}
	names := make([]string, len(res.Fields))
	for i, f := range res.Fields {
		names[i] = f.Name
	}
	out.WriteString(strings.Join(names, " | ") + "\n")
	for _, row := range res.Rows {
		vals := make([]string, len(row))
		for i, v := range row {
			if v.IsNull() {
				vals[i] = "NULL"
			} else {
				vals[i] = strconv.Quote(v.ToString())
				if v.IsIntegral() || v.IsFloat() || v.Type() == sqltypes.Decimal {
					vals[i] = v.ToString()
				}
			}
		}
		out.WriteString(strings.Join(vals, " | ") + "\n")
	}
}
