// Package node assembles one Certus node: storage, the replication core,
// the transaction manager, the MySQL protocol server and the HTTP API.
package node

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/certusdb/certus/flowcontrol"
	"github.com/certusdb/certus/internal/pki"
	"github.com/certusdb/certus/replication"
	"github.com/certusdb/certus/sqlengine"
	"github.com/certusdb/certus/statetransfer"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/txn"
)

// Config configures a node.
type Config struct {
	// Name is the node's name (wsrep_node_name); unique in the cluster.
	Name string
	// DataDir holds the node's data and log.
	DataDir string
	// SQLAddr is the MySQL protocol address.
	SQLAddr string
	// HTTPAddr serves /health, /status and /metrics.
	HTTPAddr string
	// PeerAddr is where peers reach this node (raft traffic).
	PeerAddr string
	// Join lists peer addresses of a running cluster to join; empty
	// bootstraps a new cluster on an empty data dir.
	Join []string
	// ClusterName must match on every member.
	ClusterName string
	// ClusterSecret, when set, must match on every member.
	ClusterSecret string
	// PeerSecurity is how peer connections are protected besides the
	// secret.
	PeerSecurity
	// RootPassword is the built-in root account's password.
	RootPassword string
	// AdminToken guards the HTTP admin endpoints (internal/adminauth; "":
	// loopback clients only).
	AdminToken string
	// RootHost is the host part of the built-in root account: "localhost"
	// (the default when empty) admits only loopback clients, "%" any
	// client, as MariaDB's image does with MARIADB_ROOT_HOST.
	RootHost string
	// SSL offers TLS on the SQL port (have_ssl); SSLCert, SSLKey and SSLCA
	// are its certificate, key and the CA that verifies client
	// certificates, made in DataDir/tls (a self-signed CA and a
	// certificate it signed, as MySQL's auto_generate_certs) when SSLCert is
	// empty.
	SSL                    bool
	SSLCert, SSLKey, SSLCA string
	// SecureFilePriv is secure_file_priv: the directory whose files
	// LOAD_FILE, SELECT ... INTO OUTFILE and LOAD DATA INFILE of users with
	// the FILE privilege may read and write; "" is DataDir/files, created
	// if missing, and "NULL" lets no statement touch a file.
	SecureFilePriv string
	// FaultInjection enables POST /debug/fault (tests only): it cuts the
	// node off from named peers to simulate a network partition.
	FaultInjection bool
	// SyncCommit fsyncs the log before a commit is acknowledged (default).
	// Off, commits are written at once and fsynced once a second, like
	// innodb_flush_log_at_trx_commit=2, so a crash of the machine (not of
	// the process) may lose the last second.
	SyncCommit bool
	// GCacheSize bounds the raft log kept for members that fall behind
	// (Galera's gcache.size; 0: replication.DefaultLogRetentionBytes). A
	// member that needs older entries gets a state transfer (SST) instead
	// of the missing entries (IST).
	GCacheSize uint64
	// RowCacheSize is the size of the cache of rows that point reads
	// fetched (storage.Config.RowCacheBytes: 0 means
	// storage.DefaultRowCacheBytes, a negative size turns it off).
	RowCacheSize int64
	// SSTMaxRate limits the bytes per second this node sends to one
	// joiner as a state transfer donor (0: no limit).
	SSTMaxRate int64
	// SSTNice is the nice value of a donor's streaming thread (0: none;
	// see statetransfer.DonorConfig.Nice).
	SSTNice int
	// ProviderOptions sets provider options as Galera's
	// wsrep_provider_options does ("gcs.fc_limit = 100; gcs.fc_factor =
	// 1.0"); SET GLOBAL wsrep_provider_options changes them at runtime.
	ProviderOptions string
	// ApplierThreads is wsrep_applier_threads: more than one builds
	// write-sets' batches in parallel ahead of the in-order commit (see
	// replication.Config.ApplierThreads). SET GLOBAL changes it.
	ApplierThreads int
	// StreamThreshold is the size of a transaction's changes from which it
	// streams (replicates in fragments of StreamThreshold/8) even when its
	// session set no wsrep_trx_fragment_size; 0 never. A huge transaction
	// then never travels as one entry that stalls the commits behind it.
	StreamThreshold int64
	// StreamNice is the nice value a streaming transaction's statements
	// and the builders of provisional batches run at (0: unchanged; see
	// txn.Config.StreamNice and storage.Config.BuildNice).
	StreamNice int
	// CompactionNice is the nice value of pebble's compactions (0:
	// unchanged; see storage.Config.CompactionNice).
	CompactionNice int
	// SafeReads makes every causal read confirm the leader with a
	// heartbeat round instead of the leader's lease (see
	// replication.Config.SafeReads).
	SafeReads bool
	// Logger receives the node's log.
	Logger *slog.Logger
}

