package sqlengine

import (
	"bytes"
	"context"
	"crypto/rsa"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/go-mysql-server/sql/variables"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/sirupsen/logrus"

	"github.com/certusdb/certus/internal/clientconn"
	"github.com/certusdb/certus/internal/execcomment"
	"github.com/certusdb/certus/internal/pki"
	"github.com/certusdb/certus/sqlengine/internal/fastpath"
	"github.com/certusdb/certus/sqlengine/internal/mysqlexpr"
	"github.com/certusdb/certus/storage"
)

// ServerConfig configures the MySQL protocol server of a node.
type ServerConfig struct {
	// Listener is the bound SQL port (the node binds its ports before it
	// joins a cluster, so that a member that joined can be reached).
	Listener net.Listener
	// Provider serves the databases.
	Provider *Provider
	// Cluster is the replication layer (nil for tests without one).
	Cluster Cluster
	// RootPassword is the built-in root account's password (empty: none).
	RootPassword string
	// RootHost is the built-in root account's host ("localhost" when
	// empty; "%" admits root from any host).
	RootHost string
	// Info fills the wsrep system variables.
	Info NodeInfo
	// Status returns the wsrep status variables.
	Status func() map[string]interface{}
	// TLS is the client port's certificate, key and CA (nil: no TLS), and
	// RSAKey caching_sha2_password's key for a password without TLS (nil:
	// a password only over TLS).
	TLS    *pki.Server
	RSAKey *rsa.PrivateKey
	// Files is where statements may read and write the host's files
	// (secure_file_priv; nil: nowhere).
	Files *FileAccess
	// Logger receives the server's log.
	Logger *slog.Logger
}

// Server is a node's MySQL protocol server.
type Server struct {
	srv     *server.Server
	Engine  *sqle.Engine
	Handler *Handler
	p       *Provider
	root    string
	rootAt  string

	privMu     sync.Mutex
	privLoaded []byte
	loginView  *mysql_db.MySQLDb // see loginview.go
}

func init() {
	// go-mysql-server logs every failed query at warning level; clients
	// get the error, the node's log does not need it.
	logrus.SetLevel(logrus.ErrorLevel)
	logrus.SetFormatter(abortedAsWarning{&logrus.TextFormatter{}})
}

// abortedAsWarning formats vitess's "Error reading packet" line for a
// client that went away with a reset (sysbench does at its end, as does any
// killed client) as the warning MariaDB logs for an aborted connection,
// rather than as an error of the node.
type abortedAsWarning struct{ logrus.Formatter }

// Format implements logrus.Formatter.
func (f abortedAsWarning) Format(e *logrus.Entry) ([]byte, error) {
	if e.Level == logrus.ErrorLevel && strings.HasPrefix(e.Message, "Error reading packet from") &&
		(strings.Contains(e.Message, "connection reset by peer") || strings.Contains(e.Message, "broken pipe")) {
		w := *e
		w.Level = logrus.WarnLevel
		w.Message = "aborted connection (" + strings.TrimPrefix(e.Message, "Error reading packet from ") + ")"
		return f.Formatter.Format(&w)
	}
	return f.Formatter.Format(e)
}

// NewEngine builds a go-mysql-server engine over p, with the wsrep
// functions of cluster (which may be nil).
func NewEngine(p *Provider, cluster Cluster) *sqle.Engine {
	if sql.SystemVariables == nil {
		variables.InitSystemVariables()
	}
	a := analyzer.NewBuilder(p).RemoveOnceAfterRule(ruleID(analyzer.OnceAfterDefault, "replaceAgg")).
		AddPostAnalyzeRule(fixGroupConcatID, mysqlexpr.FixGroupConcat).
		AddPostAnalyzeRule(exactSumsID, mysqlexpr.ExactSums).
		AddPostAnalyzeRule(timeAsTextID, mysqlexpr.TimeAsTextRule).
		AddOverrides(sql.EngineOverrides{
			CostedIndexScanExpressionFilter: betweenAsRange{},
			SchemaFormatter:                 &schemaFormatter{},
			Builder:                         sql.BuilderOverrides{Parser: rewritingParser{Parser: sql.NewMysqlParser(), p: p}},
		}).Build()
	groupByChecksColumnsOnly(a)
	a.ExecBuilder.PriorityBuilder = &priorityBuilder{base: a.ExecBuilder, cat: a.Catalog}
	e := sqle.New(a, &sqle.Config{VersionPostfix: "Certus"})
	a.Runner = guardedRunner{e}
	a.ExecBuilder.Runner = a.Runner
	a.Catalog.InfoSchema = withVarTables(a.Catalog.InfoSchema)
	if cluster != nil {
		a.Catalog.RegisterFunction(sql.NewEmptyContext(), functions(cluster, p.mgr.Engine())...)
	}
	return e
}

// The ids of Certus's analyzer rules, outside go-mysql-server's own.
const (
	fixGroupConcatID analyzer.RuleId = -1 - iota
	exactSumsID
	timeAsTextID
)

// ruleID finds an analyzer rule of rules by name. Rules removed from the
// analyzer:
//
//   - replaceAgg turns MIN/MAX of the primary key into ORDER BY ... LIMIT 1,
//     which returns no row instead of one NULL row when nothing matches.
//
// validateGroupBy is replaced (groupByChecksColumnsOnly).
func ruleID(rules []analyzer.Rule, name string) analyzer.RuleId {
	for _, r := range rules {
		if r.Id.String() == name {
			return r.Id
		}
	}
	panic("sqlengine: no analyzer rule " + name)
}

