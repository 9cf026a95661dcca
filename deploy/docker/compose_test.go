// Package docker_test checks the shipped image and compose file: it builds
// the image with build.sh, starts docker-compose.yml's three nodes and
// proxy (each node a host of its own on a private network), and uses them
// from outside as an application and a DBA would, through a network
// partition, a killed node, restarts of the whole cluster and a node whose
// volume was lost. It is skipped where Docker or docker-compose is
// missing.
package docker_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/certusdb/certus/internal/testcluster"
)

// rootPassword is the compose file's default root password, which its
// proxy.json also uses.
const rootPassword = "certus"

// stack is one docker-compose project of docker-compose.yml.
type stack struct {
	t       *testing.T
	project string
	env     []string
	ports   map[string]int     // published SQL port by service
	dbs     map[string]*sql.DB // connection pools by service
}

func TestComposeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image and starts containers")
	}
	// a published port accepts connections before its node listens: the
	// driver's log of those EOFs is noise here
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	for _, tool := range []string{"docker", "docker-compose"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Skipf("docker daemon not available: %v\n%s", err, out)
	}
	if out, err := exec.Command("gcc", "-print-file-name=libicuuc.a").Output(); err != nil || !strings.HasPrefix(string(out), "/") {
		t.Skip("no gcc with ICU's static libraries (libicu-dev) to link the image's static binary")
	}
	id := strconv.Itoa(os.Getpid())
	image := "certus-test:" + id
	testcluster.NoteSources() // the image is built from the module's sources
	t.Log("building the image with build.sh")
	if out, err := exec.Command("./build.sh", image).CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", image).Run() })

	s := &stack{t: t, project: "certustest" + id, ports: map[string]int{}, dbs: map[string]*sql.DB{}}
	s.env = append(os.Environ(), "CERTUS_IMAGE="+image)
	for _, svc := range []string{"N1", "N2", "N3", "PROXY"} {
		p := freePort(t)
		s.env = append(s.env, fmt.Sprintf("CERTUS_%s_PORT=%d", svc, p))
		s.ports[strings.ToLower(svc)] = p
	}
	for _, v := range []string{"N1_HTTP", "N2_HTTP", "N3_HTTP", "PROXY_ADMIN"} {
		s.env = append(s.env, fmt.Sprintf("CERTUS_%s_PORT=%d", v, freePort(t)))
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.compose("logs", "--no-color", "--tail", "60")
			t.Logf("container logs:\n%s", out)
		}
		_, _ = s.compose("down", "-v", "--remove-orphans")
	})
	if out, err := s.compose("up", "-d"); err != nil {
		t.Fatalf("docker-compose up: %v\n%s", err, out)
	}
	nodes := []string{"n1", "n2", "n3"}
	for _, n := range nodes {
		s.waitPrimary(n, 3, 2*time.Minute)
	}

	// from outside the containers, root logs in with its password (the
	// compose file's --root-host %); without it, access is denied
	n1 := s.db("n1")
	var user string
	if err := n1.QueryRow("SELECT CURRENT_USER()").Scan(&user); err != nil || user != "root@%" {
		t.Fatalf("CURRENT_USER() = %q, %v; want root@%%", user, err)
	}
	noPass, _ := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.ports["n1"]))
	var me *mysql.MySQLError
	if err := noPass.Ping(); !errors.As(err, &me) || me.Number != 1045 {
		t.Fatalf("root without a password: %v, want error 1045", err)
	}
	noPass.Close()

	// writes through the proxy and every node; causal reads everywhere
	s.waitServing("proxy", time.Minute)
	proxy := s.db("proxy")
	mustExec(t, proxy, "CREATE DATABASE app")
	mustExec(t, proxy, "CREATE TABLE app.t (id INT PRIMARY KEY, node VARCHAR(8))")
	next := 0
	insert := func(n string) error {
		next++
		// a statement during an election (after a node died) may get
		// 1047; as an application would, try again for a while
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			_, err := s.db(n).Exec("INSERT INTO app.t VALUES (?, ?)", next, n)
			if !errors.As(err, &me) || me.Number != 1047 || time.Now().After(deadline) {
				return err
			}
		}
	}
	for _, n := range append(nodes, "proxy") {
		if err := insert(n); err != nil {
			t.Fatalf("insert on %s: %v", n, err)
		}
	}
	s.requireRows(nodes, next)

	// a partition longer than a peer connection's dead-peer timeout:
	// n3 turns non-Primary and refuses queries, the others go on, and n3
	// is back soon after the network heals
	if s.canPartition() {
		s.partition("n3", nodes)
		deadline := time.Now().Add(15 * time.Second)
		for {
			_, err := s.db("n3").Exec("SELECT COUNT(*) FROM app.t")
			if errors.As(err, &me) && me.Number == 1047 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("n3 cut off: query answered %v, want 1047 (08S01)", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		for i := 0; i < 10; i++ {
			if err := insert([]string{"n1", "n2", "proxy"}[i%3]); err != nil {
				t.Fatalf("insert while n3 is cut off: %v", err)
			}
		}
		// as in Galera, the others' view drops the silent member
		s.waitPrimary("n1", 2, 15*time.Second)
		time.Sleep(8 * time.Second) // past the dead-peer timeout
		healed := time.Now()
		s.heal("n3")
		s.waitPrimary("n3", 3, 10*time.Second)
		t.Logf("n3 Primary again %v after the network healed", time.Since(healed).Round(100*time.Millisecond))
		s.requireRows(nodes, next)
	} else {
		t.Log("no nsenter/iptables (or not root): partition step skipped")
	}

	// kill -9 a node; the others keep committing; it comes back with its
	// volume and catches up
	if out, err := exec.Command("docker", "kill", s.container("n2")).CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v\n%s", err, out)
	}
	s.closeDB("n2")
	for i := 0; i < 10; i++ {
		if err := insert([]string{"n1", "n3", "proxy"}[i%3]); err != nil {
			t.Fatalf("insert while n2 is down: %v", err)
		}
	}
	s.waitPrimary("n3", 2, 15*time.Second)
	if out, err := s.compose("up", "-d", "n2"); err != nil {
		t.Fatalf("restart n2: %v\n%s", err, out)
	}
	s.waitPrimary("n2", 3, time.Minute)
	s.waitPrimary("n1", 3, 15*time.Second)
	s.requireRows(nodes, next)

	// the whole cluster, stopped cleanly or killed at once, comes back by
	// itself (no node to bootstrap by hand, unlike Galera's
	// safe_to_bootstrap) with every acknowledged commit
	for _, stop := range [][]string{{"stop"}, {"kill"}} {
		if out, err := s.compose(stop...); err != nil {
			t.Fatalf("docker-compose %s: %v\n%s", stop[0], err, out)
		}
		for _, n := range append(nodes, "proxy") {
			s.closeDB(n)
		}
		if out, err := s.compose("up", "-d"); err != nil {
			t.Fatalf("docker-compose up after %s: %v\n%s", stop[0], err, out)
		}
		for _, n := range nodes {
			s.waitPrimary(n, 3, time.Minute)
		}
		s.waitServing("proxy", time.Minute)
		if err := insert("proxy"); err != nil {
			t.Fatalf("insert through the proxy after docker-compose %s: %v", stop[0], err)
		}
		s.requireRows(nodes, next)
	}

	// n2's host comes back with an empty volume (a lost disk): the node
	// joins under its old name and address, replaces its old self once
	// the others no longer hear from it, and gets the data by state
	// transfer
	if out, err := s.compose("rm", "-s", "-f", "n2"); err != nil {
		t.Fatalf("docker-compose rm n2: %v\n%s", err, out)
	}
	s.closeDB("n2")
	if out, err := exec.Command("docker", "volume", "rm", s.project+"_n2-data").CombinedOutput(); err != nil {
		t.Fatalf("docker volume rm: %v\n%s", err, out)
	}
	if err := insert("n1"); err != nil {
		t.Fatalf("insert while n2 is gone: %v", err)
	}
	if out, err := s.compose("up", "-d", "n2"); err != nil {
		t.Fatalf("docker-compose up n2 with a new volume: %v\n%s", err, out)
	}
	s.waitPrimary("n2", 3, 2*time.Minute)
	s.requireRows(nodes, next)
}

