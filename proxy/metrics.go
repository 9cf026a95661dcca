package proxy

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The proxy's Prometheus metrics (GET /metrics on the admin port), named
// as the nodes' certus_* metrics are (docs/METRICS.md): one series per
// backend node for what /backends shows, and the proxy's own counters.
var (
	backendLabels   = []string{"backend"}
	backendUpDesc   = prometheus.NewDesc("certus_proxy_backend_up", "1 while the node answers the proxy's status checks.", backendLabels, nil)
	backendPrimary  = prometheus.NewDesc("certus_proxy_backend_primary", "1 while the node is in the primary component.", backendLabels, nil)
	backendSynced   = prometheus.NewDesc("certus_proxy_backend_synced", "1 while the node is Synced.", backendLabels, nil)
	backendWriter   = prometheus.NewDesc("certus_proxy_backend_writer", "1 while the node is in the writer hostgroup.", backendLabels, nil)
	backendReader   = prometheus.NewDesc("certus_proxy_backend_reader", "1 while the node is in the reader hostgroup.", backendLabels, nil)
	backendApplied  = prometheus.NewDesc("certus_proxy_backend_applied_seqno", "The seqno the node last reported applied.", backendLabels, nil)
	backendQueries  = prometheus.NewDesc("certus_proxy_backend_queries_total", "Statements the proxy sent to the node.", backendLabels, nil)
	backendIdle     = prometheus.NewDesc("certus_proxy_backend_idle_connections", "Pooled idle connections to the node.", backendLabels, nil)
	sessionsDesc    = prometheus.NewDesc("certus_proxy_sessions", "Client sessions logged in on the proxy.", nil, nil)
	clientsDesc     = prometheus.NewDesc("certus_proxy_client_connections", "Client connections open on the proxy, logged in or not.", nil, nil)
	causalWaitsDesc = prometheus.NewDesc("certus_proxy_causal_waits_total", "Reads that waited on a reader for the session's last commit.", nil, nil)
	fallbacksDesc   = prometheus.NewDesc("certus_proxy_causal_fallbacks_total", "Causal reads that went to the writer after waiting on a reader.", nil, nil)
	gtidQueriesDesc = prometheus.NewDesc("certus_proxy_gtid_queries_total", "Commits whose GTID the proxy had to ask the node for.", nil, nil)
)

type proxyCollector struct{ p *Proxy }

// Describe implements prometheus.Collector (unchecked: the backends come
// and go).
func (proxyCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c proxyCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for _, b := range c.p.Backends() {
		gauge(backendUpDesc, flag(b.Up), b.Name)
		gauge(backendPrimary, flag(b.Primary), b.Name)
		gauge(backendSynced, flag(b.Synced), b.Name)
		gauge(backendWriter, flag(b.Writer), b.Name)
		gauge(backendReader, flag(b.Reader), b.Name)
		gauge(backendApplied, float64(b.Applied), b.Name)
		gauge(backendIdle, float64(b.IdleConns), b.Name)
		ch <- prometheus.MustNewConstMetric(backendQueries, prometheus.CounterValue, float64(b.Queries), b.Name)
	}
	c.p.mu.Lock()
	sessions := len(c.p.sessions)
	c.p.mu.Unlock()
	gauge(sessionsDesc, float64(sessions))
	gauge(clientsDesc, float64(c.p.clients.Load()))
	ch <- prometheus.MustNewConstMetric(causalWaitsDesc, prometheus.CounterValue, float64(c.p.causalWaits.Load()))
	ch <- prometheus.MustNewConstMetric(fallbacksDesc, prometheus.CounterValue, float64(c.p.causalFallbacks.Load()))
	ch <- prometheus.MustNewConstMetric(gtidQueriesDesc, prometheus.CounterValue, float64(c.p.gtidQueries.Load()))
}

// metricsHandler serves the proxy's metrics, the Go runtime's and the
// process's.
func (p *Proxy) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), proxyCollector{p})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// handleHealth answers 200 while the proxy knows a writer to send writes
// to, 503 otherwise, for a load balancer in front of several proxies.
func (p *Proxy) handleHealth(w http.ResponseWriter, _ *http.Request) {
	t := p.mon.Topology()
	if len(t.Writers) == 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("no writer\n"))
		return
	}
	_, _ = w.Write([]byte("writer " + t.Writers[0].Name + "\n"))
}
