package sqlengine

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
	"github.com/certusdb/certus/sqlengine/temptable"
)

// NodeInfo are the per-node values of the wsrep system variables.
type NodeInfo struct {
	NodeName       string
	NodeAddress    string
	ClusterName    string
	ClusterAddress string
	// ProviderOptions is the initial wsrep_provider_options string.
	ProviderOptions string
	// SetProviderOptions applies SET GLOBAL wsrep_provider_options: it
	// takes the options given and returns the whole set now in effect, or
	// an error (the options change nothing then). Nil: read-only.
	SetProviderOptions func(options string) (string, error)
	// ApplierThreads is the initial wsrep_applier_threads (0: 1), and
	// SetApplierThreads applies SET GLOBAL wsrep_applier_threads (or its
	// alias wsrep_slave_threads). Nil: the variable is read-only.
	ApplierThreads    int
	SetApplierThreads func(n int)
	// SetMaintenance learns SET GLOBAL wsrep_desync,
	// wsrep_reject_queries and wsrep_sst_donor_rejects_queries. Nil:
	// nothing to tell.
	SetMaintenance func(Maintenance)
	// SyncCommit: the log is fsynced before a commit is acknowledged
	// (innodb_flush_log_at_trx_commit reads 1, else 2).
	SyncCommit bool
}

// Maintenance is what an operator set to take a node out of service.
type Maintenance struct {
	// Desync is wsrep_desync.
	Desync bool
	// Reject: wsrep_reject_queries is ALL or ALL_KILL.
	Reject bool
	// DonorRejects is wsrep_sst_donor_rejects_queries: refuse queries
	// while serving a state transfer.
	DonorRejects bool
}

// errBadProviderOptions is MariaDB's answer to a wsrep_provider_options
// value it cannot apply (ER_WRONG_ARGUMENTS).
func errBadProviderOptions(err error) error {
	return mysql.NewSQLError(mysql.ERWrongArguments, "HY000", "Incorrect arguments to SET: %v", err)
}

// providerOptionsVar is wsrep_provider_options. As in Galera, setting it
// changes only the options named, and reading it shows all of them.
type providerOptionsVar struct {
	*sql.MysqlSystemVariable
	set func(string) (string, error)
}

// SetValue implements sql.SystemVariable.
func (v *providerOptionsVar) SetValue(ctx *sql.Context, val any, global bool) (sql.SystemVarValue, error) {
	if !global {
		return sql.SystemVarValue{}, sql.ErrSystemVariableGlobalOnly.New(v.Name)
	}
	str, ok := val.(string)
	if !ok {
		return sql.SystemVarValue{}, sql.ErrInvalidSystemVariableValue.New(v.Name, val)
	}
	all, err := v.set(str)
	if err != nil {
		return sql.SystemVarValue{}, errBadProviderOptions(err)
	}
	return sql.SystemVarValue{Var: v, Val: all}, nil
}

// IsReadOnly implements sql.SystemVariable.
func (v *providerOptionsVar) IsReadOnly() bool { return false }

// applierThreadsVar is wsrep_applier_threads or its alias
// wsrep_slave_threads: setting either sets the node's applier threads and,
// as in MariaDB, the other name's value too (mirrored right after, as
// go-mysql-server holds its registry's lock while a value is set).
type applierThreadsVar struct {
	*sql.MysqlSystemVariable
	alias   string
	current *atomic.Int64 // the node's value, shared by both names
	set     func(int)
}

// SetValue implements sql.SystemVariable.
func (v *applierThreadsVar) SetValue(ctx *sql.Context, val any, global bool) (sql.SystemVarValue, error) {
	svv, err := v.MysqlSystemVariable.SetValue(ctx, val, global)
	if err != nil {
		return svv, err
	}
	n, ok := sqlvalue.AsInt(svv.Val)
	if !ok || v.current.Swap(n) == n {
		return svv, nil // unchanged, or the alias's mirror of this change
	}
	v.set(int(n))
	go func() { _ = sql.SystemVariables.SetGlobal(sql.NewEmptyContext(), v.alias, n) }()
	return svv, nil
}

