// Command proxy benchmarks the seed scenario of the Certus proxy: 10%
// writes and 90% reads, 5% of the reads critical (they must see every
// write acknowledged before they started), against
//
//	(a) one node,
//	(b) a 3-node cluster with wsrep_sync_wait=1 on every connection,
//	(c) the same cluster through `certus proxy` with causal routing
//	    (critical reads by a rule with critical=sync_wait),
//	(d) the cluster on direct connections without sync wait (stale reads
//	    possible): the baseline for the latency the proxy adds under load.
//
// It starts the nodes and the proxy itself, counts stale reads (a read of
// the client's own row older than its last write, or a critical read
// older than what any client had acknowledged), and prints one table.
// It then measures the latency the proxy adds to a point read against a
// direct connection, next to HAProxy in TCP mode in front of the same node
// when haproxy is installed. It holds flock /tmp/bench.lock while it runs.
//
//	go run ./bench/proxy [-duration 15s] [-clients 12] [-profile DIR]
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sys/unix"

	"github.com/certusdb/certus/bench"
)

func main() {
	duration := flag.Duration("duration", 15*time.Second, "run time of each setup")
	clients := flag.Int("clients", 12, "concurrent client sessions")
	rowsPer := flag.Int("rows", 10, "rows owned by each client")
	bin := flag.String("certus", "", "certus binary (default: go build ./cmd/certus)")
	probes := flag.Int("probes", 3000, "point reads of the latency probe")
	profileDir := flag.String("profile", "", "save CPU profiles of the proxy and the nodes during (c) into this directory")
	proxyCfg := flag.String("proxy-config", `{"users": [{"name": "root"}], "rules": [{"name": "critical", "match": "/\\* critical \\*/", "critical": "sync_wait"}]}`,
		"the proxy's configuration (JSON)")
	splitCPUs := flag.Bool("split-cpus", false, "run the nodes on the first half of the CPUs and the clients, the proxy and HAProxy on the other half, as when the proxy runs on the application's hosts")
	flag.Parse()
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))

	lock, err := os.OpenFile("/tmp/bench.lock", os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		log.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		log.Fatal(err)
	}
	defer lock.Close()

	dir, err := os.MkdirTemp("", "certus-proxy-bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if *bin == "" {
		*bin = filepath.Join(dir, "certus")
		out, err := exec.Command("go", "build", "-o", *bin, "./cmd/certus").CombinedOutput()
		if err != nil {
			log.Fatalf("go build (run from the repository root): %v\n%s", err, out)
		}
	}
	var procs []*exec.Cmd
	stopAll := func() {
		for _, p := range procs {
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			_ = p.Wait()
		}
	}
	defer stopAll()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		stopAll()
		os.RemoveAll(dir)
		os.Exit(1)
	}()
	var nodeCPUs, appCPUs string
	if *splitCPUs {
		nodeCPUs, appCPUs = cpuHalves()
		if err := pinSelf(appCPUs); err != nil {
			log.Fatalf("-split-cpus: %v", err)
		}
	}
	startProg := func(name, prog string, args ...string) {
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			log.Fatal(err)
		}
		if *splitCPUs {
			cpus := appCPUs
			if name != "proxy" && name != "haproxy" {
				cpus = nodeCPUs
			}
			args = append([]string{"-c", cpus, prog}, args...)
			prog = "taskset"
		}
		c := exec.Command(prog, args...)
		c.Stdout, c.Stderr = logf, logf
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			log.Fatal(err)
		}
		procs = append(procs, c)
	}
	start := func(name string, args ...string) { startProg(name, *bin, args...) }

	type node struct{ sql, http, peer string }
	var nodes []node
	for i := 0; i < 3; i++ {
		n := node{freePort(), freePort(), freePort()}
		args := []string{"node", "--name", fmt.Sprintf("n%d", i+1), "--data-dir", filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			"--sql-addr", n.sql, "--http-addr", n.http, "--peer-addr", n.peer}
		if i > 0 {
			args = append(args, "--join", nodes[0].peer)
		}
		start(fmt.Sprintf("n%d", i+1), args...)
		waitHealthy(n.http)
		nodes = append(nodes, n)
	}
	cfgPath := filepath.Join(dir, "proxy.json")
	if err := os.WriteFile(cfgPath, []byte(*proxyCfg), 0o644); err != nil {
		log.Fatal(err)
	}
	proxyAddr, adminAddr := freePort(), freePort()
	start("proxy", "proxy", "--listen", proxyAddr, "--admin-listen", adminAddr, "--cluster", nodes[0].http, "--config", cfgPath)
	waitProxy(adminAddr)

	setup := open(fmt.Sprintf("root@tcp(%s)/", nodes[0].sql))
	must(setup.Exec("CREATE DATABASE bench"))
	must(setup.Exec("CREATE TABLE bench.kv (id INT PRIMARY KEY, v BIGINT NOT NULL)"))
	nrows := *clients * *rowsPer
	for i := 0; i < nrows; i++ {
		must(setup.Exec("INSERT INTO bench.kv VALUES (?, 0)", i))
	}
	setup.Close()

	w := workload{clients: *clients, rowsPer: *rowsPer, dur: *duration, acked: make([]atomic.Int64, nrows)}
	fmt.Printf("seed scenario: %d client sessions, 10%% writes / 90%% reads, 5%% of reads critical, %v per setup, 3 nodes on %d cores\n",
		*clients, *duration, runtime.NumCPU())
	if *splitCPUs {
		fmt.Printf("nodes on CPUs %s; clients, proxy and HAProxy on CPUs %s\n", nodeCPUs, appCPUs)
	}
	fmt.Println()
	var results []result
	results = append(results, w.run("(a) one node", func(i int) string { return dsn(nodes[0].sql, "") }))
	results = append(results, w.run("(b) cluster, wsrep_sync_wait=1", func(i int) string {
		return dsn(nodes[i%3].sql, "wsrep_sync_wait=1")
	}))
	if *profileDir != "" {
		targets := map[string]string{"proxy": adminAddr}
		for i, n := range nodes {
			targets[fmt.Sprintf("n%d", i+1)] = n.http
		}
		go profileAll(targets, *profileDir, *duration)
	}
	results = append(results, w.run("(c) proxy, causal routing", func(i int) string { return dsn(proxyAddr, "") }))
	results = append(results, w.run("(d) cluster, no sync wait", func(i int) string { return dsn(nodes[i%3].sql, "") }))

	fmt.Printf("%-32s %9s %13s %13s %9s %9s %9s %9s %7s %7s\n", "setup", "writes/s", "crit reads/s", "other reads/s",
		"read p50", "read p95", "write p50", "write p95", "stale", "errors")
	for _, r := range results {
		fmt.Printf("%-32s %9.0f %13.0f %13.0f %8.2fms %8.2fms %8.2fms %8.2fms %7d %7d\n", r.name, r.writes, r.crit, r.reads,
			ms(r.readLat.pct(50)), ms(r.readLat.pct(95)), ms(r.writeLat.pct(50)), ms(r.writeLat.pct(95)), r.stale, r.errors)
	}
	b, c, d := results[1], results[2], results[3]
	fmt.Printf("\n(c) vs (b): reads/s %+.0f%% (all reads: %.0f vs %.0f), writes/s %+.0f%%\n",
		100*((c.reads+c.crit)/(b.reads+b.crit)-1), c.reads+c.crit, b.reads+b.crit, 100*(c.writes/b.writes-1))
	fmt.Printf("(c) vs (d), the same load on direct connections that may read stale rows: reads/s %+.0f%%, read p50 %+.0f%%, mean %+.0f%%\n",
		100*((c.reads+c.crit)/(d.reads+d.crit)-1), 100*(float64(c.readLat.pct(50))/float64(d.readLat.pct(50))-1),
		100*(c.readLat.mean()/d.readLat.mean()-1))

	// latency the proxy adds to one point read (one session, no writes)
	// HAProxy in TCP mode in front of the same node, when installed: the
	// cost of a hop that does not even parse the protocol
	haproxyAddr := ""
	if prog, err := exec.LookPath("haproxy"); err == nil {
		haproxyAddr = freePort()
		cfg := fmt.Sprintf("global\n  maxconn 256\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n"+
			"listen node2\n  bind %s\n  server n2 %s\n", haproxyAddr, nodes[1].sql)
		cfgFile := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
			log.Fatal(err)
		}
		startProg("haproxy", prog, "-db", "-f", cfgFile)
		waitListening(haproxyAddr)
	}
	fmt.Printf("\nlatency probe, %d sequential point reads, one session, alternating:\n", *probes)
	hops := []struct{ name, addr string }{{"direct to a node", nodes[1].sql}, {"through the proxy", proxyAddr}}
	if haproxyAddr != "" {
		hops = append(hops, struct{ name, addr string }{"through HAProxy (TCP)", haproxyAddr})
	}
	lats := make([]*latencies, len(hops))
	for i := range lats {
		lats[i] = &latencies{}
	}
	const rounds = 5
	for r := 0; r < rounds; r++ {
		for i, h := range hops {
			lats[i].merge(probe(dsn(h.addr, ""), *probes/rounds, nrows))
		}
	}
	direct := lats[0]
	for i, h := range hops {
		fmt.Printf("  %-22s p50 %.3fms  mean %.3fms", h.name+":", ms(lats[i].pct(50)), ms(lats[i].mean()))
		if i > 0 {
			fmt.Printf("  (%+.0f%% p50, %+.0f%% mean)", 100*(float64(lats[i].pct(50))/float64(direct.pct(50))-1),
				100*(lats[i].mean()/direct.mean()-1))
		}
		fmt.Println()
	}
	var backends []struct {
		Name    string `json:"name"`
		Queries int64  `json:"queries"`
	}
	if resp, err := http.Get("http://" + adminAddr + "/backends"); err == nil {
		_ = json.NewDecoder(resp.Body).Decode(&backends)
		resp.Body.Close()
		fmt.Printf("\nstatements per node through the proxy: %+v\n", backends)
	}
	var st map[string]any
	if resp, err := http.Get("http://" + adminAddr + "/status"); err == nil {
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		fmt.Printf("causal waits on readers: %v, fallbacks to the writer: %v\n", st["causal_waits"], st["causal_fallbacks"])
	}
}