// Node is a running Certus node.
type Node struct {
	cfg  Config
	log  *slog.Logger
	Eng  *storage.Engine
	Repl *replication.Node
	Mgr  *txn.Manager
	SQL  *sqlengine.Server
	http *httpServer
	tr   *replication.TCPTransport
	// clientTLS is the SQL port's TLS material, peerTLS the peer
	// connections' (nil: none)
	clientTLS *pki.Server
	peerTLS   *pki.Peer

	donor  *statetransfer.Donor
	joiner *statetransfer.Joiner

	started time.Time
	wg      sync.WaitGroup

	// desync, rejecting and donorRejects are wsrep_desync,
	// wsrep_reject_queries (other than NONE) and
	// wsrep_sst_donor_rejects_queries: an operator took the node out of
	// service, or asked a donor to be.
	desync, rejecting, donorRejects atomic.Bool

	optMu sync.Mutex
	opts  providerOptions
	stopc chan struct{} // closed by Stop: ends the node's own loops
}

// ErrDataDirInUse is returned when another process holds the data dir.
var ErrDataDirInUse = errors.New("data directory is in use by another certus process")

// Start opens the data dir and starts serving.
func Start(cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ClusterName == "" {
		cfg.ClusterName = "certus"
	}
	if cfg.Name == "" {
		h, _ := os.Hostname()
		cfg.Name = h
	}
	log := cfg.Logger.With("node", cfg.Name)
	eng, err := openDataDir(cfg.DataDir, storage.Config{BuildNice: cfg.StreamNice, CompactionNice: cfg.CompactionNice, RowCacheBytes: cfg.RowCacheSize, Events: log})
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: log, Eng: eng, started: time.Now()}
	if err := n.start(); err != nil {
		n.Stop()
		return nil, err
	}
	return n, nil
}

// clientTLS is the SQL port's TLS material (see Config.SSL), or nil.
func clientTLS(cfg Config) (*pki.Server, error) {
	if !cfg.SSL {
		return nil, nil
	}
	return pki.NewServerOrAuto(pki.Files{Cert: cfg.SSLCert, Key: cfg.SSLKey, CA: cfg.SSLCA}, filepath.Join(cfg.DataDir, "tls"), cfg.Name)
}

// ReloadTLS reads the SQL port's certificate, key and CA again (SIGHUP, as
// ALTER INSTANCE RELOAD TLS does), and the peer connections' (SIGHUP).
func (n *Node) ReloadTLS() error {
	var errs []error
	if n.clientTLS != nil {
		errs = append(errs, n.clientTLS.Reload())
	}
	if n.peerTLS != nil {
		errs = append(errs, n.peerTLS.Reload())
	}
	return errors.Join(errs...)
}

// secureFiles is the file access of secure_file_priv dir (see
// Config.SecureFilePriv).
func secureFiles(dir, dataDir string) (*sqlengine.FileAccess, error) {
	switch dir {
	case "NULL":
		return sqlengine.NewFileAccess("", dataDir)
	case "":
		dir = filepath.Join(dataDir, "files")
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("secure_file_priv: %w", err)
		}
	}
	return sqlengine.NewFileAccess(dir, dataDir)
}

// openDataDir creates dir if needed and opens the storage in it, with sc
// but its Dir and LogSpans: a data dir holds the raft log, whose spans
// replication names.
func openDataDir(dir string, sc storage.Config) (*storage.Engine, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	sc.Dir = filepath.Join(dir, "db")
	sc.LogSpans = replication.LogSpans()
	eng, err := storage.Open(sc)
	if err != nil {
		if strings.Contains(err.Error(), "lock") {
			return nil, fmt.Errorf("%w: %s: %v", ErrDataDirInUse, dir, err)
		}
		return nil, err
	}
	return eng, nil
}

