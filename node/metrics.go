package node

import (
	"runtime"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// The node's Prometheus metrics (GET /metrics) come in two sets:
//
//   - mysql_global_status_<variable>, one per numeric status variable
//     (SHOW GLOBAL STATUS: wsrep_*, Uptime), named and valued as
//     mysqld_exporter names and values them (ON, Primary: 1; OFF,
//     non-Primary: 0), and mysql_galera_status_info, so that the Galera
//     dashboards and alerts written for mysqld_exporter work unchanged;
//   - certus_*, named as Prometheus asks: counters end in _total, units
//     are in the name, states and identities are labels of a metric
//     whose value is 1 (certusMetrics lists them).
type metricsCollector struct{ n *Node }

// certusMetric is a Certus metric read from a status variable.
type certusMetric struct {
	name, help string
	typ        prometheus.ValueType
	status     string  // the status variable it reads
	scale      float64 // multiplies the value (0: 1)
}

// certusMetrics are the Certus metrics that read a status variable.
var certusMetrics = []certusMetric{
	{"certus_replicated_writesets_total", "Write-sets this node sent to be ordered.", prometheus.CounterValue, "wsrep_replicated", 0},
	{"certus_replicated_bytes_total", "Bytes of the write-sets this node sent to be ordered.", prometheus.CounterValue, "wsrep_replicated_bytes", 0},
	{"certus_received_writesets_total", "Write-sets of other nodes applied on this node.", prometheus.CounterValue, "wsrep_received", 0},
	{"certus_peer_received_bytes_total", "Replication payload bytes this node received from its peers.", prometheus.CounterValue, "wsrep_received_bytes", 0},
	{"certus_local_commits_total", "Transactions with writes committed on this node (read-only ones are not counted, as in Galera).", prometheus.CounterValue, "wsrep_local_commits", 0},
	{"certus_cert_failures_total", "Local transactions that failed certification (1213 at COMMIT).", prometheus.CounterValue, "wsrep_local_cert_failures", 0},
	{"certus_bf_aborts_total", "Local transactions aborted by a replicated write-set that certified first.", prometheus.CounterValue, "wsrep_local_bf_aborts", 0},
	{"certus_flow_control_paused_seconds_total", "Time local commits waited for flow control.", prometheus.CounterValue, "wsrep_flow_control_paused_ns", 1e-9},
	{"certus_flow_control_sent_total", "Flow control reports this node sent.", prometheus.CounterValue, "wsrep_flow_control_sent", 0},
	{"certus_flow_control_received_total", "Flow control reports this node received.", prometheus.CounterValue, "wsrep_flow_control_recv", 0},
	{"certus_streamed_transactions_total", "Streaming transactions begun on this node.", prometheus.CounterValue, "certus_streamed_transactions", 0},
	{"certus_streamed_fragments_total", "Fragments of streaming transactions this node replicated.", prometheus.CounterValue, "certus_streamed_fragments", 0},
	{"certus_row_cache_hits_total", "Row cache lookups that found the row.", prometheus.CounterValue, "certus_row_cache_hits", 0},
	{"certus_row_cache_misses_total", "Row cache lookups that did not.", prometheus.CounterValue, "certus_row_cache_misses", 0},
	{"certus_sync_waits_total", "Causal waits (wsrep_sync_wait) sessions blocked in.", prometheus.CounterValue, "certus_sync_waits", 0},
	{"certus_sync_wait_seconds_total", "Time sessions spent in causal waits.", prometheus.CounterValue, "certus_sync_wait_seconds", 0},
	{"certus_sync_wait_apply_seconds_total", "The part of the causal waits after the commit index was known.", prometheus.CounterValue, "certus_sync_wait_apply_seconds", 0},
	{"certus_sync_wait_rounds_total", "ReadIndex rounds run for causal waits.", prometheus.CounterValue, "certus_sync_wait_rounds", 0},
	{"certus_sync_wait_link_rounds_total", "Causal wait rounds answered over the read link to the leader.", prometheus.CounterValue, "certus_sync_wait_link_rounds", 0},
	{"certus_sync_wait_lease_reads_total", "Causal waits the leader answered from its lease.", prometheus.CounterValue, "certus_sync_wait_lease_reads", 0},
	{"certus_sync_wait_commit_notices_total", "Commits this node learned from the leader's read answers.", prometheus.CounterValue, "certus_sync_wait_commit_notices", 0},
	{"certus_cluster_members", "Members in this node's view of the primary component.", prometheus.GaugeValue, "wsrep_cluster_size", 0},
	{"certus_last_committed_seqno", "The seqno of the last write-set applied on this node.", prometheus.GaugeValue, "wsrep_last_committed", 0},
	{"certus_recv_queue_writesets", "Write-sets committed in the cluster and not applied on this node yet.", prometheus.GaugeValue, "wsrep_local_recv_queue", 0},
	{"certus_send_queue_writesets", "Local write-sets waiting to be ordered.", prometheus.GaugeValue, "wsrep_local_send_queue", 0},
	{"certus_flow_control_paused_ratio", "Share of the time since the last FLUSH STATUS that local commits waited for flow control.", prometheus.GaugeValue, "wsrep_flow_control_paused", 0},
	{"certus_flow_control_rate_writesets_per_second", "The commit rate flow control admits (0: unlimited).", prometheus.GaugeValue, "certus_flow_control_rate", 0},
	{"certus_apply_capacity_writesets_per_second", "How fast this node applied write-sets when last measured under load.", prometheus.GaugeValue, "certus_apply_rate", 0},
	{"certus_open_streams", "Streaming transactions open in the cluster, as this node holds them.", prometheus.GaugeValue, "certus_open_streams", 0},
	{"certus_row_cache_bytes", "Bytes the row cache holds.", prometheus.GaugeValue, "certus_row_cache_bytes", 0},
	{"certus_cert_index_keys", "Keys in the certification index.", prometheus.GaugeValue, "wsrep_cert_index_size", 0},
}

var (
	stateDesc   = prometheus.NewDesc("certus_node_state", "1 for the node's state (wsrep_local_state_comment), 0 for the others.", []string{"state"}, nil)
	primaryDesc = prometheus.NewDesc("certus_cluster_primary", "1 while the node is in the primary component (wsrep_cluster_status Primary).", nil, nil)
	readyDesc   = prometheus.NewDesc("certus_ready", "1 while the node accepts queries (wsrep_ready).", nil, nil)
	healthyDesc = prometheus.NewDesc("certus_healthy", "1 while /health answers 200 (Synced, Primary, not taken out of service).", nil, nil)
	flowDesc    = prometheus.NewDesc("certus_flow_control_active", "1 while flow control limits this node's commits.", nil, nil)
	infoDesc    = prometheus.NewDesc("certus_node_info", "The node's identity; the value is 1.", []string{"name", "cluster", "cluster_uuid", "node_id", "version", "go_version"}, nil)
	galeraDesc  = prometheus.NewDesc("mysql_galera_status_info", "PXC/Galera status information, as mysqld_exporter shows it.",
		[]string{"wsrep_local_state_uuid", "wsrep_cluster_state_uuid", "wsrep_provider_version"}, nil)
)

// Describe implements prometheus.Collector; the global status metrics
// are described as they come (an unchecked collector).
func (c *metricsCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c *metricsCollector) Collect(ch chan<- prometheus.Metric) {
	status := c.n.WsrepStatus()
	names := make([]string, 0, len(status))
	for k := range status {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if strings.HasPrefix(k, "certus_") {
			continue // Certus's own, below
		}
		if v, ok := statusValue(status[k]); ok {
			name := "mysql_global_status_" + strings.ToLower(k)
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, "Generic metric from SHOW GLOBAL STATUS.", nil, nil), prometheus.UntypedValue, v)
		}
	}
	str := func(k string) string { s, _ := status[k].(string); return s }
	ch <- prometheus.MustNewConstMetric(galeraDesc, prometheus.GaugeValue, 1, str("wsrep_local_state_uuid"), str("wsrep_cluster_state_uuid"), str("wsrep_provider_version"))

	for _, m := range certusMetrics {
		v, ok := statusValue(status[m.status])
		if !ok {
			continue
		}
		if m.scale != 0 {
			v *= m.scale
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(m.name, m.help, nil, nil), m.typ, v)
	}
	state, _ := status["wsrep_local_state"].(uint64) // the same look as the variables above
	for s, name := range stateNames {
		ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, boolValue(uint64(s) == state), name)
	}
	ch <- prometheus.MustNewConstMetric(primaryDesc, prometheus.GaugeValue, boolValue(str("wsrep_cluster_status") == "Primary"))
	ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, boolValue(str("wsrep_ready") == "ON"))
	ch <- prometheus.MustNewConstMetric(healthyDesc, prometheus.GaugeValue, boolValue(c.n.Healthy()))
	ch <- prometheus.MustNewConstMetric(flowDesc, prometheus.GaugeValue, boolValue(str("wsrep_flow_control_active") == "true"))
	ch <- prometheus.MustNewConstMetric(infoDesc, prometheus.GaugeValue, 1,
		c.n.cfg.Name, c.n.cfg.ClusterName, str("wsrep_cluster_state_uuid"), str("wsrep_gcomm_uuid"), Version, runtime.Version())
}

// statusValue reads a status variable's value as a number, as
// mysqld_exporter does: numbers as they are, ON/YES/Primary/true as 1,
// OFF/NO/non-Primary/Disconnected/false as 0; false for other text.
func statusValue(v any) (float64, bool) {
	switch x := v.(type) {
	case uint64:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case string:
		switch strings.ToLower(x) {
		case "on", "yes", "primary", "true":
			return 1, true
		case "off", "no", "non-primary", "disconnected", "false":
			return 0, true
		}
	}
	return 0, false
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
