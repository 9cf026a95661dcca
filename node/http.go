package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/certusdb/certus/internal/adminauth"
	"github.com/certusdb/certus/replication"
	"github.com/certusdb/certus/statetransfer"
)

// httpServer serves the node's HTTP API:
//
//	GET /health  200 "Synced" when Synced and Primary, 503 otherwise
//	             (HAProxy's httpchk)
//	GET /status  the node's state as JSON
//	GET /metrics Prometheus metrics
//	POST /leave, /lead, /members/remove  membership changes
//	GET /debug/storage   pebble's LSM metrics (levels, memtables, caches)
//	GET /debug/pprof/... Go profiles
//
// The first three are open to anyone who reaches the port; the others
// need the admin token (or, without one, a client on loopback).
type httpServer struct {
	srv *http.Server
	ln  net.Listener
}

func startHTTP(n *Node, ln net.Listener) *httpServer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), &metricsCollector{n: n})
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		_, comment := n.LocalState()
		if !n.Repl.Primary() {
			comment = "non-Primary"
		}
		if n.Healthy() {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = w.Write([]byte(comment + "\n"))
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(n.StatusDoc())
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	guard := adminauth.New(n.cfg.AdminToken)
	n.log.Info("admin endpoints (/leave, /lead, /members/remove, /debug/)", "access", guard.Mode())
	mux.Handle("/leave", guard.Wrap(adminPost(n.handleLeave)))
	mux.Handle("/lead", guard.Wrap(adminPost(n.handleLead)))
	mux.Handle("/members/remove", guard.Wrap(adminPost(n.handleRemove)))
	if n.cfg.FaultInjection {
		mux.Handle("/debug/fault", guard.Wrap(http.HandlerFunc(n.handleFault)))
	}
	mux.Handle("/debug/storage", guard.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(n.Eng.DB().Metrics().String()))
	})))
	mux.Handle("/debug/pprof/", guard.Wrap(http.HandlerFunc(pprof.Index)))
	mux.Handle("/debug/pprof/profile", guard.Wrap(http.HandlerFunc(pprof.Profile)))
	mux.Handle("/debug/pprof/trace", guard.Wrap(http.HandlerFunc(pprof.Trace)))
	s := &httpServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("http server stopped", "err", err)
		}
	}()
	return s
}

func (s *httpServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// StatusDoc is the JSON document of /status.
type StatusDoc struct {
	Name        string `json:"name"`
	ID          string `json:"id"`
	ClusterName string `json:"cluster_name"`
	ClusterUUID string `json:"cluster_uuid"`
	State       string `json:"state"`
	Primary     bool   `json:"primary"`
	Synced      bool   `json:"synced"`
	Leader      string `json:"leader"`
	Term        uint64 `json:"term"`
	Applied     uint64 `json:"applied"`
	Committed   uint64 `json:"committed"`
	SQLAddr     string `json:"sql_addr"`
	PeerAddr    string `json:"peer_addr"`
	// PeerSecurity is how peer connections are protected: "open",
	// "secret" or "tls".
	PeerSecurity replication.PeerSecurity `json:"peer_security"`
	Arbitrator   bool                     `json:"arbitrator,omitempty"`
	Members      []MemberDoc              `json:"members"`
	Wsrep        map[string]interface{}   `json:"wsrep"`
	// SST is the state transfer this node receives (or received last);
	// Donor the one it serves.
	SST   statetransfer.ProgressInfo `json:"sst"`
	Donor statetransfer.ProgressInfo `json:"sst_donor"`
	// LogBytes is the size of the retained raft log (gcache).
	LogBytes uint64 `json:"log_bytes"`
	// LogFirst is the first index of the retained raft log: a member that
	// needs an older entry gets a state transfer.
	LogFirst uint64 `json:"log_first"`
}

// MemberDoc is one member in /status.
type MemberDoc struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	SQLAddr  string `json:"sql_addr"`
	HTTPAddr string `json:"http_addr"`
	PeerAddr string `json:"peer_addr"`
	Voter    bool   `json:"voter"`
	// Arbitrator marks a member that votes but stores no data.
	Arbitrator bool `json:"arbitrator,omitempty"`
}

func memberDocs(st replication.Status) []MemberDoc {
	var out []MemberDoc
	for _, m := range st.Members {
		out = append(out, MemberDoc{ID: hexID(m.ID), Name: m.Name, SQLAddr: m.SQLAddr, HTTPAddr: m.HTTPAddr,
			PeerAddr: m.PeerAddr, Voter: slices.Contains(st.Voters, m.ID), Arbitrator: m.Arbitrator})
	}
	return out
}

