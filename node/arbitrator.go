package node

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/certusdb/certus/internal/pki"
	"github.com/certusdb/certus/replication"
	"github.com/certusdb/certus/storage"
)

// ArbitratorConfig configures an arbitrator.
type ArbitratorConfig struct {
	// Name is the arbitrator's name; unique in the cluster.
	Name string
	// DataDir holds its raft log and identity (no data).
	DataDir string
	// PeerAddr is where members reach it.
	PeerAddr string
	// HTTPAddr, when set, serves /health and /status.
	HTTPAddr string
	// Join lists peer addresses of the running cluster to join.
	Join []string
	// ClusterName and ClusterSecret must match the cluster's.
	ClusterName   string
	ClusterSecret string
	// PeerSecurity is how peer connections are protected besides the
	// secret.
	PeerSecurity
	// Logger receives its log.
	Logger *slog.Logger
}

// Arbitrator is a member that votes but stores no data, like Galera's
// garbd: two data nodes and an arbitrator keep a primary component when
// either data node is lost.
type Arbitrator struct {
	cfg ArbitratorConfig
	log *slog.Logger
	eng *storage.Engine
	tr  *replication.TCPTransport
	// peerTLS is the peer connections' TLS material (nil: none)
	peerTLS *pki.Peer
	repl    *replication.Node
	http    *http.Server
}

// ReloadTLS reads the peer certificate, key and CA again (SIGHUP).
func (a *Arbitrator) ReloadTLS() error {
	if a.peerTLS == nil {
		return nil
	}
	return a.peerTLS.Reload()
}

// StartArbitrator joins the cluster as an arbitrator.
func StartArbitrator(cfg ArbitratorConfig) (*Arbitrator, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ClusterName == "" {
		cfg.ClusterName = "certus"
	}
	if cfg.Name == "" {
		h, _ := os.Hostname()
		cfg.Name = "garb-" + h
	}
	if len(cfg.Join) == 0 {
		return nil, errors.New("an arbitrator joins a running cluster: --join is required")
	}
	eng, err := openDataDir(cfg.DataDir, storage.Config{CacheBytes: 8 << 20, RowCacheBytes: -1})
	if err != nil {
		return nil, err
	}
	a := &Arbitrator{cfg: cfg, log: cfg.Logger.With("arbitrator", cfg.Name), eng: eng}
	if err := a.start(); err != nil {
		a.Stop()
		return nil, err
	}
	return a, nil
}

func (a *Arbitrator) start() error {
	cfg := a.cfg
	if err := checkClusterName(a.eng, cfg.DataDir, cfg.ClusterName); err != nil {
		return err
	}
	id, err := nodeID(a.eng)
	if err != nil {
		return err
	}
	fresh, err := replication.IsFresh(a.eng)
	if err != nil {
		return err
	}
	self := replication.Member{ID: id, Name: cfg.Name, PeerAddr: cfg.PeerAddr, HTTPAddr: cfg.HTTPAddr, Arbitrator: true}
	a.tr, a.peerTLS, err = peerTransport(cfg.PeerSecurity, id, cfg.PeerAddr, cfg.ClusterName, cfg.ClusterSecret, a.log)
	if err != nil {
		return err
	}
	a.repl, err = replication.Start(replication.Config{
		Self: self, ClusterName: cfg.ClusterName, Engine: a.eng, Transport: a.tr, Arbitrator: true, Logger: a.log,
	})
	if err != nil {
		return err
	}
	a.tr.Attach(a.repl)
	if fresh {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		reply, err := a.tr.Join(ctx, cfg.Join, self)
		cancel()
		if err != nil {
			return err
		}
		a.tr.SetMembers(reply.Members)
		a.log.Info("joined the cluster as an arbitrator", "cluster_uuid", reply.ClusterUUID)
	}
	if cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
			if !a.repl.Primary() {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("non-Primary\n"))
				return
			}
			_, _ = w.Write([]byte("Primary\n"))
		})
		mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
			st := a.repl.Status()
			doc := StatusDoc{Name: cfg.Name, ID: hexID(st.ID), ClusterName: st.ClusterName, ClusterUUID: st.ClusterUUID,
				State: "Arbitrator", Primary: st.Primary, Leader: hexID(st.Leader), Term: st.Term, Applied: st.Applied,
				Committed: st.Committed, PeerAddr: cfg.PeerAddr, PeerSecurity: a.tr.Security(), Arbitrator: true, LogBytes: st.LogBytes, LogFirst: st.LogFirst,
				Members: memberDocs(st)}
			w.Header().Set("Content-Type", "application/json")
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			_ = enc.Encode(doc)
		})
		a.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = a.http.Serve(ln) }()
	}
	a.log.Info("arbitrator started", "peer", cfg.PeerAddr, "http", cfg.HTTPAddr)
	return nil
}

// Primary reports whether the arbitrator is in the primary component.
func (a *Arbitrator) Primary() bool { return a.repl != nil && a.repl.Primary() }

// Stop shuts the arbitrator down.
func (a *Arbitrator) Stop() {
	if a.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = a.http.Shutdown(ctx)
		cancel()
	}
	if a.repl != nil {
		a.repl.Stop()
	}
	if a.tr != nil {
		a.tr.Close()
	}
	if a.eng != nil {
		_ = a.eng.Sync()
		_ = a.eng.Close()
	}
	a.log.Info("arbitrator stopped")
}
