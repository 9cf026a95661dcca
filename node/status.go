package node

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/certusdb/certus/replication"
)

// Local states, numbered as Galera numbers wsrep_local_state.
const (
	// StateInitialized is a node outside the primary component (Galera's
	// "Initialized": connected to no primary component). Scripts such as
	// Percona's clustercheck route to a node only while it reports
	// Synced (4).
	StateInitialized = 0
	StateJoining     = 1
	StateDonor       = 2
	StateJoined      = 3
	StateSynced      = 4
)

var stateNames = map[int]string{StateInitialized: "Initialized", StateJoining: "Joining", StateDonor: "Donor/Desynced", StateJoined: "Joined", StateSynced: "Synced"}

// syncedLag is how far (in seqnos) the applied position may trail the
// commit index for the node to count as Synced.
const syncedLag = 64

// LocalState returns wsrep_local_state and its comment.
func (n *Node) LocalState() (int, string) {
	if n.Repl.Core().Transferring() {
		return StateJoining, n.joiner.Progress().Comment()
	}
	st := n.Repl.Status()
	state := StateSynced
	switch {
	case !st.Primary:
		state = StateInitialized
	case !slices.Contains(st.Voters, st.ID) && !slices.Contains(st.Learners, st.ID):
		state = StateJoining
	case slices.Contains(st.Learners, st.ID):
		state = StateJoined
	case st.Committed > st.Applied+syncedLag || !n.Repl.Recovered():
		state = StateJoined
	case n.desync.Load():
		state = StateDonor // as Galera shows wsrep_desync = ON
	}
	return state, stateNames[state]
}

// Healthy reports whether the node is Synced, in the primary component
// and not rejecting queries (wsrep_reject_queries, or
// wsrep_sst_donor_rejects_queries while it serves a state transfer), the
// condition for /health to answer 200.
func (n *Node) Healthy() bool {
	state, _ := n.LocalState()
	return state == StateSynced && n.Repl.Primary() && !n.rejecting.Load() && !(n.donorRejects.Load() && n.donating())
}

