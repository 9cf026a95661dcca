// Package proxy is Certus's consistency-aware MySQL proxy: it speaks the
// MySQL protocol to clients, learns the cluster's nodes and their state
// from the nodes' HTTP /status, splits reads from writes (one writer by
// default, readers for the rest), keeps each session's reads causal
// (they see the session's own commits), applies query rules (routing,
// critical reads, rate limits, delays), pools backend connections and
// offers an HTTP admin interface.
package proxy

import (
	"context"
	"crypto/rsa"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/certusdb/certus/internal/adminauth"
	"github.com/certusdb/certus/internal/comstatistics"
	"github.com/certusdb/certus/internal/directio"
	"github.com/certusdb/certus/internal/pki"
	"github.com/certusdb/certus/proxy/backend"
	"github.com/certusdb/certus/proxy/config"
	"github.com/certusdb/certus/proxy/monitor"
	"github.com/certusdb/certus/proxy/mysqlproto"
	"github.com/certusdb/certus/proxy/rules"
	"github.com/certusdb/certus/proxy/stats"
)

// ErrNoConfigFile is returned by Reload when the proxy was started
// without a configuration file.
var ErrNoConfigFile = errors.New("proxy: started without a configuration file")

// ErrNoCluster is returned by New when no cluster address is given.
var ErrNoCluster = errors.New("proxy: no cluster address (--cluster)")

// Proxy is a running proxy.
type Proxy struct {
	log  *slog.Logger
	path string
	// override is applied to each configuration Reload reads: the
	// command line's settings win over the file's.
	override func(*config.Config)
	cfg      atomic.Pointer[config.Config]
	rules    atomic.Pointer[rules.Set]
	mon      *monitor.Monitor
	pool     *backend.Pool
	stats    *stats.Registry
	// conns are the client and backend connections, read blocked outside
	// Go's poller while few are open (internal/directio): a session's
	// goroutine waits on one of them at a time, its client's or a
	// backend's, so two per core may be.
	conns directio.Group

	// known holds, per node name, a seqno the node is known to have
	// applied (learned from commits and causal waits), ahead of what the
	// monitor last saw.
	known  sync.Map // string -> *atomic.Uint64
	served sync.Map // string -> *atomic.Int64
	rr     atomic.Uint64
	connID atomic.Uint32
	// clients counts the open client connections, logged in or not
	// (max_connections).
	clients atomic.Int64
	// causalWaits counts reads that waited on a reader for the session's
	// last commit; causalFallbacks those that then went to the writer.
	causalWaits     atomic.Int64
	causalFallbacks atomic.Int64
	// gtidQueries counts commits whose GTID the node did not send in the
	// OK packet, so the proxy had to ask WSREP_LAST_WRITTEN_GTID().
	gtidQueries atomic.Int64
	// started is when the proxy started (Uptime of COM_STATISTICS).
	started time.Time

	// tls is the TLS offered to clients (nil: none), rsaKey the key of
	// caching_sha2_password's exchange without TLS (nil: none), sha2Cache
	// the users who passed its full authentication (user -> sha2Hash of
	// the password), backendTLS the TLS of node connections (nil: none).
	tls *pki.Server
	// guard admits requests to the admin interface's endpoints other
	// than /status and /backends.
	guard      *adminauth.Guard
	rsaKey     *rsa.PrivateKey
	sha2Cache  sync.Map
	backendTLS *tls.Config

	ctx     context.Context
	cancel  context.CancelFunc
	ln      net.Listener
	adminLn net.Listener
	admin   *http.Server
	wg      sync.WaitGroup

	mu       sync.Mutex
	sessions map[uint32]*session
}

// Options are what New needs besides the configuration.
type Options struct {
	// Path is the configuration file Reload reads ("" if none); Override,
	// if not nil, changes what it reads.
	Path     string
	Override func(*config.Config)
	// AdminToken guards the admin interface (internal/adminauth; "":
	// loopback clients only).
	AdminToken string
	Log        *slog.Logger
}

