package main

import (
	"github.com/spf13/cobra"

	"github.com/certusdb/certus/node"
)

func arbitratorCmd() *cobra.Command {
	var cfg node.ArbitratorConfig
	var join, logLevel string
	var clusterSecret *secret
	cmd := &cobra.Command{
		Use:   "arbitrator",
		Short: "Run an arbitrator: a member that votes but stores no data (like garbd)",
		Long: `Run an arbitrator: a cluster member that takes part in quorum decisions
and keeps the replication log, but stores no data and serves no SQL (like
Galera's garbd). Two data nodes and an arbitrator keep a primary component
when either data node is lost.

  certus arbitrator --name garb --data-dir /var/lib/certus/garb \
    --peer-addr 10.0.0.3:4567 --join 10.0.0.1:4567 \
    --peer-cert garb-tls/garb-cert.pem --peer-key garb-tls/garb-key.pem --peer-ca ca/ca.pem

Its peer certificate (certus cert issue --name garb) must carry its --name.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if cfg.ClusterSecret, err = clusterSecret.get(); err != nil {
				return err
			}
			cfg.Join = splitList(join)
			cfg.Logger = newLogger(logLevel)
			a, err := node.StartArbitrator(cfg)
			if err != nil {
				return err
			}
			waitForShutdown(cfg.Logger, nil, a.ReloadTLS)
			a.Stop()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Name, "name", "", "arbitrator name, unique in the cluster (default: garb-<host name>)")
	f.StringVar(&cfg.DataDir, "data-dir", "", "directory of its replication log and identity")
	f.StringVar(&cfg.PeerAddr, "peer-addr", "127.0.0.1:4567", "address members use to reach it")
	f.StringVar(&cfg.HTTPAddr, "http-addr", "", "address of /health and /status (default: none)")
	f.StringVar(&join, "join", "", "comma-separated peer addresses of the running cluster (required)")
	f.StringVar(&cfg.ClusterName, "cluster-name", "certus", "cluster name; must match the cluster's")
	clusterSecret = addSecret(f, "cluster-secret", "cluster-secret-file", "CERTUS_CLUSTER_SECRET", "the cluster's shared secret")
	peerSecurityFlags(f, &cfg.PeerSecurity)
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	_ = cmd.MarkFlagRequired("data-dir")
	_ = cmd.MarkFlagRequired("join")
	return cmd
}
