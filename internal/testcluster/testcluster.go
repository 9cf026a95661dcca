// Package testcluster starts real certus processes for system tests: it
// builds the binary once, runs nodes on free loopback ports, waits until
// they are ready, and can stop, kill -9, pause and restart them.
package testcluster

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the MySQL driver tests talk through
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds cmd/certus once per test process and returns its path.
// CERTUS_BIN overrides it with a prebuilt binary.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("CERTUS_BIN"); p != "" {
			binPath = p
			return
		}
		dir, err := os.MkdirTemp("", "certus-bin-")
		if err != nil {
			buildErr = err
			return
		}
		NoteSources()
		binPath = filepath.Join(dir, "certus")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/certus")
		cmd.Dir = moduleRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// NoteSources looks at every Go source, go.mod and go.sum of the module,
// so that go test's result cache takes a change to any of them as a
// change of the test's inputs. A test that builds and runs certus (or
// builds anything else from the module) does not import what it runs:
// without this, `go test ./...` answered "ok (cached)" for the system
// tests after the node's code had changed.
func NoteSources() {
	_ = filepath.WalkDir(moduleRoot(), func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && path != moduleRoot() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata"):
			return filepath.SkipDir
		case !d.IsDir() && (strings.HasSuffix(path, ".go") || d.Name() == "go.mod" || d.Name() == "go.sum"):
			_, _ = os.Stat(path) // recorded by the test log the cache checks
		}
		return nil
	})
}

// Cleanup removes the binary Binary built (call it from TestMain after
// the tests ran).
func Cleanup() {
	if binPath != "" && os.Getenv("CERTUS_BIN") == "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// FreePort returns a free loopback TCP address. It picks below the
// kernel's ephemeral range (32768 and up), so that the port is not taken
// by an outgoing connection before the node binds it.
func FreePort(t testing.TB) string {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000)))
		if err == nil {
			addr := ln.Addr().String()
			ln.Close()
			return addr
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Node is one certus node process.
type Node struct {
	t        testing.TB
	Name     string
	DataDir  string
	SQLAddr  string
	HTTPAddr string
	PeerAddr string
	Args     []string // extra flags
	LogPath  string

	mu       sync.Mutex
	cmd      *exec.Cmd
	dbs      []*sql.DB
	logStart int64 // the log's size when the process started
}

// NewNode prepares (does not start) a node with fresh ports and data dir.
func NewNode(t testing.TB, name string, args ...string) *Node {
	dir := t.TempDir()
	return &Node{
		t: t, Name: name, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, name+".log"),
		SQLAddr: FreePort(t), HTTPAddr: FreePort(t), PeerAddr: FreePort(t), Args: args,
	}
}

// Start starts the process and waits until it answers SQL. A node that
// could not bind one of its ports (another process took it meanwhile)
// gets new ones and starts again.
func (n *Node) Start() {
	n.t.Helper()
	_, statErr := os.Stat(n.DataDir)
	fresh := os.IsNotExist(statErr) // a restarted member keeps its addresses
	for attempt := 0; ; attempt++ {
		if err := n.StartNoWait(); err != nil {
			n.t.Fatal(err)
		}
		err := n.WaitReady(60 * time.Second)
		if err == nil {
			break
		}
		if fresh && attempt < 3 && !n.Running() && strings.Contains(n.LogTail(5), "address already in use") {
			n.SQLAddr, n.HTTPAddr, n.PeerAddr = FreePort(n.t), FreePort(n.t), FreePort(n.t)
			continue
		}
		n.t.Fatalf("%s: %v\n%s", n.Name, err, n.LogTail(40))
	}
	if err := n.WaitSynced(60 * time.Second); err != nil {
		n.t.Fatalf("%s: %v\n%s", n.Name, err, n.LogTail(40))
	}
}

// StartNoWait starts the process.
func (n *Node) StartNoWait() error {
	args := []string{"node", "--name", n.Name, "--data-dir", n.DataDir, "--sql-addr", n.SQLAddr,
		"--http-addr", n.HTTPAddr, "--peer-addr", n.PeerAddr}
	return n.StartCommand(append(args, n.Args...)...)
}

// Command runs certus with args to completion and returns its output.
func Command(t testing.TB, args ...string) (string, error) {
	out, err := exec.Command(Binary(t), args...).CombinedOutput()
	return string(out), err
}