// New builds a proxy from cfg.
func New(cfg *config.Config, opt Options) (*Proxy, error) {
	log, path, override := opt.Log, opt.Path, opt.Override
	if log == nil {
		log = slog.Default()
	}
	if len(cfg.Cluster) == 0 {
		return nil, ErrNoCluster
	}
	rs, err := rules.Compile(cfg.Rules)
	if err != nil {
		return nil, err
	}
	for _, u := range cfg.Users {
		if u.Password == "" {
			log.Warn("proxy: a user without a password: anyone who reaches the proxy may log in as it", "user", u.Name)
		}
	}
	p := &Proxy{log: log, path: path, override: override, stats: stats.New(), sessions: map[uint32]*session{}, started: time.Now(),
		guard: adminauth.New(opt.AdminToken)}
	p.conns.PerProc = 2
	if err := p.setupTLS(cfg); err != nil {
		return nil, err
	}
	p.cfg.Store(cfg)
	p.rules.Store(rs)
	p.mon = monitor.New(monitor.Config{
		Seeds: cfg.Cluster, Interval: time.Duration(cfg.MonitorInterval), MaxWriters: cfg.MaxWriters,
		WriterIsAlsoReader: *cfg.WriterIsAlsoReader, MaxTransactionsBehind: cfg.MaxTransactionsBehind, Logger: log,
	})
	p.pool = backend.NewPool(cfg.MaxIdlePerNode)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Start listens for clients (and on the admin address), starts the
// monitor and returns.
func (p *Proxy) Start() error {
	cfg := p.cfg.Load()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	p.ln = ln
	if cfg.AdminListen != "" {
		aln, err := net.Listen("tcp", cfg.AdminListen)
		if err != nil {
			ln.Close()
			return err
		}
		p.adminLn = aln
		p.log.Info("proxy: admin endpoints other than /health, /metrics, /status and /backends", "access", p.guard.Mode())
		p.admin = &http.Server{Handler: p.adminHandler(), ReadHeaderTimeout: 5 * time.Second}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if err := p.admin.Serve(aln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				p.log.Error("proxy: admin server stopped", "err", err)
			}
		}()
	}
	p.wg.Add(3)
	go func() {
		defer p.wg.Done()
		p.mon.Run(p.ctx)
	}()
	go func() {
		defer p.wg.Done()
		p.watchTopology()
	}()
	go func() {
		defer p.wg.Done()
		p.acceptLoop()
	}()
	return nil
}

// Addr is the client listen address.
func (p *Proxy) Addr() net.Addr { return p.ln.Addr() }

// AdminAddr is the admin listen address (nil if disabled).
func (p *Proxy) AdminAddr() net.Addr {
	if p.adminLn == nil {
		return nil
	}
	return p.adminLn.Addr()
}

// Close stops listening, closes client sessions and pooled connections.
func (p *Proxy) Close() {
	p.cancel()
	p.ln.Close()
	if p.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = p.admin.Shutdown(ctx)
		cancel()
	}
	p.mu.Lock()
	for _, s := range p.sessions {
		s.c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	p.pool.Close()
}

// Reload re-reads the configuration file: rules, hostgroup settings and
// causal settings take effect for the next statement, accounts and
// require_secure_transport for the next login. Addresses and accounts of
// running connections do not change. The TLS certificate, key and CA
// files are read again for the logins that follow (a failure keeps the
// old ones and is returned).
func (p *Proxy) Reload() error {
	if p.path == "" {
		return ErrNoConfigFile
	}
	if p.tls != nil {
		if err := p.tls.Reload(); err != nil {
			return err
		}
	}
	cfg, err := config.Load(p.path)
	if err != nil {
		return err
	}
	if p.override != nil {
		p.override(cfg)
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	rs, err := rules.Compile(cfg.Rules)
	if err != nil {
		return err
	}
	old := p.cfg.Load()
	cfg.Listen, cfg.AdminListen, cfg.Cluster = old.Listen, old.AdminListen, old.Cluster
	p.cfg.Store(cfg)
	p.rules.Store(rs)
	p.mon.SetConfig(cfg.MaxWriters, *cfg.WriterIsAlsoReader, cfg.MaxTransactionsBehind)
	p.log.Info("proxy: configuration reloaded", "rules", len(rs.Rules))
	return nil
}

// WaitReady waits until the monitor knows a writer.
func (p *Proxy) WaitReady(ctx context.Context) error {
	for {
		ch := p.mon.Changed()
		if len(p.mon.Topology().Writers) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("proxy: no writer found: %w", ctx.Err())
		case <-ch:
		}
	}
}

// watchTopology closes pooled connections to nodes that are no longer
// healthy or left the cluster.
func (p *Proxy) watchTopology() {
	healthy := map[string]bool{}
	for {
		ch := p.mon.Changed()
		select {
		case <-p.ctx.Done():
			return
		case <-ch:
		}
		now := map[string]bool{}
		for _, n := range p.mon.Topology().Nodes {
			if n.Healthy() {
				now[n.SQLAddr] = true
			}
		}
		for addr := range healthy {
			if !now[addr] {
				p.pool.Drop(addr)
			}
		}
		healthy = now
	}
}

func (p *Proxy) acceptLoop() {
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			p.log.Error("proxy: accept", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if p.clients.Add(1) > int64(p.cfg.Load().MaxConnections) {
			p.clients.Add(-1)
			refuse(nc)
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		if d := directio.New(nc, &p.conns); d != nil {
			nc = d
		}
		s := p.newSession(nc)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(s)
		}()
	}
}

