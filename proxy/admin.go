package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"

	"github.com/certusdb/certus/proxy/rules"
)

// BackendInfo is one node in the admin interface's /backends.
type BackendInfo struct {
	Name     string `json:"name"`
	SQLAddr  string `json:"sql_addr"`
	HTTPAddr string `json:"http_addr"`
	Up       bool   `json:"up"`
	State    string `json:"state"`
	Primary  bool   `json:"primary"`
	Synced   bool   `json:"synced"`
	Applied  uint64 `json:"applied"`
	// Known is the highest seqno the proxy knows the node applied
	// (from commits and causal waits, possibly ahead of Applied).
	Known     uint64 `json:"known_applied"`
	Writer    bool   `json:"writer"`
	Reader    bool   `json:"reader"`
	Queries   int64  `json:"queries"`
	IdleConns int    `json:"idle_conns"`
	LastError string `json:"last_error,omitempty"`
}

// RuleInfo is one rule in the admin interface's /rules.
type RuleInfo struct {
	rules.Spec
	Hits     int64 `json:"hits"`
	WaitedUS int64 `json:"waited_us"`
}

// Backends returns what the proxy knows of each node.
func (p *Proxy) Backends() []BackendInfo {
	t := p.mon.Topology()
	out := make([]BackendInfo, 0, len(t.Nodes))
	for _, n := range t.Nodes {
		out = append(out, BackendInfo{
			Name: n.Name, SQLAddr: n.SQLAddr, HTTPAddr: n.HTTPAddr, Up: n.Up, State: n.State, Primary: n.Primary,
			Synced: n.Synced, Applied: n.Applied, Known: p.knownApplied(t, n.Name), Writer: n.Writer, Reader: n.Reader,
			Queries: p.servedBy(n.Name), IdleConns: p.pool.Idle(n.SQLAddr), LastError: n.LastErr,
		})
	}
	return out
}

// Rules returns the rules in force with their counters.
func (p *Proxy) Rules() []RuleInfo {
	rs := p.rules.Load()
	out := make([]RuleInfo, 0, len(rs.Rules))
	for _, r := range rs.Rules {
		out = append(out, RuleInfo{Spec: r.Spec, Hits: r.Hits(), WaitedUS: r.Waited().Microseconds()})
	}
	return out
}

// adminHandler serves the HTTP admin interface:
//
//	GET  /health         200 while a writer is known, else 503
//	GET  /metrics        Prometheus metrics (docs/METRICS.md)
//	GET  /backends       nodes, roles, applied seqnos, queries, pooled connections
//	GET  /status         writer, readers, sessions, causal waits and fallbacks
//	GET  /rules          query rules in force with hits and time waited
//	GET  /stats/digest   per-digest statistics (?reset=1 clears them after reading)
//	POST /reload         re-read the configuration file (rules, hostgroups) and the TLS files
//	GET  /debug/pprof/   Go profiles of the proxy
//
// /health, /metrics, /backends and /status are open, as a node's are; the others need
// the admin token (or, without one, a client on loopback).
func (p *Proxy) adminHandler() http.Handler {
	mux := http.NewServeMux()
	guarded := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, p.guard.Wrap(h)) }
	guarded("/debug/pprof/", pprof.Index)
	guarded("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /health", p.handleHealth)
	mux.Handle("GET /metrics", p.metricsHandler())
	mux.HandleFunc("GET /backends", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, p.Backends()) })
	guarded("GET /rules", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, p.Rules()) })
	guarded("GET /stats/digest", func(w http.ResponseWriter, r *http.Request) {
		snap := p.stats.Snapshot()
		if r.URL.Query().Get("reset") != "" {
			p.stats.Reset()
		}
		writeJSON(w, snap)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		t := p.mon.Topology()
		var writers, readers []string
		for _, n := range t.Writers {
			writers = append(writers, n.Name)
		}
		for _, n := range t.Readers {
			readers = append(readers, n.Name)
		}
		p.mu.Lock()
		sessions := len(p.sessions)
		p.mu.Unlock()
		writeJSON(w, map[string]any{"writers": writers, "readers": readers, "sessions": sessions,
			"cluster_uuid": t.ClusterUUID, "max_applied": t.MaxApplied, "topology_version": t.Version,
			"causal_waits": p.causalWaits.Load(), "causal_fallbacks": p.causalFallbacks.Load(),
			"gtid_queries": p.gtidQueries.Load()})
	})
	guarded("POST /reload", func(w http.ResponseWriter, r *http.Request) {
		if err := p.Reload(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]any{"reloaded": true, "rules": len(p.rules.Load().Rules)})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