// compose runs docker-compose on the stack's project.
func (s *stack) compose(args ...string) ([]byte, error) {
	cmd := exec.Command("docker-compose", append([]string{"-p", s.project, "-f", "docker-compose.yml"}, args...)...)
	cmd.Env = s.env
	return cmd.CombinedOutput()
}

// container returns the container ID of a service.
func (s *stack) container(svc string) string {
	out, err := s.compose("ps", "-q", svc)
	if err != nil || len(strings.TrimSpace(string(out))) == 0 {
		s.t.Fatalf("no container for %s: %v %s", svc, err, out)
	}
	return strings.TrimSpace(string(out))
}

// db returns a connection pool to a service's published SQL port.
func (s *stack) db(svc string) *sql.DB {
	if db := s.dbs[svc]; db != nil {
		return db
	}
	db, err := sql.Open("mysql", fmt.Sprintf("root:%s@tcp(127.0.0.1:%d)/?timeout=5s&readTimeout=30s", rootPassword, s.ports[svc]))
	if err != nil {
		s.t.Fatal(err)
	}
	s.dbs[svc] = db
	s.t.Cleanup(func() { db.Close() })
	return db
}

// closeDB drops a service's pool (its connections died with it).
func (s *stack) closeDB(svc string) {
	if db := s.dbs[svc]; db != nil {
		db.Close()
		delete(s.dbs, svc)
	}
}