type workload struct {
	clients, rowsPer int
	dur              time.Duration
	// acked[id] is the highest value of row id some client has seen
	// committed: a critical read started later must not return less
	acked []atomic.Int64
}

type result struct {
	name                string
	writes, crit, reads float64
	readLat, writeLat   *latencies
	stale, errors       int64
}

func (w *workload) run(name string, dsnFor func(i int) string) result {
	var writes, crit, reads, stale, errs atomic.Int64
	readLat, writeLat := &latencies{}, &latencies{}
	ctx, cancel := context.WithTimeout(context.Background(), w.dur)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < w.clients; i++ {
		db := open(dsnFor(i))
		db.SetMaxOpenConns(1) // one session per client
		wg.Add(1)
		go func(i int, db *sql.DB) {
			defer wg.Done()
			defer db.Close()
			rng := rand.New(rand.NewSource(int64(i)))
			own := func() int { return i*w.rowsPer + rng.Intn(w.rowsPer) }
			last := map[int]int64{}
			for ctx.Err() == nil {
				t0 := time.Now()
				switch r := rng.Float64(); {
				case r < 0.10:
					id := own()
					if last[id] == 0 {
						last[id] = w.acked[id].Load()
					}
					nv := last[id] + 1
					if _, err := db.ExecContext(ctx, "UPDATE kv SET v = ? WHERE id = ?", nv, id); err != nil {
						if ctx.Err() == nil {
							errs.Add(1)
						}
						continue
					}
					writeLat.add(time.Since(t0))
					last[id] = nv
					w.acked[id].Store(nv)
					writes.Add(1)
				case r < 0.10+0.90*0.05:
					id := rng.Intn(len(w.acked))
					before := w.acked[id].Load()
					var v int64
					if err := db.QueryRowContext(ctx, "SELECT v FROM kv WHERE id = ? /* critical */", id).Scan(&v); err != nil {
						if ctx.Err() == nil {
							errs.Add(1)
						}
						continue
					}
					readLat.add(time.Since(t0))
					if v < before {
						stale.Add(1)
					}
					crit.Add(1)
				default:
					id := own()
					var v int64
					if err := db.QueryRowContext(ctx, "SELECT v FROM kv WHERE id = ?", id).Scan(&v); err != nil {
						if ctx.Err() == nil {
							errs.Add(1)
						}
						continue
					}
					readLat.add(time.Since(t0))
					if v < last[id] {
						stale.Add(1)
					}
					reads.Add(1)
				}
			}
		}(i, db)
	}
	wg.Wait()
	s := w.dur.Seconds()
	return result{name: name, writes: float64(writes.Load()) / s, crit: float64(crit.Load()) / s, reads: float64(reads.Load()) / s,
		readLat: readLat, writeLat: writeLat, stale: stale.Load(), errors: errs.Load()}
}

