package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/certusdb/certus/internal/adminauth"
	"github.com/certusdb/certus/proxy"
	"github.com/certusdb/certus/proxy/config"
	"github.com/certusdb/certus/proxy/mysqlproto"
)

func proxyCmd() *cobra.Command {
	var listen, adminListen, cluster, cfgPath, logLevel string
	// the client limits and TLS settings given on the command line, which
	// win over the configuration file's at start and on every reload
	var limits config.Config
	var adminToken *secret
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run the consistency-aware MySQL proxy in front of a cluster",
		Long: `Run the Certus proxy: clients connect to --listen with the MySQL protocol;
the proxy learns the cluster from the nodes' HTTP addresses in --cluster,
sends writes and transactions to the writer and reads to the readers, and
keeps each session's reads causal (they see the session's own commits).

--config names a JSON file with the accounts clients log in with (required:
there is no default account), hostgroup settings, query rules and TLS
settings (see docs/PROXY.md); flags override its addresses, client limits
and TLS settings. Clients are offered TLS (a self-signed certificate made
in the directory of --config unless --ssl-cert is given). With
--admin-listen the proxy serves /backends, /rules, /stats/digest, /status
and POST /reload over HTTP; all but /status and /backends need the admin
token (--admin-token-file or CERTUS_ADMIN_TOKEN), or without one a client
on loopback.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			override := func(c *config.Config) {
				if flags.Changed("max-connections") {
					c.MaxConnections = limits.MaxConnections
				}
				if flags.Changed("max-allowed-packet") {
					c.MaxAllowedPacket = limits.MaxAllowedPacket
				}
				if flags.Changed("connect-timeout") {
					c.ConnectTimeout = limits.ConnectTimeout
				}
				if flags.Changed("wait-timeout") {
					c.WaitTimeout = limits.WaitTimeout
				}
				if flags.Changed("ssl") {
					c.SSL = limits.SSL
				}
				for flag, v := range map[string]struct{ dst, src *string }{
					"ssl-cert": {&c.SSLCert, &limits.SSLCert}, "ssl-key": {&c.SSLKey, &limits.SSLKey}, "ssl-ca": {&c.SSLCA, &limits.SSLCA},
					"data-dir": {&c.DataDir, &limits.DataDir}, "backend-ssl-ca": {&c.BackendSSLCA, &limits.BackendSSLCA},
				} {
					if flags.Changed(flag) {
						*v.dst = *v.src
					}
				}
				if flags.Changed("require-secure-transport") {
					c.RequireSecureTransport = limits.RequireSecureTransport
				}
				if flags.Changed("backend-tls") {
					c.BackendTLS = limits.BackendTLS
				}
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return err
			}
			override(cfg)
			if err := cfg.Validate(); err != nil {
				return err
			}
			if listen != "" {
				cfg.Listen = listen
			}
			if cfg.Listen == "" {
				cfg.Listen = "127.0.0.1:6033"
			}
			if adminListen != "" {
				cfg.AdminListen = adminListen
			}
			if cluster != "" {
				cfg.Cluster = nil
				for _, a := range strings.Split(cluster, ",") {
					if a = strings.TrimSpace(a); a != "" {
						cfg.Cluster = append(cfg.Cluster, a)
					}
				}
			}
			log := newLogger(logLevel)
			token, err := adminToken.get()
			if err != nil {
				return err
			}
			p, err := proxy.New(cfg, proxy.Options{Path: cfgPath, Override: override, AdminToken: token, Log: log})
			if err != nil {
				return err
			}
			if err := p.Start(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := p.WaitReady(ctx); err != nil {
				log.Warn("proxy: no writer yet; clients wait for one", "err", err)
			}
			cancel()
			admin := ""
			if a := p.AdminAddr(); a != nil {
				admin = a.String()
			}
			log.Info("proxy: serving", "listen", p.Addr().String(), "admin", admin, "cluster", cfg.Cluster)
			fmt.Fprintf(os.Stderr, "certus proxy listening on %s\n", p.Addr())
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			for s := range sig {
				if s == syscall.SIGHUP {
					if err := p.Reload(); err != nil {
						log.Error("proxy: reload", "err", err)
					}
					continue
				}
				log.Info("proxy: shutting down", "signal", s.String())
				break
			}
			p.Close()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "", "MySQL protocol address for clients (default 127.0.0.1:6033)")
	f.StringVar(&adminListen, "admin-listen", "", "HTTP admin address (default: none)")
	f.StringVar(&cluster, "cluster", "", "comma-separated HTTP addresses (--http-addr) of one or more nodes")
	f.StringVar(&cfgPath, "config", "", "JSON configuration file (rules, accounts, hostgroups); SIGHUP or POST /reload re-reads it")
	adminToken = addSecret(f, "", "admin-token-file", adminauth.EnvToken, "token that the admin interface's endpoints other than /health, /metrics, /status and /backends require (without one, only clients on loopback may use them)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	limits.MaxAllowedPacket = mysqlproto.DefaultMaxPayload
	f.IntVar(&limits.MaxConnections, "max-connections", 151, "client connections open at once, logged in or not (max_connections); one more gets error 1040")
	f.Var(byteSize[int]{&limits.MaxAllowedPacket}, "max-allowed-packet", "largest packet a logged-in client may send (max_allowed_packet, e.g. 16MB); a larger one gets error 1153 and the connection is closed")
	f.DurationVar((*time.Duration)(&limits.ConnectTimeout), "connect-timeout", 10*time.Second, "time a client has to log in (connect_timeout)")
	f.DurationVar((*time.Duration)(&limits.WaitTimeout), "wait-timeout", 8*time.Hour, "a logged-in client that sends no command for this long is disconnected with error 4031 (wait_timeout)")
	limits.SSL = new(bool)
	f.BoolVar(limits.SSL, "ssl", true, "offer clients TLS; without --ssl-cert a self-signed CA and certificate are made in <data-dir>/tls")
	f.StringVar(&limits.SSLCert, "ssl-cert", "", "certificate offered to clients (PEM); SIGHUP or POST /reload reads it again")
	f.StringVar(&limits.SSLKey, "ssl-key", "", "key of --ssl-cert (PEM)")
	f.StringVar(&limits.SSLCA, "ssl-ca", "", "CA that verifies client certificates (PEM)")
	f.BoolVar(&limits.RequireSecureTransport, "require-secure-transport", false, "refuse clients without TLS (error 3159), as MySQL's require_secure_transport")
	f.StringVar(&limits.DataDir, "data-dir", "", "directory of the TLS certificate and the caching_sha2_password RSA key the proxy makes for itself (default: the directory of --config)")
	f.BoolVar(&limits.BackendTLS, "backend-tls", false, "connect to the nodes over TLS")
	f.StringVar(&limits.BackendSSLCA, "backend-ssl-ca", "", "CA that verifies the nodes' certificates with --backend-tls (e.g. a node's <data-dir>/tls/ca.pem; without it the connections are encrypted but the nodes not verified)")
	return cmd
}