// waitPrimary waits until a node is Synced in a primary component of size.
func (s *stack) waitPrimary(svc string, size int, timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		st, err := status(s.db(svc), "wsrep_cluster_status", "wsrep_local_state_comment", "wsrep_cluster_size")
		last = fmt.Sprint(st, err)
		if err == nil && st["wsrep_cluster_status"] == "Primary" && st["wsrep_local_state_comment"] == "Synced" &&
			st["wsrep_cluster_size"] == strconv.Itoa(size) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.t.Fatalf("%s not Synced and Primary in a cluster of %d after %v: %s", svc, size, timeout, last)
}

// waitServing waits until a service answers a query. A published port
// accepts connections (docker's proxy) before the process inside the
// container listens, and the proxy's container may still be starting when
// the nodes are Synced.
func (s *stack) waitServing(svc string, timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		var one int
		if err = s.db(svc).QueryRow("SELECT 1").Scan(&one); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.t.Fatalf("%s not answering after %v: %v", svc, timeout, err)
}

// requireRows checks that every node, reading causally, holds rows 1..n
// and that their table checksums agree.
func (s *stack) requireRows(nodes []string, n int) {
	s.t.Helper()
	var want string
	for _, svc := range nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := s.db(svc).Conn(ctx)
		if err != nil {
			s.t.Fatalf("%s: %v", svc, err)
		}
		var count, max int
		var sum string
		if _, err = c.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1"); err == nil {
			err = c.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM app.t").Scan(&count, &max)
		}
		if err == nil {
			var table string
			err = c.QueryRowContext(ctx, "CHECKSUM TABLE app.t").Scan(&table, &sum)
		}
		c.Close()
		cancel()
		if err != nil || count != n || max != n {
			s.t.Fatalf("%s: %d rows up to id %d, %v; want %d", svc, count, max, err, n)
		}
		if want == "" {
			want = sum
		} else if sum != want {
			s.t.Fatalf("%s: CHECKSUM TABLE %s, another node %s", svc, sum, want)
		}
	}
}

// canPartition reports whether iptables can be run in a container's
// network namespace (nsenter, as root).
func (s *stack) canPartition() bool {
	if os.Geteuid() != 0 {
		return false
	}
	for _, tool := range []string{"nsenter", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			return false
		}
	}
	return s.inNetns("n1", "iptables", "-L", "OUTPUT", "-n") == nil
}

// inNetns runs a command in a service container's network namespace.
func (s *stack) inNetns(svc string, args ...string) error {
	pid, err := exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", s.container(svc)).Output()
	if err != nil {
		return err
	}
	out, err := exec.Command("nsenter", append([]string{"-t", strings.TrimSpace(string(pid)), "-n"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %v: %s", args, err, out)
	}
	return nil
}

// ip returns a service container's address on the compose network.
func (s *stack) ip(svc string) string {
	out, err := exec.Command("docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", s.container(svc)).Output()
	if err != nil {
		s.t.Fatalf("docker inspect %s: %v", svc, err)
	}
	return strings.TrimSpace(string(out))
}

// partition drops all traffic between svc and the other nodes (in svc's
// network namespace: the host still reaches it on its published ports).
func (s *stack) partition(svc string, nodes []string) {
	for _, other := range nodes {
		if other == svc {
			continue
		}
		ip := s.ip(other)
		for _, rule := range [][]string{{"INPUT", "-s", ip}, {"OUTPUT", "-d", ip}} {
			if err := s.inNetns(svc, append([]string{"iptables", "-A", rule[0]}, append(rule[1:], "-j", "DROP")...)...); err != nil {
				s.t.Fatal(err)
			}
		}
	}
}

// heal removes partition's rules.
func (s *stack) heal(svc string) {
	if err := s.inNetns(svc, "iptables", "-F"); err != nil {
		s.t.Fatal(err)
	}
}

func status(db *sql.DB, names ...string) (map[string]string, error) {
	rows, err := db.Query("SHOW STATUS WHERE Variable_name IN ('" + strings.Join(names, "','") + "')")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