func trueFalse(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// WsrepStatus returns the wsrep_* status variables.
func (n *Node) WsrepStatus() map[string]interface{} {
	st := n.Repl.Status()
	stats := n.Repl.Stats()
	state, comment := n.LocalState()
	clusterStatus := "Primary"
	if !st.Primary {
		clusterStatus = "non-Primary"
	}
	view := viewOf(st)
	var addrs []string
	for _, m := range st.Members {
		if m.SQLAddr != "" && slices.Contains(view, m.ID) {
			addrs = append(addrs, m.SQLAddr)
		}
	}
	recvQueue := uint64(0)
	if st.Committed > st.Applied {
		recvQueue = st.Committed - st.Applied
	}
	fc := n.Repl.FlowStatus()
	rc := n.Eng.RowCacheStats()
	desyncs := uint64(0) // wsrep_desync, and a state transfer this node serves
	if n.desync.Load() {
		desyncs++
	}
	if n.donating() {
		desyncs++
	}
	return map[string]interface{}{
		"Uptime":                          uint64(time.Since(n.started).Seconds()),
		"wsrep_ready":                     onOff(st.Primary && (state == StateSynced || state == StateDonor && n.desync.Load())), // a desynced node still serves
		"wsrep_connected":                 onOff(st.Leader != 0 || len(st.Voters) > 0),
		"wsrep_cluster_status":            clusterStatus,
		"wsrep_cluster_size":              uint64(len(view)),
		"wsrep_cluster_conf_id":           st.ConfID,
		"wsrep_cluster_state_uuid":        st.ClusterUUID,
		"wsrep_local_state_uuid":          st.ClusterUUID,
		"wsrep_cluster_weight":            uint64(len(view)),
		"wsrep_local_state":               uint64(state),
		"wsrep_local_state_comment":       comment,
		"wsrep_last_committed":            st.Applied,
		"wsrep_local_index":               localIndex(view, st.ID),
		"wsrep_gcomm_uuid":                fmt.Sprintf("%016x", st.ID),
		"wsrep_replicated":                stats.Replicated.Load(),
		"wsrep_replicated_bytes":          stats.ReplicatedBytes.Load(),
		"wsrep_received":                  stats.Received.Load(),
		"wsrep_received_bytes":            stats.ReceivedBytes.Load(),
		"wsrep_local_commits":             n.Mgr.Commits.Load(),
		"certus_streamed_transactions":    n.Mgr.Streams.Load(),
		"certus_streamed_fragments":       n.Mgr.Fragments.Load(),
		"certus_open_streams":             n.Eng.OpenStreams(),
		"certus_row_cache_hits":           rc.Hits,
		"certus_row_cache_misses":         rc.Misses,
		"certus_row_cache_bytes":          rc.Bytes,
		"certus_sync_wait_rounds":         stats.ReadIndexRounds.Load(),
		"certus_sync_wait_link_rounds":    stats.ReadLinkRounds.Load(),
		"certus_sync_wait_lease_reads":    stats.LeaseReads.Load(),
		"certus_sync_wait_commit_notices": stats.CommitNotices.Load(),
		"certus_sync_waits":               stats.SyncWaits.Load(),
		"certus_sync_wait_seconds":        float64(stats.SyncWaitNanos.Load()) / 1e9,
		"certus_sync_wait_apply_seconds":  float64(stats.SyncWaitApplyNanos.Load()) / 1e9,
		"wsrep_local_cert_failures":       stats.CertFailures.Load(),
		"wsrep_local_bf_aborts":           n.Mgr.BFAborts.Load(),
		"wsrep_local_recv_queue":          recvQueue,
		"wsrep_local_recv_queue_avg":      fc.QueueAvg,
		"wsrep_local_recv_queue_min":      fc.QueueMin,
		"wsrep_local_recv_queue_max":      fc.QueueMax,
		"wsrep_local_send_queue":          uint64(st.Waiting),
		"wsrep_local_send_queue_avg":      float64(st.Waiting),
		"wsrep_flow_control_paused":       fc.Paused,
		"wsrep_flow_control_paused_ns":    uint64(fc.PausedTotal.Nanoseconds()),
		"wsrep_flow_control_sent":         fc.Sent,
		"wsrep_flow_control_recv":         fc.Received,
		"wsrep_flow_control_active":       trueFalse(fc.Active),
		"wsrep_flow_control_requested":    trueFalse(fc.Requested),
		"certus_flow_control_rate":        fc.Limit,
		"certus_apply_rate":               fc.ApplyRate,
		"wsrep_cert_deps_distance":        mean(stats.DepsDistance.Load(), stats.DepsCount.Load()),
		"wsrep_apply_window":              mean(stats.ApplyWindow.Load(), stats.ApplyWindowCount.Load()),
		"wsrep_commit_window":             1.0,
		"wsrep_cert_index_size":           uint64(st.CertKeys),
		"wsrep_incoming_addresses":        strings.Join(addrs, ","),
		"wsrep_evs_state":                 "OPERATIONAL",
		"wsrep_provider_name":             "Certus",
		"wsrep_provider_vendor":           "Certus",
		"wsrep_provider_version":          Version,
		"wsrep_local_uptime":              uint64(time.Since(n.started).Seconds()),
		"wsrep_repl_keys":                 stats.ReplicatedKeys.Load(),
		"wsrep_repl_keys_bytes":           stats.ReplicatedKeyBytes.Load(),
		"wsrep_repl_data_bytes":           stats.ReplicatedDataBytes.Load(),
		"wsrep_repl_other_bytes":          otherBytes(stats),
		"wsrep_local_replays":             uint64(0),   // a transaction a replicated one aborted fails (1213); none is replayed
		"wsrep_local_cached_downto":       st.LogFirst, // the first seqno the log still holds: IST serves from it
		"wsrep_causal_reads":              stats.SyncWaits.Load(),
		"wsrep_open_transactions":         uint64(max(0, n.Mgr.Writing.Load())),
		"wsrep_desync_count":              desyncs,
		"wsrep_gmcast_segment":            uint64(0), // one segment
		"wsrep_applier_thread_count":      uint64(n.Repl.ApplierThreads()),
		"wsrep_provider_capabilities":     capabilities,
		"wsrep_cluster_capabilities":      capabilities,
	}
}

// Version is the Certus version reported by the node.
var Version = "0.1.0"

// capabilities are wsrep_provider_capabilities in Galera's spelling: what
// Certus does of what Galera lists (not TRX_REPLAY, PAUSE, NBO,
// PREORDERED, UNORDERED).
const capabilities = ":MULTI_MASTER:CERTIFICATION:PARALLEL_APPLYING:ISOLATION:CAUSAL_READS:INCREMENTAL_WRITESET:STREAMING:"

// otherBytes is what the local write-sets' encoding took beyond their
// keys and row changes (wsrep_repl_other_bytes).
func otherBytes(st *replication.Stats) uint64 {
	total, counted := st.ReplicatedBytes.Load(), st.ReplicatedKeyBytes.Load()+st.ReplicatedDataBytes.Load()
	return total - min(total, counted)
}

// viewOf returns the members of the node's view, as Galera's
// wsrep_cluster_size counts them: the last view the leader ordered (the
// voters it hears from; replication.Core's Views), less members removed
// since; the node alone outside a primary component.
func viewOf(st replication.Status) []uint64 {
	if !st.Primary {
		return []uint64{st.ID}
	}
	if st.View == nil {
		return st.Voters
	}
	var view []uint64
	for _, id := range st.View {
		if slices.Contains(st.Voters, id) {
			view = append(view, id)
		}
	}
	return view
}

func localIndex(voters []uint64, id uint64) uint64 {
	for i, v := range voters {
		if v == id {
			return uint64(i)
		}
	}
	return 0
}

// mean is sum/n, or 1 when nothing was counted (Galera's idle values).
func mean(sum, n uint64) float64 {
	if n == 0 {
		return 1
	}
	return float64(sum) / float64(n)
}