func (n *Node) start() error {
	cfg := n.cfg
	id, err := nodeID(n.Eng)
	if err != nil {
		return err
	}
	if err := checkClusterName(n.Eng, cfg.DataDir, cfg.ClusterName); err != nil {
		return err
	}
	fresh, err := replication.IsFresh(n.Eng)
	if err != nil {
		return err
	}
	if removed, err := replication.WasRemoved(n.Eng); err != nil {
		return err
	} else if removed {
		return fmt.Errorf("%w: %s belongs to a node that left the cluster; start with an empty --data-dir and --join to join again", replication.ErrRemoved, cfg.DataDir)
	}
	gcache := cfg.GCacheSize
	if gcache == 0 {
		gcache = replication.DefaultLogRetentionBytes
	}
	n.opts, err = providerOptions{flow: flowcontrol.Defaults(), gcache: gcache}.apply(cfg.ProviderOptions)
	if err != nil {
		return fmt.Errorf("--provider-options: %w", err)
	}
	self := replication.Member{ID: id, Name: cfg.Name, PeerAddr: cfg.PeerAddr, SQLAddr: cfg.SQLAddr, HTTPAddr: cfg.HTTPAddr}
	n.tr, n.peerTLS, err = peerTransport(cfg.PeerSecurity, id, cfg.PeerAddr, cfg.ClusterName, cfg.ClusterSecret, n.log)
	if err != nil {
		return err
	}
	// every port is bound before the node joins: one that joined and then
	// could not serve would be a member nobody reaches
	sqlLn, httpLn, err := listenClientPorts(cfg.SQLAddr, cfg.HTTPAddr)
	if err != nil {
		return err
	}
	defer func() {
		if n.SQL == nil {
			closeAll(sqlLn, httpLn)
		}
	}()
	ranges := replication.StateRanges()
	n.donor, err = statetransfer.NewDonor(statetransfer.DonorConfig{
		DB: n.Eng.DB(), Dir: filepath.Join(cfg.DataDir, "sst"), Ranges: ranges,
		Describe: replication.DescribeState, Applied: n.Eng.Applied, MaxRate: cfg.SSTMaxRate, Nice: cfg.SSTNice, Logger: n.log,
	})
	if err != nil {
		return err
	}
	n.tr.HandleStateTransfer(n.donor.Serve)
	wo := n.Eng.BottomWriterOptions()
	n.joiner = statetransfer.NewJoiner(statetransfer.JoinerConfig{
		Name: cfg.Name, DB: n.Eng.DB(), TempDir: filepath.Join(cfg.DataDir, "sst-incoming"), WriterOptions: &wo,
		Ranges: ranges, RecordKey: replication.TransferRecordKey,
		Dial: n.tr.DialStateTransfer, Logger: n.log,
	})
	n.Repl, err = replication.Start(replication.Config{
		Self:              self,
		ClusterName:       cfg.ClusterName,
		Engine:            n.Eng,
		Transport:         n.tr,
		Bootstrap:         fresh && len(cfg.Join) == 0,
		SyncLog:           cfg.SyncCommit,
		LogRetentionBytes: cfg.GCacheSize,
		FlowControl:       n.opts.flow,
		ApplierThreads:    cfg.ApplierThreads,
		Joiner:            n.joiner,
		SafeReads:         cfg.SafeReads,
		StallDumpDir:      cfg.DataDir,
		Logger:            n.log,
	})
	if err != nil {
		return err
	}
	n.tr.Attach(n.Repl)
	if fresh && len(cfg.Join) > 0 {
		n.log.Info("joining cluster", "via", cfg.Join)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		reply, err := n.tr.Join(ctx, cfg.Join, self)
		cancel()
		if err != nil {
			return err
		}
		n.tr.SetMembers(reply.Members)
		n.log.Info("added to the cluster; catching up", "cluster_uuid", reply.ClusterUUID, "members", len(reply.Members))
	}
	n.Mgr = txn.NewManager(txn.Config{Engine: n.Eng, Replicator: n.Repl, StreamBytes: cfg.StreamThreshold, StreamNice: cfg.StreamNice, Logger: n.log})
	n.Repl.SetRemoteWriteObserver(n.Mgr.RemoteWrite)
	p := sqlengine.NewProvider(n.Mgr)
	files, err := secureFiles(cfg.SecureFilePriv, cfg.DataDir)
	if err != nil {
		return err
	}
	if n.clientTLS, err = clientTLS(cfg); err != nil {
		return err
	}
	rsaKey, err := pki.RSAKey(filepath.Join(cfg.DataDir, "private_key.pem"))
	if err != nil {
		return err
	}
	n.SQL, err = sqlengine.NewServer(sqlengine.ServerConfig{
		Listener:     sqlLn,
		Provider:     p,
		Cluster:      clusterView{n},
		RootPassword: cfg.RootPassword,
		RootHost:     cfg.RootHost,
		Files:        files,
		TLS:          n.clientTLS,
		RSAKey:       rsaKey,
		Info: sqlengine.NodeInfo{
			NodeName: cfg.Name, NodeAddress: cfg.PeerAddr, ClusterName: cfg.ClusterName,
			ClusterAddress:  "certus://" + strings.Join(cfg.Join, ","),
			ProviderOptions: n.opts.String(), SetProviderOptions: n.setProviderOptions,
			ApplierThreads: cfg.ApplierThreads, SetApplierThreads: n.Repl.SetApplierThreads,
			SetMaintenance: n.setMaintenance, SyncCommit: cfg.SyncCommit,
		},
		Status: n.WsrepStatus,
		Logger: n.log,
	})
	if err != nil {
		return err
	}
	n.stopc = make(chan struct{})
	n.wg.Add(1)
	go n.reportWatermarks()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.SQL.Start(); err != nil && !errors.Is(err, net.ErrClosed) {
			n.log.Error("sql server stopped", "err", err)
		}
	}()
	if httpLn != nil {
		n.http = startHTTP(n, httpLn)
	}
	n.log.Info("node started", "sql", cfg.SQLAddr, "http", cfg.HTTPAddr, "peer", cfg.PeerAddr, "data_dir", cfg.DataDir, "sync_commit", cfg.SyncCommit)
	return nil
}

