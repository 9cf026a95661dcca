// Package monitor learns a Certus cluster from its nodes' HTTP /status:
// which nodes exist (following membership changes), which are Synced and
// Primary, how far each has applied, and from that the writer and
// reader hostgroups.
package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Monitor.
type Config struct {
	// Seeds are HTTP addresses to learn the cluster from.
	Seeds []string
	// Interval is the polling period.
	Interval time.Duration
	// MaxWriters is the size of the writer hostgroup.
	MaxWriters int
	// WriterIsAlsoReader puts writers in the reader hostgroup.
	WriterIsAlsoReader bool
	// MaxTransactionsBehind is the largest lag (in seqnos behind the most
	// advanced node) of a reader.
	MaxTransactionsBehind uint64
	// Logger receives role changes.
	Logger *slog.Logger
}

// Node is what the monitor knows of one node.
type Node struct {
	Name     string `json:"name"`
	ID       string `json:"id"`
	SQLAddr  string `json:"sql_addr"`
	HTTPAddr string `json:"http_addr"`
	// Up: the last poll got an answer.
	Up      bool   `json:"up"`
	State   string `json:"state"`
	Primary bool   `json:"primary"`
	Synced  bool   `json:"synced"`
	Applied uint64 `json:"applied"`
	// Writer and Reader are the node's hostgroups.
	Writer  bool      `json:"writer"`
	Reader  bool      `json:"reader"`
	LastErr string    `json:"last_error,omitempty"`
	Seen    time.Time `json:"last_seen"`
}

// Healthy reports whether the node may serve: up, Synced and Primary.
func (n *Node) Healthy() bool { return n.Up && n.Synced && n.Primary }

// Topology is one consistent view of the cluster.
type Topology struct {
	// Nodes by name, sorted.
	Nodes []*Node
	// Writers and Readers are the hostgroups (node names, sorted; the
	// first writer is the preferred one).
	Writers []*Node
	Readers []*Node
	// ClusterUUID is the GTID domain.
	ClusterUUID string
	// MaxApplied is the highest applied seqno of a healthy node.
	MaxApplied uint64
	// Version counts topology updates.
	Version uint64
}

// Node returns the node named name, or nil.
func (t *Topology) Node(name string) *Node {
	for _, n := range t.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Monitor polls the nodes.
type Monitor struct {
	cfg    Config
	client *http.Client
	topo   atomic.Pointer[Topology]
	// changed is closed and replaced on every topology update.
	mu      sync.Mutex
	changed chan struct{}

	// poll state, owned by the run loop
	addrs   map[string]bool // HTTP addresses to poll
	nodes   map[string]*Node
	writers []string
	version uint64
}

// statusDoc is the part of a node's /status the monitor reads.
type statusDoc struct {
	Name        string `json:"name"`
	ID          string `json:"id"`
	ClusterUUID string `json:"cluster_uuid"`
	State       string `json:"state"`
	Primary     bool   `json:"primary"`
	Synced      bool   `json:"synced"`
	Applied     uint64 `json:"applied"`
	SQLAddr     string `json:"sql_addr"`
	Members     []struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		SQLAddr  string `json:"sql_addr"`
		HTTPAddr string `json:"http_addr"`
	} `json:"members"`
}

// New returns a monitor; call Run to start polling.
func New(cfg Config) *Monitor {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxWriters < 1 {
		cfg.MaxWriters = 1
	}
	timeout := 5 * cfg.Interval
	if timeout < 500*time.Millisecond {
		timeout = 500 * time.Millisecond
	}
	m := &Monitor{
		cfg:     cfg,
		client:  &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}},
		changed: make(chan struct{}),
		addrs:   map[string]bool{},
		nodes:   map[string]*Node{},
	}
	for _, s := range cfg.Seeds {
		m.addrs[s] = true
	}
	m.topo.Store(&Topology{})
	return m
}

// SetConfig changes the hostgroup settings (applied at the next poll).
// Seeds and Interval are not changed.
func (m *Monitor) SetConfig(maxWriters int, writerIsAlsoReader bool, maxBehind uint64) {
	m.mu.Lock()
	if maxWriters < 1 {
		maxWriters = 1
	}
	m.cfg.MaxWriters, m.cfg.WriterIsAlsoReader, m.cfg.MaxTransactionsBehind = maxWriters, writerIsAlsoReader, maxBehind
	m.mu.Unlock()
}

// Topology returns the current view.
func (m *Monitor) Topology() *Topology { return m.topo.Load() }

// Changed returns a channel closed at the next topology update.
func (m *Monitor) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Run polls until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		m.Poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

type pollResult struct {
	addr string
	doc  *statusDoc
	err  error
}