// probe times n sequential point reads on one session.
func probe(dsn string, n, rows int) *latencies {
	db := open(dsn)
	defer db.Close()
	db.SetMaxOpenConns(1)
	l := &latencies{}
	var v int64
	for i := 0; i < n+100; i++ {
		t0 := time.Now()
		if err := db.QueryRow("SELECT v FROM kv WHERE id = ?", i%rows).Scan(&v); err != nil {
			log.Fatalf("probe: %v", err)
		}
		if i >= 100 { // warm-up
			l.add(time.Since(t0))
		}
	}
	return l
}

type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// merge adds o's samples to l.
func (l *latencies) merge(o *latencies) {
	l.mu.Lock()
	l.d = append(l.d, o.d...)
	l.mu.Unlock()
}

func (l *latencies) pct(p int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	return l.d[(len(l.d)-1)*p/100]
}

func (l *latencies) mean() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum time.Duration
	for _, d := range l.d {
		sum += d
	}
	return float64(sum) / float64(len(l.d))
}

func ms[T time.Duration | float64](d T) float64 { return float64(d) / 1e6 }

func dsn(addr, params string) string {
	s := fmt.Sprintf("root@tcp(%s)/bench?timeout=5s&readTimeout=60s&writeTimeout=60s", addr)
	if params != "" {
		s += "&" + params
	}
	return s
}