// listenClientPorts binds the SQL port and, unless httpAddr is empty, the
// HTTP port.
func listenClientPorts(sqlAddr, httpAddr string) (sqlLn, httpLn net.Listener, err error) {
	if sqlLn, err = net.Listen("tcp", sqlAddr); err != nil {
		return nil, nil, fmt.Errorf("sql port: %w", err)
	}
	if httpAddr == "" {
		return sqlLn, nil, nil
	}
	if httpLn, err = net.Listen("tcp", httpAddr); err != nil {
		sqlLn.Close()
		return nil, nil, fmt.Errorf("http port: %w", err)
	}
	return sqlLn, httpLn, nil
}

// closeAll closes the listeners that are not nil.
func closeAll(lns ...net.Listener) {
	for _, ln := range lns {
		if ln != nil {
			ln.Close()
		}
	}
}

// reportWatermarks keeps this node's open transactions counted by the
// certification index (txn.Manager.ReportWatermark), and its earlier
// incarnations out of it (replication.Node.RetireOrigins), once a second.
func (n *Node) reportWatermarks() {
	defer n.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-n.stopc:
			return
		case <-t.C:
		}
		if !n.Ready() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := n.Mgr.ReportWatermark(ctx); err != nil {
			n.log.Debug("reporting the low watermark", "err", err)
		} else if err := n.Repl.RetireOrigins(ctx); err != nil {
			n.log.Debug("retiring this node's earlier incarnations", "err", err)
		}
		cancel()
	}
}

const (
	metaNodeID      = "node_id"
	metaClusterName = "cluster_name"
)

// ErrWrongCluster is returned when the data dir belongs to a cluster with
// another name.
var ErrWrongCluster = errors.New("data directory belongs to another cluster")

// checkClusterName records the cluster name with a new data dir and
// refuses to start on a data dir of another cluster.
func checkClusterName(eng *storage.Engine, dataDir, cluster string) error {
	db := eng.DB()
	key := append([]byte{'m'}, metaClusterName...)
	v, closer, err := db.Get(key)
	if err == nil {
		defer closer.Close()
		if string(v) != cluster {
			return fmt.Errorf("%w: %s was created for cluster %q, not %q (use a new --data-dir or the right --cluster-name)", ErrWrongCluster, dataDir, string(v), cluster)
		}
		return nil
	}
	return db.Set(key, []byte(cluster), nil)
}

// nodeID returns the node's raft id, created with the data dir.
func nodeID(eng *storage.Engine) (uint64, error) {
	db := eng.DB()
	key := append([]byte{'m'}, metaNodeID...)
	v, closer, err := db.Get(key)
	if err == nil {
		defer closer.Close()
		if len(v) != 8 {
			return 0, storage.ErrCorruptData
		}
		return binary.BigEndian.Uint64(v), nil
	}
	var b [8]byte
	_, _ = crand.Read(b[:])
	id := binary.BigEndian.Uint64(b[:])>>1 | 1
	if err := db.Set(key, binary.BigEndian.AppendUint64(nil, id), nil); err != nil {
		return 0, err
	}
	return id, nil
}

