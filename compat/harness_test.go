package compat

import (
	"context"
	"io"
	"log/slog"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/enginetest"
	"github.com/dolthub/go-mysql-server/enginetest/scriptgen/setup"
	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/information_schema"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/certusdb/certus/sqlengine"
)

// quietLog discards the nodes' log lines.
var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// Harness runs go-mysql-server's engine tests on Certus: every engine is
// a fresh single-node cluster, and sessions are Certus sessions, so every
// statement runs in a txn.Txn and every commit is replicated, certified and
// applied through storage like on a real node.
type Harness struct {
	suite   string // the suite it runs, for the skip table
	setup   []setup.SetupScript
	node    *node
	session *sqlengine.Session
	// inUse is set when node serves an engine; until then the next engine
	// adopts it (a test may build sessions before its engine).
	inUse bool
	// filesDir is secure_file_priv, the tests' working directory ("": a
	// new directory per engine)
	filesDir string
}

var (
	_ enginetest.Harness             = (*Harness)(nil)
	_ enginetest.SkippingHarness     = (*Harness)(nil)
	_ enginetest.IndexHarness        = (*Harness)(nil)
	_ enginetest.KeylessTableHarness = (*Harness)(nil)
	_ enginetest.TransactionHarness  = (*Harness)(nil)
	_ enginetest.ClientHarness       = (*Harness)(nil)
	_ enginetest.ServerHarness       = (*Harness)(nil)
	_ enginetest.ValidatingHarness   = (*Harness)(nil)
)

// NewHarness returns a harness for a suite of suites_test.go.
func NewHarness(suite string) *Harness { return &Harness{suite: suite} }

// Setup implements enginetest.Harness.
func (h *Harness) Setup(scripts ...[]setup.SetupScript) {
	h.setup = nil
	for _, s := range scripts {
		h.setup = append(h.setup, s...)
	}
}

// NewEngine implements enginetest.Harness: a new node, an engine over it
// and the setup scripts run through it. Closing the engine stops the node.
func (h *Harness) NewEngine(t *testing.T) (enginetest.QueryEngine, error) {
	n, err := h.freeNode()
	if err != nil {
		return nil, err
	}
	h.inUse, h.session = true, nil
	// go-mysql-server's tests write and read files by relative names,
	// which are relative to secure_file_priv
	dir := h.filesDir
	if dir == "" {
		dir = t.TempDir()
	}
	files, err := sqlengine.NewFileAccess(dir, "")
	if err != nil {
		return nil, err
	}
	n.p.SetFiles(files)
	e := sqlengine.NewEngine(n.p, clusterView{n})
	e.Analyzer.Catalog.MySQLDb.AddRootAccount()
	e.Analyzer.Catalog.InfoSchema = information_schema.NewInformationSchemaDatabase()
	if err := e.BackgroundThreads.Add("certus-node", func(ctx context.Context) {
		<-ctx.Done()
		n.stop()
	}); err != nil {
		n.stop()
		return nil, err
	}
	t.Cleanup(func() { _ = e.Close() })
	scripts := h.setup
	if len(scripts) == 0 {
		scripts = setup.MydbData
	}
	if _, err := enginetest.RunSetupScripts(enginetest.NewContext(h), e, scripts, true); err != nil {
		_ = e.Close()
		return nil, err
	}
	// tests start with a session that has not seen the setup's state
	h.session = nil
	return e, nil
}

// NewContext implements enginetest.Harness.
func (h *Harness) NewContext() *sql.Context {
	if h.session == nil {
		h.session = h.newSession(enginetest.NewBaseSession())
	}
	return sql.NewContext(context.Background(), sql.WithSession(h.session))
}

// NewSession implements enginetest.TransactionHarness.
func (h *Harness) NewSession() *sql.Context {
	h.session = h.newSession(enginetest.NewBaseSession())
	return h.NewContext()
}

// NewContextWithClient implements enginetest.ClientHarness.
func (h *Harness) NewContextWithClient(client sql.Client) *sql.Context {
	s := h.newSession(sql.NewBaseSessionWithClientServer("address", client, 1))
	return sql.NewContext(context.Background(), sql.WithSession(s))
}

// SessionBuilder implements enginetest.ServerHarness: sessions of the
// latest engine's node.
func (h *Harness) SessionBuilder() server.SessionBuilder {
	return func(ctx context.Context, conn *mysql.Conn, addr string) (sql.Session, error) {
		return sqlengine.SessionBuilder(h.node.p)(ctx, conn, addr)
	}
}

// freeNode returns the node not yet serving an engine, starting one if
// needed.
func (h *Harness) freeNode() (*node, error) {
	if h.node != nil && !h.inUse {
		return h.node, nil
	}
	n, err := startNode()
	if err != nil {
		return nil, err
	}
	h.node, h.session, h.inUse = n, nil, false
	return n, nil
}

func (h *Harness) newSession(base *sql.BaseSession) *sqlengine.Session {
	if h.node == nil {
		if _, err := h.freeNode(); err != nil {
			panic(err)
		}
	}
	return sqlengine.NewSession(h.node.p, base)
}

// SupportsNativeIndexCreation implements enginetest.IndexHarness.
func (h *Harness) SupportsNativeIndexCreation() bool { return true }

// SupportsKeylessTables implements enginetest.KeylessTableHarness.
func (h *Harness) SupportsKeylessTables() bool { return true }

// SkipQueryTest implements enginetest.SkippingHarness from the skip table.
func (h *Harness) SkipQueryTest(query string) bool {
	_, ok := skips[h.suite][skipKey(query)]
	return ok
}

// ValidateEngine implements enginetest.ValidatingHarness: every table a
// database lists can be opened under its own name. It reads in a session
// of its own: reading the catalog starts a transaction, which must not
// stay behind in the test's session (a server ends it with the command).
func (h *Harness) ValidateEngine(_ *sql.Context, e *sqle.Engine) error {
	s := h.newSession(enginetest.NewBaseSession())
	defer s.SessionEnd()
	ctx := sql.NewContext(context.Background(), sql.WithSession(s))
	for _, db := range e.Analyzer.Catalog.AllDatabases(ctx) {
		names, err := db.GetTableNames(ctx)
		if err != nil {
			return err
		}
		for _, name := range names {
			tbl, ok, err := db.GetTableInsensitive(ctx, name)
			if err != nil {
				return err
			}
			if !ok || tbl.Name() != name {
				return sql.ErrTableNotFound.New(name)
			}
		}
	}
	return nil
}
