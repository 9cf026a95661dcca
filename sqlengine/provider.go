// Package sqlengine connects go-mysql-server to Certus: the database
// provider, databases, tables and indexes over the storage engine, sessions
// whose transactions are txn.Txn, the wsrep system and status variables, and
// the MySQL protocol handler that maps errors to MySQL codes and adds
// causal reads (wsrep_sync_wait), quorum checks (1047) and autocommit retry.
package sqlengine

import (
	crand "crypto/rand"
	"encoding/binary"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/txn"
)

// Provider is the sql.DatabaseProvider over a node's catalog. What a
// session sees is the catalog of its transaction.
type Provider struct {
	mgr  *txn.Manager
	perf *perfSchema // performance_schema: status and variables as tables
	// guard checks every parsed statement (the server fills in the users
	// and secure_file_priv)
	guard stmtGuard

	estimates sync.Map // table id -> rowEstimate
}

type rowEstimate struct {
	rows uint64
	at   time.Time
}

// rowEstimateTTL is how long a table's row count estimate is reused.
const rowEstimateTTL = 5 * time.Second

// rowEstimate returns an estimate of a table's row count.
func (p *Provider) rowEstimate(id uint64, info *storage.TableInfo) (uint64, bool, error) {
	if v, ok := p.estimates.Load(id); ok {
		if e := v.(rowEstimate); time.Since(e.at) < rowEstimateTTL {
			return e.rows, false, nil
		}
	}
	lo, hi := info.RowBounds()
	size, err := p.mgr.Engine().EstimateSize(lo, hi)
	if err != nil {
		return 0, false, err
	}
	rows := size/64 + 1
	p.estimates.Store(id, rowEstimate{rows: rows, at: time.Now()})
	return rows, false, nil
}

var _ sql.MutableDatabaseProvider = (*Provider)(nil)
var _ sql.CollatedDatabaseProvider = (*Provider)(nil)

// NewProvider returns a provider over the manager's engine.
func NewProvider(mgr *txn.Manager) *Provider {
	p := &Provider{mgr: mgr, perf: newPerfSchema()}
	p.guard.catalog = mgr.Engine().Catalog
	return p
}

// Manager is the transaction manager.
func (p *Provider) Manager() *txn.Manager { return p.mgr }

// txnFor returns the transaction of the statement, starting one when the
// engine has not (the session's CommandEnd cleans up).
func (p *Provider) txnFor(ctx *sql.Context) *txn.Txn {
	if t, ok := ctx.GetTransaction().(*Transaction); ok && t != nil {
		return t.Txn // possibly a deadlock victim; the session ends it
	}
	if s, ok := ctx.Session.(*Session); ok {
		tx, err := s.StartTransaction(ctx, sql.ReadWrite)
		if err == nil {
			ctx.SetTransaction(tx)
			return tx.(*Transaction).Txn
		}
	}
	return p.mgr.Begin(txn.Options{})
}

// catalog returns the catalog the statement sees.
func (p *Provider) catalog(ctx *sql.Context) *storage.Catalog {
	return p.txnFor(ctx).Catalog()
}

// Database implements sql.DatabaseProvider.
func (p *Provider) Database(ctx *sql.Context, name string) (sql.Database, error) {
	if strings.EqualFold(name, perfSchemaName) {
		return p.perf, nil
	}
	d, ok := p.catalog(ctx).Database(name)
	if !ok {
		return nil, sql.ErrDatabaseNotFound.New(name)
	}
	return &Database{p: p, name: d.Name}, nil
}

// HasDatabase implements sql.DatabaseProvider.
func (p *Provider) HasDatabase(ctx *sql.Context, name string) bool {
	if strings.EqualFold(name, perfSchemaName) {
		return true
	}
	_, ok := p.catalog(ctx).Database(name)
	return ok
}