// StartCommand starts certus with the given arguments (a subcommand and
// its flags) as this node's process.
func (n *Node) StartCommand(args ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	logf, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if st, err := logf.Stat(); err == nil {
		n.logStart = st.Size()
	}
	cmd := exec.Command(Binary(n.t), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	n.cmd = cmd
	go func() {
		_ = cmd.Wait()
		logf.Close()
	}()
	n.t.Cleanup(func() { n.Kill() })
	return nil
}

// WaitReady waits until the node answers "SELECT 1".
func (n *Node) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		var db *sql.DB
		db, err = sql.Open("mysql", n.DSN(""))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err = db.ExecContext(ctx, "SELECT 1")
			cancel()
			db.Close()
			if err == nil {
				return nil
			}
		}
		if !n.Running() {
			return fmt.Errorf("process exited")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %v: %v", timeout, err)
}

// Running reports whether the process is alive.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil && n.cmd.Process != nil && n.cmd.ProcessState == nil && syscall.Kill(n.cmd.Process.Pid, 0) == nil
}

// PID is the process id (0 if not started).
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// DSN returns a go-sql-driver DSN for root on this node.
func (n *Node) DSN(db string) string {
	return fmt.Sprintf("root@tcp(%s)/%s?interpolateParams=false&timeout=5s&readTimeout=60s&writeTimeout=60s", n.SQLAddr, db)
}

// DB opens a connection pool to db (closed at cleanup).
func (n *Node) DB(db string) *sql.DB {
	n.t.Helper()
	d, err := sql.Open("mysql", n.DSN(db))
	if err != nil {
		n.t.Fatal(err)
	}
	n.mu.Lock()
	n.dbs = append(n.dbs, d)
	n.mu.Unlock()
	n.t.Cleanup(func() { d.Close() })
	return d
}

// Stop sends SIGTERM and waits for the process to exit. The test fails
// if the node's shutdown reports an error closing its storage (such as a
// leaked pebble iterator or snapshot).
func (n *Node) Stop() {
	n.mu.Lock()
	from := n.logStart
	n.mu.Unlock()
	n.signalAndWait(syscall.SIGTERM, 60*time.Second)
	b, _ := os.ReadFile(n.LogPath)
	if from <= int64(len(b)) {
		b = b[from:]
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `msg="closing storage"`) {
			n.t.Errorf("%s: unclean shutdown: %s", n.Name, line)
		}
	}
}

// Kill sends SIGKILL (kill -9) and waits for the process to exit.
func (n *Node) Kill() {
	n.signalAndWait(syscall.SIGKILL, 10*time.Second)
}

// Pause sends SIGSTOP; Resume sends SIGCONT.
func (n *Node) Pause() { n.signal(syscall.SIGSTOP) }

// Resume continues a paused node.
func (n *Node) Resume() { n.signal(syscall.SIGCONT) }

func (n *Node) signal(s syscall.Signal) {
	if pid := n.PID(); pid != 0 {
		_ = syscall.Kill(pid, s)
	}
}

func (n *Node) signalAndWait(s syscall.Signal, timeout time.Duration) {
	pid := n.PID()
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
	_ = syscall.Kill(pid, s)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			break
		}
		// reap happens in the Wait goroutine; a zombie still answers kill 0
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(st), ") Z ") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil && s != syscall.SIGKILL {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	n.mu.Lock()
	for _, d := range n.dbs {
		d.Close()
	}
	n.dbs = nil
	n.cmd = nil
	n.mu.Unlock()
	time.Sleep(50 * time.Millisecond)
}

// Status fetches /status.
func (n *Node) Status() (map[string]any, error) {
	resp, err := http.Get("http://" + n.HTTPAddr + "/status")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// Health returns the HTTP status code of /health.
func (n *Node) Health() int {
	resp, err := http.Get("http://" + n.HTTPAddr + "/health")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// LogTail returns the last lines of the node's log.
func (n *Node) LogTail(lines int) string {
	b, _ := os.ReadFile(n.LogPath)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// Cluster is a set of nodes.
type Cluster struct {
	Nodes []*Node
}

// StartCluster starts n nodes: the first bootstraps, the others join it.
func StartCluster(t testing.TB, n int, args ...string) *Cluster {
	t.Helper()
	c := &Cluster{}
	for i := 0; i < n; i++ {
		nd := NewNode(t, fmt.Sprintf("n%d", i+1), args...)
		if i > 0 {
			nd.Args = append(nd.Args, "--join", c.Nodes[0].PeerAddr)
		}
		c.Nodes = append(c.Nodes, nd)
	}
	c.Nodes[0].Start()
	for _, nd := range c.Nodes[1:] {
		nd.Start()
	}
	for _, nd := range c.Nodes {
		if err := nd.WaitSynced(60 * time.Second); err != nil {
			t.Fatalf("%s: %v\n%s", nd.Name, err, nd.LogTail(40))
		}
	}
	return c
}

// WaitSynced waits until /health answers 200 (Synced and Primary).
func (n *Node) WaitSynced(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if n.Health() == http.StatusOK {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not Synced after %v", timeout)
}
