package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // for creating the sbtest database
)

// System is a running database under test.
type System interface {
	// Targets are its SQL endpoints (one per node).
	Targets() []Target
	// Stop shuts it down.
	Stop()
}

// Certus is a set of certus node processes started for a benchmark.
type Certus struct {
	procs   []*exec.Cmd
	targets []Target
	// HTTP are the nodes' HTTP addresses (for profiles).
	HTTP      []string
	dir       string
	firstPeer string
	// Keep leaves the data dirs and logs in Dir after Stop.
	Keep bool
	// user logs the benchmarks in: root until the bench user exists.
	user, password string
}

// The account every benchmark logs in with, on Certus as on the anchors'
// MariaDB and Galera (which create it with ALL ON *.*): an application's
// user, not the node's root.
const (
	benchUser     = "sb"
	benchPassword = "sb"
)

// Dir holds the nodes' data dirs and logs.
func (c *Certus) Dir() string { return c.dir }

// StartCertus starts nodes certus processes from bin (the first
// bootstraps, the others join) with extra flags, in which {node} stands
// for each node's name (n1, n2, ...), waits until they are Synced, and
// creates the sbtest database.
func StartCertus(bin string, nodes int, extra ...string) (*Certus, error) {
	dir, err := os.MkdirTemp("", "certus-bench-")
	if err != nil {
		return nil, err
	}
	c := &Certus{dir: dir, user: "root"}
	for i := 1; i <= nodes; i++ {
		httpAddr, err := c.startNode(bin, i, extra)
		if err == nil {
			err = waitHealth(httpAddr, time.Minute)
		}
		if err != nil {
			c.Stop()
			return nil, fmt.Errorf("certus n%d: %w (log in %s)", i, err, dir)
		}
	}
	if err := c.createBenchUser(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// startNode starts node i (from 1; the first bootstraps, the others join
// it) and returns its HTTP address.
func (c *Certus) startNode(bin string, i int, extra []string) (string, error) {
	sqlAddr, httpAddr, peerAddr := freeAddr(), freeAddr(), freeAddr()
	name := fmt.Sprintf("n%d", i)
	args := []string{"node", "--name", name, "--data-dir", c.DataDir(i),
		"--sql-addr", sqlAddr, "--http-addr", httpAddr, "--peer-addr", peerAddr}
	if i == 1 {
		c.firstPeer = peerAddr
	} else {
		args = append(args, "--join", c.firstPeer)
	}
	for _, f := range extra {
		args = append(args, strings.ReplaceAll(f, "{node}", name))
	}
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(c.dir, fmt.Sprintf("n%d.log", i)))
	if err != nil {
		return "", err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return "", err
	}
	c.procs = append(c.procs, cmd)
	host, port, _ := net.SplitHostPort(sqlAddr)
	p, _ := strconv.Atoi(port)
	c.targets = append(c.targets, Target{Name: fmt.Sprintf("certus n%d", i), Host: host, Port: p, User: c.user, Password: c.password})
	c.HTTP = append(c.HTTP, httpAddr)
	return httpAddr, nil
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHealth(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if healthy(addr) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("not Synced after %v", timeout)
}

// healthy reports whether a node's /health answers 200 (Synced, Primary).
func healthy(addr string) bool {
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Lead makes node i (from 1) the cluster's raft leader (certus lead) and
// returns its answer.
func (c *Certus) Lead(i int) (string, error) {
	cl := &http.Client{Timeout: 40 * time.Second}
	resp, err := cl.Post("http://"+c.HTTP[i-1]+"/lead", "text/plain", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("node %d: %s: %s", i, resp.Status, msg)
	}
	return msg, nil
}

// createBenchUser creates, as root on the first node, the sbtest database
// and the bench user with the anchors' grants, waits until every node lets
// that user in, and makes it the targets' user.
func (c *Certus) createBenchUser() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	root, err := sql.Open("mysql", dsn(c.targets[0]))
	if err != nil {
		return err
	}
	defer root.Close()
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS sbtest",
		fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY '%s'", benchUser, benchPassword),
		fmt.Sprintf("GRANT ALL ON *.* TO '%s'@'%%'", benchUser),
	} {
		if _, err := root.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	c.user, c.password = benchUser, benchPassword
	for i := range c.targets {
		t := &c.targets[i]
		t.User, t.Password = c.user, c.password
		// the other nodes apply the grant a moment later
		for {
			err := ping(ctx, *t)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%s: bench user cannot log in: %w", t.Name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func dsn(t Target) string {
	return fmt.Sprintf("%s:%s@tcp(%s:%d)/", t.User, t.Password, t.Host, t.Port)
}

func ping(ctx context.Context, t Target) error {
	db, err := sql.Open("mysql", dsn(t))
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

// Targets implements System.
func (c *Certus) Targets() []Target { return c.targets }

// PID is the process id of node i (from 1).
func (c *Certus) PID(i int) int { return c.procs[i-1].Process.Pid }

// Stop implements System.
func (c *Certus) Stop() {
	for _, p := range c.procs {
		if p.Process != nil {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range c.procs {
		if p.Process != nil {
			done := make(chan struct{})
			go func() { _ = p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = p.Process.Kill()
			}
		}
	}
	if !c.Keep {
		os.RemoveAll(c.dir)
	}
}

// Anchor is a MariaDB or Galera system started by the anchor scripts of
// ../shared/anchors/galera.
type Anchor struct {
	dir     string
	script  string
	targets []Target
	nodes   int      // cluster size the scripts were started with
	env     []string // added to the scripts' environment
}

// AnchorsAvailable reports whether the anchor scripts and MariaDB are here.
func AnchorsAvailable(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "single.sh")); err != nil {
		return false
	}
	_, err := exec.LookPath("mariadbd")
	return err == nil
}

// StartMariaDB starts the plain MariaDB of the anchor scripts in dir
// (port 4306; TLSFiles.AnchorScripts makes scripts that set up TLS), with
// env added to the scripts' environment.
func StartMariaDB(dir string, env ...string) (*Anchor, error) {
	a := &Anchor{dir: dir, script: "single.sh", env: env, targets: []Target{{Name: "mariadb", Host: "127.0.0.1", Port: 4306, User: "sb", Password: "sb"}}}
	if err := a.run("start"); err != nil {
		return nil, err
	}
	return a, nil
}

// StartGalera starts the Galera cluster of n nodes of the anchor scripts
// in dir (ports 4307+), with env added to the scripts' environment.
func StartGalera(dir string, n int, env ...string) (*Anchor, error) {
	a := &Anchor{dir: dir, script: "cluster.sh", nodes: n, env: env}
	for i := 1; i <= n; i++ {
		a.targets = append(a.targets, Target{Name: fmt.Sprintf("galera n%d", i), Host: "127.0.0.1", Port: 4306 + i, User: "sb", Password: "sb"})
	}
	if err := a.run("start", strconv.Itoa(n)); err != nil {
		a.Stop() // the nodes that did start
		return nil, err
	}
	return a, nil
}

func (a *Anchor) run(args ...string) error {
	cmd := exec.Command("bash", append([]string{filepath.Join(a.dir, a.script)}, args...)...)
	cmd.Env = append(os.Environ(), a.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %v: %v\n%s", a.script, args, err, out)
	}
	return nil
}

// Targets implements System.
func (a *Anchor) Targets() []Target { return a.targets }

// Stop implements System.
func (a *Anchor) Stop() {
	if a.nodes > 0 {
		_ = a.run("stop", strconv.Itoa(a.nodes))
		return
	}
	_ = a.run("stop")
}
