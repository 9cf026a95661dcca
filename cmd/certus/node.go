package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/certusdb/certus/internal/adminauth"
	"github.com/certusdb/certus/internal/gcfloor"
	"github.com/certusdb/certus/node"
	"github.com/certusdb/certus/storage"
)

func nodeCmd() *cobra.Command {
	var cfg node.Config
	var join string
	var logLevel string
	var adminToken, clusterSecret, rootPassword *secret
	heapFloor := uint64(128 << 20)
	rowCache := int64(storage.DefaultRowCacheBytes)
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run one Certus node",
		Long: `Run one Certus node.

Without --join the node bootstraps a new cluster on an empty data dir (like
--wsrep-new-cluster). With --join it joins a running cluster through any of
the listed peers. Ctrl-C or SIGTERM shuts it down cleanly.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.DataDir == "" {
				return fmt.Errorf("--data-dir is required")
			}
			var err error
			if cfg.AdminToken, err = adminToken.get(); err != nil {
				return err
			}
			if cfg.ClusterSecret, err = clusterSecret.get(); err != nil {
				return err
			}
			if cfg.RootPassword, err = rootPassword.get(); err != nil {
				return err
			}
			if cfg.RootHost != "localhost" && cfg.RootPassword == "" {
				return fmt.Errorf("--root-host %q lets root log in from other hosts: set a root password too (--root-password-file or CERTUS_ROOT_PASSWORD)", cfg.RootHost)
			}
			for _, v := range []struct {
				flag string
				n    int
			}{{"--sst-nice", cfg.SSTNice}, {"--stream-nice", cfg.StreamNice}, {"--compaction-nice", cfg.CompactionNice}} {
				if v.n < 0 || v.n > 19 {
					return fmt.Errorf("%s %d: want a nice value from 0 to 19", v.flag, v.n)
				}
			}
			cfg.RowCacheSize = rowCache
			if rowCache == 0 {
				cfg.RowCacheSize = -1 // off
			}
			cfg.Join = splitList(join)
			cfg.Logger = newLogger(logLevel)
			defer gcfloor.Start(heapFloor, 250*time.Millisecond)()
			n, err := node.Start(cfg)
			if err != nil {
				return err
			}
			waitForShutdown(cfg.Logger, n.Left(), n.ReloadTLS)
			n.Stop()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Name, "name", "", "node name (wsrep_node_name), unique in the cluster (default: host name)")
	f.StringVar(&cfg.DataDir, "data-dir", "", "data directory")
	f.StringVar(&cfg.SQLAddr, "sql-addr", "127.0.0.1:3306", "MySQL protocol listen address")
	f.StringVar(&cfg.HTTPAddr, "http-addr", "127.0.0.1:8080", "HTTP address for /health, /status and /metrics")
	f.StringVar(&cfg.PeerAddr, "peer-addr", "127.0.0.1:4567", "address peers use to reach this node")
	f.StringVar(&join, "join", "", "comma-separated peer addresses of a running cluster to join")
	f.StringVar(&cfg.ClusterName, "cluster-name", "certus", "cluster name (wsrep_cluster_name); must match on all members")
	clusterSecret = addSecret(f, "cluster-secret", "cluster-secret-file", "CERTUS_CLUSTER_SECRET", "shared secret peers must prove they know; without peer certificates it also authenticates every peer frame")
	peerSecurityFlags(f, &cfg.PeerSecurity)
	rootPassword = addSecret(f, "root-password", "root-password-file", "CERTUS_ROOT_PASSWORD", "password of the built-in root account (default: none, root logs in from loopback without one)")
	f.StringVar(&cfg.RootHost, "root-host", "localhost", `host part of the built-in root account: "localhost" admits loopback clients only, "%" any host (needs a root password; e.g. in a container, whose clients come from outside)`)
	adminToken = addSecret(f, "", "admin-token-file", adminauth.EnvToken, "token that POST /leave, /lead, /members/remove and /debug/ on the HTTP port require (without one, only clients on loopback may use them)")
	f.BoolVar(&cfg.SSL, "ssl", true, "offer TLS on the SQL port (have_ssl); without --ssl-cert a self-signed CA and certificate are made in <data-dir>/tls, as MySQL's auto_generate_certs does")
	f.StringVar(&cfg.SSLCert, "ssl-cert", "", "SQL port's certificate (PEM); SIGHUP or ALTER INSTANCE RELOAD TLS reads it again")
	f.StringVar(&cfg.SSLKey, "ssl-key", "", "key of --ssl-cert (PEM)")
	f.StringVar(&cfg.SSLCA, "ssl-ca", "", "CA whose client certificates the SQL port verifies (REQUIRE X509)")
	f.StringVar(&cfg.SecureFilePriv, "secure-file-priv", "", `secure_file_priv: the only directory whose files LOAD_FILE(), SELECT ... INTO OUTFILE/DUMPFILE and LOAD DATA INFILE may read or write, for users with the FILE privilege ("NULL": none; default: <data-dir>/files); it may not hold the data directory`)
	f.BoolVar(&cfg.SyncCommit, "sync-commit", true, "fsync the log before acknowledging a commit; false syncs once a second (like innodb_flush_log_at_trx_commit=2)")
	f.Var(byteSize[uint64]{&cfg.GCacheSize}, "gcache-size", "raft log kept for members that fall behind, like Galera's gcache.size (e.g. 128MB; default 128MiB); a member that needs older entries gets a full state transfer")
	f.Var(byteSize[int64]{&cfg.SSTMaxRate}, "sst-max-rate", "bytes per second this node sends to one joiner as a state transfer donor (e.g. 50MB; default unlimited)")
	f.IntVar(&cfg.SSTNice, "sst-nice", 3, "CPU priority of a donor's state transfer stream below its clients' (a nice value, 0-19; 0 gives the stream an equal share): on a busy donor the transfer slows down before the clients do")
	f.IntVar(&cfg.StreamNice, "stream-nice", 10, "CPU priority of a streaming transaction's statements (from its first fragment on), and of the work that adds its fragments to the provisional batch on every node, below other sessions' (a nice value, 0-19; 0: equal): on a busy node a huge transaction yields to the short ones")
	f.IntVar(&cfg.CompactionNice, "compaction-nice", 10, "CPU priority of the storage's compactions below the sessions' (a nice value, 0-19; 0: equal): a compaction rewrites much of a small database every few seconds, and at an equal share it halved the sessions' throughput for that second; a compaction of a deep level 0 runs at normal priority")
	f.IntVar(&cfg.ApplierThreads, "applier-threads", 1, "wsrep_applier_threads: workers that build replicated write-sets in parallel (dependencies from their keys) while commits stay in log order; SET GLOBAL wsrep_applier_threads changes it at runtime")
	cfg.StreamThreshold = 1 << 20
	f.Var(byteSize[int64]{&cfg.StreamThreshold}, "stream-threshold", "a transaction whose changes grow past this size streams (replicates in fragments of 1/8 of it, rows locked cluster-wide, visible at commit) even without wsrep_trx_fragment_size (0: never)")
	f.StringVar(&cfg.ProviderOptions, "provider-options", "", `provider options as in Galera's wsrep_provider_options, e.g. "gcs.fc_limit=100; gcs.fc_factor=1.0" (flow control); SET GLOBAL wsrep_provider_options changes them at runtime`)
	f.BoolVar(&cfg.SafeReads, "safe-reads", false, "answer causal reads (wsrep_sync_wait) only after the leader confirmed with a heartbeat round that it still leads, instead of from its lease (two network hops less per read); use it where a node's clock can stop while the others' run, as in a virtual machine paused without its clock knowing")
	f.Var(byteSize[int64]{&rowCache}, "row-cache-size", "memory for the rows point reads fetched (by primary key, or through an index), served again without a storage lookup until a commit changes them; a read never sees a value its snapshot would not (0 turns it off)")
	f.Var(byteSize[uint64]{&heapFloor}, "gc-heap-floor", "Go heap the node may fill before its garbage collector runs, while little of it is live (0: Go's default, a collection each time the heap doubles); an explicit GOGC overrides it, GOMEMLIMIT still caps it")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.BoolVar(&cfg.FaultInjection, "enable-fault-injection", false, "enable POST /debug/fault on the HTTP port (tests only)")
	_ = f.MarkHidden("enable-fault-injection")
	return cmd
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// waitForShutdown waits for Ctrl-C, SIGTERM or (when not nil) left, the
// node's removal from its cluster; SIGHUP runs reload (when not nil:
// reading the TLS files again).
func waitForShutdown(log *slog.Logger, left <-chan struct{}, reload func() error) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	for {
		select {
		case s := <-sig:
			if s == syscall.SIGHUP {
				if reload == nil {
					continue
				}
				if err := reload(); err != nil {
					log.Error("SIGHUP: reloading TLS failed; the old certificate stays", "err", err)
				} else {
					log.Info("SIGHUP: TLS reloaded")
				}
				continue
			}
			log.Info("shutting down", "signal", s.String())
			return
		case <-left:
			log.Info("removed from the cluster: shutting down")
			return
		}
	}
}