// Ready reports whether the node serves SQL: it is in the primary
// component, not receiving a state transfer, and has applied what it had
// committed before it started (otherwise a read right after a restart could
// miss a commit it had acknowledged).
func (n *Node) Ready() bool { return n.Repl.Primary() && n.Repl.Recovered() }

// Left is closed once the node has been removed from the cluster (it left,
// or another member removed it); the node should then stop.
func (n *Node) Left() <-chan struct{} { return n.Repl.Removed() }

// Stop shuts the node down cleanly.
func (n *Node) Stop() {
	if n.stopc != nil {
		close(n.stopc)
	}
	if n.http != nil {
		n.http.close()
	}
	if n.SQL != nil {
		_ = n.SQL.Close()
	}
	if n.Repl != nil {
		// a leader that stops hands leadership over first, so the others
		// need not wait an election timeout (rolling restarts)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		n.Repl.HandOffLeadership(ctx)
		cancel()
		n.Repl.Stop()
	}
	if n.tr != nil {
		n.tr.Close()
	}
	if n.donor != nil {
		n.donor.Close()
	}
	n.wg.Wait()
	if n.Eng != nil {
		if err := n.Eng.Sync(); err != nil {
			n.log.Error("final sync", "err", err)
		}
		if err := n.Eng.Close(); err != nil {
			n.log.Error("closing storage", "err", err)
		}
	}
	n.log.Info("node stopped")
}

// clusterView adapts the node to sqlengine.Cluster.
type clusterView struct{ n *Node }

func (c clusterView) Primary() bool { return c.n.Ready() }
func (c clusterView) StartSyncWait() func(context.Context) error {
	return c.n.Repl.StartSyncWait()
}
func (c clusterView) WaitApplied(ctx context.Context, seqno uint64) error {
	return c.n.Repl.WaitApplied(ctx, seqno)
}
func (c clusterView) ClusterUUID() string { return c.n.Repl.Status().ClusterUUID }
func (c clusterView) Applied() uint64     { return c.n.Eng.Applied() }

// Donating implements sqlengine.Donor.
func (c clusterView) Donating() bool { return c.n.donating() }

// AutoIncrementStride implements sqlengine.AutoIncrementStrider.
func (c clusterView) AutoIncrementStride() (increment, offset uint64) {
	return c.n.Repl.AutoIncrementStride()
}

// FlushStatus implements sqlengine.StatusFlusher.
func (c clusterView) FlushStatus() { c.n.Repl.ResetAverages() }

// setMaintenance learns SET GLOBAL wsrep_desync, wsrep_reject_queries and
// wsrep_sst_donor_rejects_queries. A desynced node reports Donor/Desynced,
// asks no flow control of the others and fails /health; one that rejects
// queries (always, or while it is a donor) fails /health, so HAProxy and
// certus proxy send it nothing while it is serviced.
func (n *Node) setMaintenance(m sqlengine.Maintenance) {
	if n.desync.Swap(m.Desync) != m.Desync {
		n.Repl.SetDesync(m.Desync)
		n.log.Info("wsrep_desync changed", "desync", m.Desync)
	}
	if n.rejecting.Swap(m.Reject) != m.Reject {
		n.log.Info("wsrep_reject_queries changed", "rejecting", m.Reject)
	}
	if n.donorRejects.Swap(m.DonorRejects) != m.DonorRejects {
		n.log.Info("wsrep_sst_donor_rejects_queries changed", "on", m.DonorRejects)
	}
}

// donating reports whether the node serves a state transfer now.
func (n *Node) donating() bool { return n.donor != nil && n.donor.Serving() > 0 }

// setProviderOptions applies SET GLOBAL wsrep_provider_options.
func (n *Node) setProviderOptions(s string) (string, error) {
	n.optMu.Lock()
	defer n.optMu.Unlock()
	o, err := n.opts.apply(s)
	if err != nil {
		return "", err
	}
	n.opts = o
	n.Repl.SetFlowConfig(o.flow)
	n.log.Info("provider options changed", "options", o.String())
	return o.String(), nil
}