// AllDatabases implements sql.DatabaseProvider.
func (p *Provider) AllDatabases(ctx *sql.Context) []sql.Database {
	// performance_schema is not listed: it holds no routines, triggers or
	// events that go-mysql-server's listings could ask it for
	dbs := p.catalog(ctx).Databases()
	out := make([]sql.Database, 0, len(dbs))
	for _, d := range dbs {
		if !strings.EqualFold(d.Name, perfSchemaName) {
			out = append(out, &Database{p: p, name: d.Name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i].Name()) < strings.ToLower(out[j].Name()) })
	return out
}

// CreateDatabase implements sql.MutableDatabaseProvider.
func (p *Provider) CreateDatabase(ctx *sql.Context, name string) error {
	return p.CreateCollatedDatabase(ctx, name, sql.Collation_Unspecified)
}

// CreateCollatedDatabase implements sql.CollatedDatabaseProvider.
func (p *Provider) CreateCollatedDatabase(ctx *sql.Context, name string, collation sql.CollationID) error {
	t := p.txnFor(ctx)
	if len(name) > maxIdentifier {
		return sql.ErrIdentifierIsTooLong.New(name)
	}
	if strings.EqualFold(name, perfSchemaName) {
		return sql.ErrDatabaseExists.New(name)
	}
	if err := p.lockDatabase(ctx, t, name); err != nil {
		return err
	}
	if _, ok := p.mgr.Engine().Catalog().Database(name); ok {
		return sql.ErrDatabaseExists.New(name)
	}
	if _, ok := t.Catalog().Database(name); ok {
		return sql.ErrDatabaseExists.New(name)
	}
	if collation == sql.Collation_Unspecified {
		collation = serverCollation(ctx)
	}
	def := &storage.DatabaseDef{Name: name, Collation: collation.Name()}
	return t.SchemaChange(&storage.SchemaOp{Kind: storage.OpPutDatabase, Database: def})
}

// serverCollation is the session's collation_server, the collation of a
// database created without one (as in MySQL). It is written into the
// database's definition, so every node has the same whatever its own
// setting.
func serverCollation(ctx *sql.Context) sql.CollationID {
	if v, err := ctx.GetSessionVariable(ctx, "collation_server"); err == nil {
		if s, ok := v.(string); ok {
			if c, err := sql.ParseCollation("", s, false); err == nil {
				return c
			}
		}
	}
	c, _ := sql.ParseCollation("", DefaultCollation, false)
	return c
}

// DropDatabase implements sql.MutableDatabaseProvider.
func (p *Provider) DropDatabase(ctx *sql.Context, name string) error {
	if strings.EqualFold(name, perfSchemaName) {
		return errSystemDatabase(ctx, name)
	}
	t := p.txnFor(ctx)
	if err := p.lockDatabase(ctx, t, name); err != nil {
		return err
	}
	if _, ok := p.mgr.Engine().Catalog().Database(name); !ok {
		return sql.ErrDatabaseNotFound.New(name)
	}
	d, ok := t.Catalog().Database(name)
	if !ok {
		return sql.ErrDatabaseNotFound.New(name)
	}
	ids := make([]uint64, 0, len(d.Tables))
	for _, id := range d.Tables {
		ids = append(ids, id)
	}
	return t.SchemaChange(&storage.SchemaOp{Kind: storage.OpDropDatabase, Name: d.Name}, ids...)
}

// lockDatabase orders the CREATE and DROP DATABASE of one name on this
// node: the lock is held until the transaction's write-set is applied, so
// a concurrent one then finds the database created or dropped in the
// latest catalog and fails with the error its IF [NOT] EXISTS form turns
// into a note (before, both proposed the change and the second was
// rejected when it applied). The key is that of table id 0, which no table
// has (table ids are odd).
func (p *Provider) lockDatabase(ctx *sql.Context, t *txn.Txn, name string) error {
	return engineErr(t.LockKey(ctx, storage.CertKey(0, []byte(strings.ToLower(name))), txn.CurrentExclusive))
}

// maxIdentifier is MySQL's limit on database, table and column names.
const maxIdentifier = 64

// newTableID picks a table id. Ids are chosen by the origin of CREATE
// TABLE and replicated, so every node uses the same one.
func newTableID() uint64 {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])>>1 | 1
}
