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

	"github.com/certusdb/certus/proxy"
	"github.com/certusdb/certus/proxy/config"
)

func proxyCmd() *cobra.Command {
	var listen, adminListen, cluster, cfgPath, logLevel string
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run the consistency-aware MySQL proxy in front of a cluster",
		Long: `Run the Certus proxy: clients connect to --listen with the MySQL protocol;
the proxy learns the cluster from the nodes' HTTP addresses in --cluster,
sends writes and transactions to the writer and reads to the readers, and
keeps each session's reads causal (they see the session's own commits).

--config names a JSON file with accounts, hostgroup settings and query rules
(see docs/PROXY.md); flags override its addresses. With --admin-listen the
proxy serves /backends, /rules, /stats/digest, /status and POST /reload
over HTTP.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load(cfgPath)
			if err != nil {
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
			p, err := proxy.New(cfg, cfgPath, log)
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
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	return cmd
}