// peerSecurityFlags registers the flags of a member's peer security.
func peerSecurityFlags(f *pflag.FlagSet, p *node.PeerSecurity) {
	f.StringVar(&p.PeerCert, "peer-cert", "", "this member's peer certificate (PEM, e.g. from certus cert issue): peer connections are mutual TLS; SIGHUP reads it again")
	f.StringVar(&p.PeerKey, "peer-key", "", "key of --peer-cert (PEM)")
	f.StringVar(&p.PeerCA, "peer-ca", "", "CA that signed every member's peer certificate (PEM); a peer with another is refused")
	f.Var(peerTLSMode{&p.PeerTLSOptional}, "peer-tls", `with --peer-cert: "required" takes TLS connections only; "optional" also takes plain ones and dials plain a member not on TLS yet (rolling a cluster to TLS)`)
	f.BoolVar(&p.Insecure, "insecure", false, "let a member with neither --cluster-secret nor peer certificates listen on a non-loopback peer address: anyone who reaches it is a peer")
}

// peerTLSMode is --peer-tls: required or optional.
type peerTLSMode struct{ optional *bool }

func (m peerTLSMode) String() string {
	if m.optional != nil && *m.optional {
		return "optional"
	}
	return "required"
}

func (m peerTLSMode) Set(s string) error {
	switch s {
	case "required", "optional":
		*m.optional = s == "optional"
		return nil
	}
	return fmt.Errorf("%q: want required or optional", s)
}

func (peerTLSMode) Type() string { return "mode" }