// NewServer creates the server (call Start to serve).
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if sql.SystemVariables == nil {
		variables.InitSystemVariables()
	}
	RegisterSystemVariables(cfg.Info)
	sql.SystemVariables.AddSystemVariables(append(tlsVars(cfg.TLS), secureFilePrivVar(cfg.Files)))
	e := NewEngine(cfg.Provider, cfg.Cluster)
	s := &Server{Engine: e, p: cfg.Provider, root: cfg.RootPassword, rootAt: cfg.RootHost, loginView: newLoginView()}
	if s.rootAt == "" {
		s.rootAt = "localhost"
	}
	InstallStatusVariables(func() map[string]interface{} {
		m := map[string]interface{}{}
		if cfg.Status != nil {
			m = cfg.Status()
		}
		if h := s.Handler; h != nil && h.fast != nil {
			m["certus_fast_path_statements"] = h.fast.Statements()
		}
		return m
	})
	db := e.Analyzer.Catalog.MySQLDb
	cfg.Provider.guard.users = db
	cfg.Provider.SetFiles(cfg.Files)
	db.SetPersister(&privilegePersister{p: cfg.Provider})
	if err := s.loadPrivileges(); err != nil {
		return nil, err
	}
	var h *Handler
	sb := func(ctx context.Context, conn *mysql.Conn, addr string) (sql.Session, error) {
		base, err := sql.BaseSessionFromConnection(ctx, conn, addr)
		if err != nil {
			return nil, err
		}
		sess := &Session{BaseSession: base, p: cfg.Provider, clientHost: clientHostOf(conn.RemoteAddr())}
		if h != nil {
			h.addSession(conn.ConnectionID, sess)
			// the handler finds it there on every statement, without a lock
			conn.ClientData = sess
		}
		return sess, nil
	}
	guarded := clientconn.Listen(cfg.Listener, clientLimits(cfg), &clientConns)
	// users and grants replicated from another node must be loaded before
	// a client logs in, not only before its first statement
	scfg := server.Config{
		Protocol: "tcp",
		Address:  cfg.Listener.Addr().String(),
		Listener: trackListener{Listener: guarded, accepted: s.refreshPrivileges, statistics: statistics},
		Version:  execcomment.VersionText() + "-Certus",

		ProtocolListenerFactory: loginViewListener(s.loginView),
	}
	describe := func(p *sql.Process) {
		if h != nil {
			h.describeProcess(p)
		}
	}
	srv, err := server.NewServerWithHandler(scfg, e, ownProcessesContext(db, describe), sb, nil, func(inner mysql.Handler) (mysql.Handler, error) {
		h = NewHandler(inner, cfg.Cluster, cfg.Logger)
		h.beforeStatement = s.refreshPrivileges
		h.fast = fastpath.NewCache()
		h.consts = &constSelects{}
		h.users = db
		h.processes = e.ProcessList
		h.listener = guarded
		h.tls = cfg.TLS
		return h, nil
	})
	if err != nil {
		guarded.Close()
		return nil, fmt.Errorf("sql server on %s: %w", cfg.Listener.Addr(), err)
	}
	s.srv = srv
	s.Handler = h
	return s, nil
}

// Start serves clients until Close.
func (s *Server) Start() error { return s.srv.Start() }

// Close stops accepting clients and closes connections.
func (s *Server) Close() error { return s.srv.Close() }

// loadPrivileges loads the replicated users and grants and adds the
// node's own root account (not replicated: each node has its own).
func (s *Server) loadPrivileges() error {
	db := s.Engine.Analyzer.Catalog.MySQLDb
	data := s.p.mgr.Engine().Catalog().Privileges()
	ctx := sql.NewEmptyContext()
	ed := db.Editor()
	defer ed.Close()
	db.SetEnabled(true)
	if len(data) > 0 {
		if err := db.OverwriteUsersAndGrantData(ctx, ed, data); err != nil {
			return fmt.Errorf("loading users and grants: %w", err)
		}
	}
	db.AddEphemeralSuperUser(ed, "root", s.rootAt, s.root)
	if err := loadLoginView(ctx, s.loginView, data, s.root, s.rootAt); err != nil {
		return fmt.Errorf("loading users and grants: %w", err)
	}
	s.privLoaded = data
	return nil
}

// refreshPrivileges reloads users and grants when another node changed
// them.
func (s *Server) refreshPrivileges() {
	data := s.p.mgr.Engine().Catalog().Privileges()
	s.privMu.Lock()
	defer s.privMu.Unlock()
	if bytes.Equal(data, s.privLoaded) {
		return
	}
	if err := s.loadPrivileges(); err != nil {
		s.Handler.log.Error("reloading users and grants", "err", err)
	}
}

// privilegePersister stores users and grants through the transaction of
// the statement that changed them, so they replicate like any DDL.
type privilegePersister struct{ p *Provider }

var _ mysql_db.MySQLDbPersistence = (*privilegePersister)(nil)

func (pp *privilegePersister) Persist(ctx *sql.Context, data []byte) error {
	return pp.p.txnFor(ctx).SchemaChange(&storage.SchemaOp{Kind: storage.OpPutPrivileges, Data: data})
}