func open(dsn string) *sql.DB {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		log.Fatal(err)
	}
	return db
}

func must(_ sql.Result, err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func freePort() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHealthy(addr string) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	log.Fatalf("node %s not healthy", addr)
}

// profileAll saves a CPU profile of each target (name → HTTP address with
// /debug/pprof) over the middle of a run of dur.
func profileAll(targets map[string]string, dir string, dur time.Duration) {
	var wg sync.WaitGroup
	for name, addr := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := bench.SaveCPUProfile(addr, filepath.Join(dir, name+".cpu.pprof"), dur/5, dur*3/5); err != nil {
				log.Printf("profile of %s: %v", name, err)
			}
		}()
	}
	wg.Wait()
}

// waitListening waits until addr accepts TCP connections.
func waitListening(addr string) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	log.Fatalf("%s does not accept connections", addr)
}

func waitProxy(admin string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var st struct {
			Readers []string `json:"readers"`
		}
		if resp, err := http.Get("http://" + admin + "/status"); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if len(st.Readers) == 3 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	log.Fatal("proxy did not learn the cluster")
}

// cpuHalves splits the CPUs this process may use into two lists for
// taskset: the first half and the rest.
func cpuHalves() (first, second string) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		log.Fatalf("-split-cpus: %v", err)
	}
	var cpus []string
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, strconv.Itoa(i))
		}
	}
	if len(cpus) < 2 {
		log.Fatal("-split-cpus needs at least two CPUs")
	}
	h := len(cpus) / 2
	return strings.Join(cpus[:h], ","), strings.Join(cpus[h:], ",")
}

// pinSelf restricts every thread of this process (and so the threads it
// starts later) to the CPUs of list.
func pinSelf(list string) error {
	var set unix.CPUSet
	for _, c := range strings.Split(list, ",") {
		i, err := strconv.Atoi(c)
		if err != nil {
			return err
		}
		set.Set(i)
	}
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tids {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return err
		}
	}
	return nil
}