// IsReadOnly implements sql.SystemVariable.
func (v *applierThreadsVar) IsReadOnly() bool { return false }

func applierThreads(info NodeInfo) []sql.SystemVariable {
	def := int64(max(info.ApplierThreads, 1))
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	mk := func(name string) *sql.MysqlSystemVariable {
		return &sql.MysqlSystemVariable{Name: name, Scope: global, Dynamic: info.SetApplierThreads != nil,
			Type: types.NewSystemIntType(name, 1, 512, false), Default: def}
	}
	a, b := mk("wsrep_applier_threads"), mk("wsrep_slave_threads")
	if info.SetApplierThreads == nil {
		return []sql.SystemVariable{a, b}
	}
	cur := &atomic.Int64{}
	cur.Store(def)
	return []sql.SystemVariable{
		&applierThreadsVar{MysqlSystemVariable: a, alias: b.Name, current: cur, set: info.SetApplierThreads},
		&applierThreadsVar{MysqlSystemVariable: b, alias: a.Name, current: cur, set: info.SetApplierThreads},
	}
}

var registerOnce sync.Mutex

// RegisterSystemVariables adds the wsrep_* system variables (and Certus's
// versions of a few InnoDB ones) with this node's values. System variables
// are process-wide in go-mysql-server: one node per process.
func RegisterSystemVariables(info NodeInfo) {
	registerOnce.Lock()
	defer registerOnce.Unlock()
	both := sql.GetMysqlScope(sql.SystemVariableScope_Both)
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	str := func(name, def string, scope *sql.MysqlScope, dynamic bool) sql.SystemVariable {
		return &sql.MysqlSystemVariable{Name: name, Scope: scope, Dynamic: dynamic, Type: types.NewSystemStringType(name), Default: def}
	}
	boolean := func(name string, def int8, scope *sql.MysqlScope) sql.SystemVariable {
		return &sql.MysqlSystemVariable{Name: name, Scope: scope, Dynamic: true, Type: types.NewSystemBoolType(name), Default: def}
	}
	integer := func(name string, lo, hi, def int64, scope *sql.MysqlScope) sql.SystemVariable {
		return &sql.MysqlSystemVariable{Name: name, Scope: scope, Dynamic: true, Type: types.NewSystemIntType(name, lo, hi, false), Default: def}
	}
	sql.SystemVariables.AddSystemVariables(applierThreads(info))
	autoIncrementControl.Store(true)
	autoIncrementGlobal.Store(0)
	rejectQueries.Store(false)
	desync.Store(false)
	donorRejects.Store(false)
	sql.SystemVariables.AddSystemVariables([]sql.SystemVariable{
		boolean("wsrep_on", 1, both),
		str("wsrep_node_name", info.NodeName, global, false),
		str("wsrep_node_address", info.NodeAddress, global, false),
		str("wsrep_node_incoming_address", info.NodeAddress, global, false),
		str("wsrep_cluster_name", info.ClusterName, global, false),
		str("wsrep_cluster_address", info.ClusterAddress, global, false),
		str("wsrep_provider", "certus", global, false),
		providerOptions(info),
		integer("wsrep_sync_wait", 0, 15, 0, both),
		boolean("wsrep_causal_reads", 0, both),
		integer("wsrep_retry_autocommit", 0, 10000, 1, both),
		&sql.MysqlSystemVariable{Name: "wsrep_trx_fragment_unit", Scope: both, Dynamic: true,
			Type: types.NewSystemEnumType("wsrep_trx_fragment_unit", "bytes", "rows", "statements"), Default: "bytes"},
		integer("wsrep_trx_fragment_size", 0, 2147483647, 0, both),
		&sql.MysqlSystemVariable{Name: "wsrep_auto_increment_control", Scope: global, Dynamic: true,
			Type: types.NewSystemBoolType("wsrep_auto_increment_control"), Default: int8(1),
			NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
				autoIncrementControl.Store(sqlvalue.Truthy(v.Val))
				autoIncrementGlobal.Store(0)
				return nil
			}},
		boolean("wsrep_dirty_reads", 0, both),
		maintenanceVar(info, &sql.MysqlSystemVariable{Name: "wsrep_desync", Scope: global, Dynamic: true,
			Type: types.NewSystemBoolType("wsrep_desync"), Default: int8(0)}),
		maintenanceVar(info, &sql.MysqlSystemVariable{Name: "wsrep_reject_queries", Scope: global, Dynamic: true,
			Type: types.NewSystemEnumType("wsrep_reject_queries", "NONE", "ALL", "ALL_KILL"), Default: "NONE"}),
		maintenanceVar(info, &sql.MysqlSystemVariable{Name: "wsrep_sst_donor_rejects_queries", Scope: global, Dynamic: true,
			Type: types.NewSystemBoolType("wsrep_sst_donor_rejects_queries"), Default: int8(0)}),
		boolean("wsrep_log_conflicts", 0, global),
		integer("wsrep_max_ws_size", 1024, 2147483647, 2147483647, global),
		integer("wsrep_max_ws_rows", 0, 1048576, 0, both),
		&sql.MysqlSystemVariable{Name: "wsrep_osu_method", Scope: both, Dynamic: true,
			Type: types.NewSystemEnumType("wsrep_osu_method", "TOI", "RSU"), Default: "TOI"},
		str("wsrep_sst_method", "certus", global, true),
		str("wsrep_data_home_dir", "", global, false),
		// certus_fast_path runs hot OLTP statements without the general
		// planner (OFF: everything through it, e.g. to compare results).
		boolean("certus_fast_path", 1, both),
		// the previous statement's conditions (Session.GetSessionVariable
		// answers them); read-only, as in MySQL
		&sql.MysqlSystemVariable{Name: "warning_count", Scope: sql.GetMysqlScope(sql.SystemVariableScope_Session),
			Type: types.NewSystemIntType("warning_count", 0, 65535, false), Default: int64(0)},
		&sql.MysqlSystemVariable{Name: "error_count", Scope: sql.GetMysqlScope(sql.SystemVariableScope_Session),
			Type: types.NewSystemIntType("error_count", 0, 65535, false), Default: int64(0)},
		// InnoDB row locks are real here, so its timeout is too.
		integer("innodb_lock_wait_timeout", 1, 1073741824, 50, both),
		integer("innodb_autoinc_lock_mode", 0, 2, 2, global),
		// the node's --sync-commit, as InnoDB's durability setting reads:
		// 1 flushes at every commit, 2 leaves it to the OS
		&sql.MysqlSystemVariable{Name: "innodb_flush_log_at_trx_commit", Scope: global,
			Type: types.NewSystemIntType("innodb_flush_log_at_trx_commit", 0, 2, false), Default: flushAtCommit(info.SyncCommit)},
		str("default_storage_engine", "InnoDB", both, true),
		str("version_comment", "Certus", global, false), // go-mysql-server says "Dolt"
		collationVar("collation_server"),
		collationVar("collation_connection"),
		collationVar("collation_database"),
		maxPacketVar(),
		// the most memory one temporary table may take (see sqlengine/temptable)
		&sql.MysqlSystemVariable{Name: "max_heap_table_size", Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type: types.NewSystemUintType("max_heap_table_size", 16384, 1844674407370954752), Default: uint64(temptable.DefaultMaxBytes)},
	})
}