// refuse answers a client past max_connections with MySQL's 1040 in place
// of the greeting, as MySQL does, and closes its connection. It writes one
// small packet to a new socket, which does not block.
func refuse(nc net.Conn) {
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write(refusal)
	nc.Close()
}

// refusal is the packet refuse sends.
var refusal = mysqlproto.AppendPacket(nil, 0, mysqlproto.AppendErr(nil, mysqlproto.NewError(1040, "08004", "Too many connections")))

// serve runs one client session; a panic ends only that session.
func (p *Proxy) serve(s *session) {
	p.mu.Lock()
	p.sessions[s.id] = s
	p.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("proxy: panic in client session", "conn", s.id, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
		s.close()
		p.mu.Lock()
		delete(p.sessions, s.id)
		p.mu.Unlock()
		p.clients.Add(-1)
	}()
	if err := s.handshake(p.cfg.Load()); err != nil {
		p.log.Debug("proxy: handshake failed", "conn", s.id, "remote", s.c.RemoteAddr().String(), "err", err)
		return
	}
	if err := s.loop(); err != nil {
		p.log.Debug("proxy: session ended", "conn", s.id, "err", err)
	}
}

// knownApplied returns the highest seqno node is known to have applied.
func (p *Proxy) knownApplied(t *monitor.Topology, node string) uint64 {
	var v uint64
	if n := t.Node(node); n != nil {
		v = n.Applied
	}
	if k, ok := p.known.Load(node); ok {
		if kv := k.(*atomic.Uint64).Load(); kv > v {
			v = kv
		}
	}
	return v
}

// noteApplied records that node has applied seqno.
func (p *Proxy) noteApplied(node string, seqno uint64) {
	k, _ := p.known.LoadOrStore(node, new(atomic.Uint64))
	a := k.(*atomic.Uint64)
	for {
		cur := a.Load()
		if cur >= seqno || a.CompareAndSwap(cur, seqno) {
			return
		}
	}
}

// statistics answers COM_STATISTICS (mysqladmin status) for the proxy
// itself: its uptime, its client sessions and the statements it ran on
// the nodes; it keeps no table or slow-query counts of its own.
func (p *Proxy) statistics() string {
	p.mu.Lock()
	threads := int64(len(p.sessions))
	p.mu.Unlock()
	var questions int64
	p.served.Range(func(_, v any) bool {
		questions += v.(*atomic.Int64).Load()
		return true
	})
	return comstatistics.Line(comstatistics.Counts{Uptime: int64(time.Since(p.started).Seconds()), Threads: threads, Questions: questions})
}

// countServed counts a statement served by node.
func (p *Proxy) countServed(node string) {
	k, _ := p.served.LoadOrStore(node, new(atomic.Int64))
	k.(*atomic.Int64).Add(1)
}

func (p *Proxy) servedBy(node string) int64 {
	if k, ok := p.served.Load(node); ok {
		return k.(*atomic.Int64).Load()
	}
	return 0
}

// Error codes the proxy itself sends.
var (
	errNoWriter   = mysqlproto.NewError(1047, "08S01", "proxy: no writer available (no Synced Primary node)")
	errUnknownCom = mysqlproto.NewError(1047, "08S01", "Unknown command")
	errMalformed  = mysqlproto.NewError(1835, "HY000", "Malformed communication packet")
	errTooLarge   = mysqlproto.NewError(1153, "08S01", "Got a packet bigger than 'max_allowed_packet' bytes")
	// errInactive is MySQL's ER_CLIENT_INTERACTION_TIMEOUT, sent before
	// it closes a connection idle for wait_timeout.
	errInactive = mysqlproto.NewError(4031, "HY000", "The client was disconnected by the server because of inactivity. See wait_timeout and interactive_timeout for configuring this behavior.")
	// errLongData is MySQL's answer to an execution whose parameters,
	// sent with COM_STMT_SEND_LONG_DATA, outgrew max_allowed_packet.
	errLongData = mysqlproto.NewError(1105, "HY000", "Parameter of prepared statement which is set through mysql_send_long_data() is longer than 'max_allowed_packet' bytes")
)

// errLostBackend is what a client gets when its statement's node
// connection broke: 2013 "Lost connection ... during query", the error
// ProxySQL sends for a backend lost during a query. It tells the client
// that the statement's outcome is unknown (a write may have committed),
// and no driver runs the statement again by itself. Outside a transaction
// the client's own connection stays usable, so it can act on the error;
// ProxySQL would close it.
func errLostBackend(node string, err error) *mysqlproto.Error {
	return mysqlproto.NewError(2013, "HY000", "Lost connection to backend %s during query: %v", node, err)
}