// Poll polls every known node once and publishes the new topology. Nodes
// discovered through membership are polled in the same call, so the
// first topology already has the whole cluster.
func (m *Monitor) Poll(ctx context.Context) {
	m.mu.Lock()
	cfg := m.cfg
	m.mu.Unlock()
	uuid := m.topo.Load().ClusterUUID
	polled := map[string]bool{}
	for range 3 {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var results []pollResult
		for addr := range m.addrs {
			if polled[addr] {
				continue
			}
			polled[addr] = true
			wg.Add(1)
			go func(addr string) {
				defer wg.Done()
				doc, err := m.fetch(ctx, addr)
				mu.Lock()
				results = append(results, pollResult{addr, doc, err})
				mu.Unlock()
			}(addr)
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		if len(results) == 0 {
			break
		}
		uuid = m.apply(cfg, results, uuid, time.Now())
	}
	m.publish(cfg, uuid)
}

func (m *Monitor) fetch(ctx context.Context, addr string) (*statusDoc, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/status: %s", resp.Status)
	}
	var doc statusDoc
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, err
	}
	if doc.Name == "" {
		return nil, fmt.Errorf("/status without a node name")
	}
	return &doc, nil
}

// apply folds poll results into the node table and returns the cluster
// UUID.
func (m *Monitor) apply(cfg Config, results []pollResult, uuid string, now time.Time) string {
	byAddr := map[string]*Node{}
	for _, n := range m.nodes {
		byAddr[n.HTTPAddr] = n
	}
	// membership as a Primary node sees it
	var members map[string]string // name -> http addr
	for _, r := range results {
		if r.err != nil {
			if n := byAddr[r.addr]; n != nil {
				n.Up, n.LastErr = false, r.err.Error()
			}
			continue
		}
		d := r.doc
		if d.SQLAddr == "" {
			continue // an arbitrator: it stores no data and serves no SQL
		}
		n := m.nodes[d.Name]
		if n == nil {
			n = &Node{Name: d.Name}
			m.nodes[d.Name] = n
		}
		n.ID, n.HTTPAddr, n.SQLAddr = d.ID, r.addr, d.SQLAddr
		n.Up, n.State, n.Primary, n.Synced, n.Applied, n.LastErr, n.Seen = true, d.State, d.Primary, d.Synced, d.Applied, "", now
		if d.ClusterUUID != "" {
			uuid = d.ClusterUUID
		}
		if d.Primary && len(d.Members) > 0 && members == nil {
			members = map[string]string{}
			for _, mb := range d.Members {
				members[mb.Name] = mb.HTTPAddr
			}
		}
	}
	if members != nil {
		for name, addr := range members {
			if addr != "" && !m.addrs[addr] {
				m.addrs[addr] = true
				cfg.Logger.Info("proxy: discovered node", "name", name, "http", addr)
			}
		}
		// a node the primary component no longer lists, and that does not
		// answer, has left the cluster
		for name, n := range m.nodes {
			if _, ok := members[name]; !ok && !n.Up {
				delete(m.nodes, name)
				if !isSeed(cfg.Seeds, n.HTTPAddr) {
					delete(m.addrs, n.HTTPAddr)
				}
				cfg.Logger.Info("proxy: node left the cluster", "name", name)
			}
		}
	}
	return uuid
}

func isSeed(seeds []string, addr string) bool {
	for _, s := range seeds {
		if s == addr {
			return true
		}
	}
	return false
}

// publish computes the hostgroups and stores a new topology.
func (m *Monitor) publish(cfg Config, uuid string) {
	var nodes []*Node
	var maxApplied uint64
	for _, n := range m.nodes {
		if n.Healthy() && n.Applied > maxApplied {
			maxApplied = n.Applied
		}
	}
	for _, n := range m.nodes {
		c := *n
		nodes = append(nodes, &c)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	byName := map[string]*Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	// writers: keep the current ones while healthy, fill up by name
	var writers []string
	for _, w := range m.writers {
		if n := byName[w]; n != nil && n.Healthy() && len(writers) < cfg.MaxWriters {
			writers = append(writers, w)
		}
	}
	for _, n := range nodes {
		if len(writers) >= cfg.MaxWriters {
			break
		}
		if n.Healthy() && !contains(writers, n.Name) {
			writers = append(writers, n.Name)
		}
	}
	if !equal(writers, m.writers) {
		cfg.Logger.Info("proxy: writer hostgroup changed", "old", m.writers, "new", writers)
	}
	m.writers = writers
	t := &Topology{Nodes: nodes, ClusterUUID: uuid, MaxApplied: maxApplied}
	for _, w := range writers {
		byName[w].Writer = true
		t.Writers = append(t.Writers, byName[w])
	}
	for _, n := range nodes {
		if !n.Healthy() || (n.Writer && !cfg.WriterIsAlsoReader) {
			continue
		}
		if n.Applied+cfg.MaxTransactionsBehind < maxApplied {
			continue
		}
		n.Reader = true
		t.Readers = append(t.Readers, n)
	}
	m.version++
	t.Version = m.version
	m.topo.Store(t)
	m.mu.Lock()
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func equal(a, b []string) bool {
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