// DefaultCollation is the collation of a database created without one
// (through collation_server) and of string literals (collation_connection):
// MySQL 8.0's utf8mb4_0900_ai_ci, so 'a' = 'A' as applications expect.
// go-mysql-server's own default is utf8mb4_0900_bin; databases created
// before Certus changed it keep that (storage.DatabaseDef.Collation "").
const DefaultCollation = "utf8mb4_0900_ai_ci"

// collationVar is one of the collation_* variables, with Certus's default;
// a value that is not a collation is refused.
func collationVar(name string) sql.SystemVariable {
	return &sql.MysqlSystemVariable{Name: name, Scope: sql.GetMysqlScope(sql.SystemVariableScope_Both), Dynamic: true,
		Type: types.NewSystemStringType(name), Default: DefaultCollation,
		NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
			s, ok := v.Val.(string)
			if !ok {
				return sql.ErrInvalidSystemVariableValue.New(name, v.Val)
			}
			if _, err := sql.ParseCollation("", s, false); err != nil {
				return err
			}
			return nil
		}}
}

// rejectQueries is wsrep_reject_queries other than NONE, desync is
// wsrep_desync, donorRejects is wsrep_sst_donor_rejects_queries, and
// killClients is set by wsrep_reject_queries = ALL_KILL until the handler
// has closed the client connections (process-wide, like the variables).
var rejectQueries, desync, donorRejects, killClients atomic.Bool