// StatusDoc returns the node's status.
func (n *Node) StatusDoc() StatusDoc {
	st := n.Repl.Status()
	_, comment := n.LocalState()
	doc := StatusDoc{
		Name: n.cfg.Name, ID: hexID(st.ID), ClusterName: st.ClusterName, ClusterUUID: st.ClusterUUID,
		State: comment, Primary: st.Primary, Synced: n.Healthy(), Leader: hexID(st.Leader), Term: st.Term,
		Applied: st.Applied, Committed: st.Committed, SQLAddr: n.cfg.SQLAddr, PeerAddr: n.cfg.PeerAddr, PeerSecurity: n.tr.Security(),
		Wsrep: n.WsrepStatus(), SST: n.joiner.Progress(), Donor: n.donor.Progress(),
		LogBytes: st.LogBytes, LogFirst: st.LogFirst, Members: memberDocs(st),
	}
	return doc
}

func hexID(id uint64) string {
	if id == 0 {
		return ""
	}
	const digits = "0123456789abcdef"
	b := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		b[i] = digits[id&0xf]
		id >>= 4
	}
	return string(b)
}

// handleFault implements POST /debug/fault?block=name,name (cut the node
// off from those peers, in both directions), POST /debug/fault?heal=1, and
// POST /debug/fault?apply_delay=2ms (a slow node: its apply stage takes that
// long per write-set more; 0 ends it).
func (n *Node) handleFault(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if v := r.URL.Query().Get("apply_delay"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			http.Error(w, "apply_delay: not a duration: "+v, http.StatusBadRequest)
			return
		}
		n.Repl.SetApplyDelay(d)
		n.log.Warn("fault injection: apply delay per write-set", "delay", d)
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	var ids []uint64
	if r.URL.Query().Get("heal") == "" {
		for _, name := range strings.Split(r.URL.Query().Get("block"), ",") {
			if name == "" {
				continue
			}
			found := false
			for _, m := range n.Repl.Members() {
				if m.Name == name || hexID(m.ID) == name {
					ids = append(ids, m.ID)
					found = true
				}
			}
			if !found {
				http.Error(w, "unknown member "+name, http.StatusBadRequest)
				return
			}
		}
	}
	n.tr.Block(ids)
	n.log.Warn("fault injection: peers blocked", "count", len(ids))
	_, _ = w.Write([]byte("ok\n"))
}

// adminPost serves an admin request with fn: POST only, under a deadline
// of 30 s.
func adminPost(fn func(ctx context.Context, w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		fn(ctx, w, r)
	}
}

// handleLeave implements POST /leave: the node removes itself from the
// cluster (handing leadership over first if it leads), then stops.
func (n *Node) handleLeave(ctx context.Context, w http.ResponseWriter, _ *http.Request) {
	n.log.Info("leaving the cluster")
	if err := n.Repl.Leave(ctx); err != nil {
		http.Error(w, "leave: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("left the cluster\n"))
}

// handleLead implements POST /lead: the node asks the leader to hand
// leadership over and answers once it leads (or after 30 s).
func (n *Node) handleLead(ctx context.Context, w http.ResponseWriter, _ *http.Request) {
	if err := n.Repl.TakeLeadership(ctx); err != nil {
		code := http.StatusServiceUnavailable
		if errors.Is(err, replication.ErrCannotLead) {
			code = http.StatusConflict
		}
		http.Error(w, "lead: "+err.Error(), code)
		return
	}
	st := n.Repl.Status()
	n.log.Info("this node leads", "term", st.Term)
	_, _ = fmt.Fprintf(w, "%s leads (term %d)\n", n.cfg.Name, st.Term)
}

// handleRemove implements POST /members/remove?name=NAME: removes another
// member (one that is gone for good) from the cluster.
func (n *Node) handleRemove(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	var id uint64
	for _, m := range n.Repl.Members() {
		if m.Name == name || hexID(m.ID) == name {
			id = m.ID
		}
	}
	if id == 0 {
		http.Error(w, fmt.Sprintf("no member named %q", name), http.StatusNotFound)
		return
	}
	if err := n.Repl.RemoveMember(ctx, id); err != nil {
		http.Error(w, "remove: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	n.log.Info("member removed", "name", name)
	_, _ = fmt.Fprintf(w, "removed %s\n", name)
}