// maintenanceVar is wsrep_desync, wsrep_reject_queries or
// wsrep_sst_donor_rejects_queries: a change is recorded for the handler
// and told to the node.
func maintenanceVar(info NodeInfo, v *sql.MysqlSystemVariable) *sql.MysqlSystemVariable {
	v.NotifyChanged = func(_ *sql.Context, _ sql.SystemVariableScope, val sql.SystemVarValue) error {
		switch v.Name {
		case "wsrep_desync":
			desync.Store(sqlvalue.Truthy(val.Val))
		case "wsrep_sst_donor_rejects_queries":
			donorRejects.Store(sqlvalue.Truthy(val.Val))
		default:
			mode := strings.ToUpper(fmt.Sprint(val.Val))
			rejectQueries.Store(mode != "NONE")
			killClients.Store(mode == "ALL_KILL")
		}
		if info.SetMaintenance != nil {
			info.SetMaintenance(Maintenance{Desync: desync.Load(), Reject: rejectQueries.Load(), DonorRejects: donorRejects.Load()})
		}
		return nil
	}
	return v
}

func providerOptions(info NodeInfo) sql.SystemVariable {
	const name = "wsrep_provider_options"
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	v := &sql.MysqlSystemVariable{Name: name, Scope: global, Dynamic: info.SetProviderOptions != nil,
		Type: types.NewSystemStringType(name), Default: info.ProviderOptions}
	if info.SetProviderOptions == nil {
		return v
	}
	return &providerOptionsVar{MysqlSystemVariable: v, set: info.SetProviderOptions}
}

// statusRegistry adds computed wsrep status variables to go-mysql-server's
// registry (which has no public way to register new ones).
type statusRegistry struct {
	sql.StatusVariableRegistry
	values func() map[string]interface{}
}

// InstallStatusVariables wraps the process-wide status registry so that
// SHOW STATUS includes the values the function returns. Call it after the
// engine is created (creating an engine resets the registry).
func InstallStatusVariables(values func() map[string]interface{}) {
	inner := sql.StatusVariables
	if sr, ok := inner.(*statusRegistry); ok {
		inner = sr.StatusVariableRegistry
	}
	sql.StatusVariables = &statusRegistry{StatusVariableRegistry: inner, values: values}
}

func (r *statusRegistry) NewGlobalMap() map[string]sql.StatusVarValue {
	m := r.StatusVariableRegistry.NewGlobalMap()
	for k, v := range r.values() {
		m[k] = &sql.ImmutableStatusVarValue{Var: &sql.MySQLStatusVariable{Name: k, Scope: sql.StatusVariableScope_Global, Type: types.Text, Default: ""}, Val: v}
	}
	return m
}

func (r *statusRegistry) GetGlobal(name string) (sql.StatusVariable, interface{}, bool) {
	if lower := strings.ToLower(name); strings.HasPrefix(lower, "wsrep_") || strings.HasPrefix(lower, "certus_") || lower == "uptime" {
		for k, v := range r.values() {
			if strings.EqualFold(k, name) {
				return &sql.MySQLStatusVariable{Name: k, Scope: sql.StatusVariableScope_Global, Type: types.Text}, v, true
			}
		}
	}
	return r.StatusVariableRegistry.GetGlobal(name)
}

// SortedKeys returns the keys of m in order (for stable output).
func SortedKeys(m map[string]interface{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// flushAtCommit is innodb_flush_log_at_trx_commit for a node that does
// (1) or does not (2) fsync its log at every commit.
func flushAtCommit(sync bool) int64 {
	if sync {
		return 1
	}
	return 2
}
