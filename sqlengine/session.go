package sqlengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/certusdb/certus/sqlengine/internal/fastpath"
	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
	"github.com/certusdb/certus/sqlengine/temptable"
	"github.com/certusdb/certus/txn"
)

// Transaction is a session's transaction as go-mysql-server sees it.
type Transaction struct {
	*txn.Txn
	// beginWait ends the causal wait its BEGIN started (wsrep_sync_wait):
	// its first read that would wait calls it instead.
	beginWait func(context.Context) error
}

var _ sql.Transaction = (*Transaction)(nil)

// String implements fmt.Stringer.
func (t *Transaction) String() string { return fmt.Sprintf("txn %d", t.ID()) }

// IsReadOnly implements sql.Transaction.
func (t *Transaction) IsReadOnly() bool { return t.ReadOnly() }

// Session is a client session. Its transactions are txn.Txn; COMMIT goes
// through replication.
type Session struct {
	*sql.BaseSession
	p *Provider

	// recursion bounds what the running statement recurses through
	recursion recursion
	// clientHost is the host the client connected from, as USER() names
	// it (clientuser.go)
	clientHost string
	// database is the current database, for other sessions' process
	// lists (the base session's is the session goroutine's own)
	database atomic.Pointer[string]
	// lastSeqno is the seqno of the session's last committed write-set
	// (WSREP_LAST_WRITTEN_GTID).
	lastSeqno uint64
	// certFailed is set when the statement's commit lost certification,
	// so the handler may retry an autocommit statement.
	certFailed bool
	// modeQuery and mode cache readMode's classification of the last
	// statement text.
	modeQuery string
	mode      txn.ReadMode
	// autoIncStride is the cluster's AUTO_INCREMENT stride last given to
	// the session's variables (0: none, or a SET ran since).
	autoIncStride uint64
	// prepared are the answers of earlier prepares of statements the fast
	// path recognises, by text (see Handler.ComPrepare).
	prepared map[string]preparedAnswer
	// scratch holds the rows of the fast path's last select, reused by
	// the next.
	scratch fastpath.Scratch
	// temp holds the session's temporary tables.
	temp temptable.Store
	// vars memoizes GetSessionVariable for the session-scope variables
	// asked (about a dozen per statement); a write to the session's
	// variables drops it. Copy-on-write, so a reader on another goroutine
	// never sees a map being written.
	vars atomic.Pointer[map[string]any]
	// diagCounts are @@warning_count and @@error_count: the conditions
	// the statement before the running one left, counted before
	// go-mysql-server clears them (see noteDiagnostics).
	diagCounts [2]int64
	// noImplicitCommit: the running statement is one that never ends a
	// transaction in MySQL (a query or DML), and keepTxn says that a
	// commit go-mysql-server asked during it was refused (see
	// CommitTransaction).
	noImplicitCommit, keepTxn bool
	// deferred are warnings found while the statement was parsed, which
	// go-mysql-server would clear after planning: the exec builder gives
	// them to the statement (emitDeferred)
	deferred []sql.Warning
}

var (
	_ sql.TransactionSession    = (*Session)(nil)
	_ sql.LifecycleAwareSession = (*Session)(nil)
)

// SessionBuilder returns a server.SessionBuilder for sessions of p.
func SessionBuilder(p *Provider) server.SessionBuilder {
	return func(ctx context.Context, conn *mysql.Conn, addr string) (sql.Session, error) {
		base, err := sql.BaseSessionFromConnection(ctx, conn, addr)
		if err != nil {
			return nil, err
		}
		return &Session{BaseSession: base, p: p}, nil
	}
}

// NewSession returns a session not attached to a connection (tests,
// internal statements).
func NewSession(p *Provider, base *sql.BaseSession) *Session {
	return &Session{BaseSession: base, p: p}
}

// LastCommittedSeqno is the seqno of the session's last write-set.
func (s *Session) LastCommittedSeqno() uint64 { return s.lastSeqno }

// SetCurrentDatabase implements sql.Session.
func (s *Session) SetCurrentDatabase(db string) {
	s.BaseSession.SetCurrentDatabase(db)
	s.database.Store(&db)
}

// currentDatabase is the session's current database, read from any
// goroutine.
func (s *Session) currentDatabase() string {
	if db := s.database.Load(); db != nil {
		return *db
	}
	return ""
}

// GetSessionVariable implements sql.Session. A global-only variable has no
// session value: @@name reads the global one, as in MySQL. (The base
// session holds copies taken when it began, which a SET GLOBAL since has
// not changed.)
func (s *Session) GetSessionVariable(ctx *sql.Context, name string) (any, error) {
	memo := s.vars.Load()
	if memo != nil {
		if v, ok := (*memo)[name]; ok {
			return v, nil
		}
	}
	if isGlobalOnly(name) {
		if _, v, ok := sql.SystemVariables.GetGlobal(name); ok {
			return v, nil
		}
	}
	switch name { // never memoized: they change with every statement
	case "warning_count":
		return s.diagCounts[0], nil
	case "error_count":
		return s.diagCounts[1], nil
	}
	v, err := s.BaseSession.GetSessionVariable(ctx, name)
	if err == nil {
		next := make(map[string]any, 16)
		if memo != nil {
			for k, x := range *memo {
				next[k] = x
			}
		}
		next[name] = v
		s.vars.CompareAndSwap(memo, &next) // lost to a write or another fill: no memo this time
	}
	return v, err
}

// SetSessionVariable implements sql.Session.
func (s *Session) SetSessionVariable(ctx *sql.Context, name string, value any) error {
	defer s.vars.Store(nil)
	return s.BaseSession.SetSessionVariable(ctx, name, value)
}

// InitSessionVariable implements sql.Session.
func (s *Session) InitSessionVariable(ctx *sql.Context, name string, value any) error {
	defer s.vars.Store(nil)
	return s.BaseSession.InitSessionVariable(ctx, name, value)
}

// InitSessionVariableDefault implements sql.Session.
func (s *Session) InitSessionVariableDefault(ctx *sql.Context, name string, value any) error {
	defer s.vars.Store(nil)
	return s.BaseSession.InitSessionVariableDefault(ctx, name, value)
}

// GetAllSessionVariables implements sql.Session (SHOW VARIABLES), with the
// global values of global-only variables.
func (s *Session) GetAllSessionVariables() map[string]any {
	m := s.BaseSession.GetAllSessionVariables()
	for k := range m {
		if isGlobalOnly(k) {
			if _, v, ok := sql.SystemVariables.GetGlobal(k); ok {
				m[k] = v
			}
		}
	}
	return m
}

// globalOnlyVars caches isGlobalOnly by name as asked.
var globalOnlyVars sync.Map

// isGlobalOnly reports whether name is a known system variable without
// session scope.
func isGlobalOnly(name string) bool {
	if v, ok := globalOnlyVars.Load(name); ok {
		return v.(bool)
	}
	sv, _, ok := sql.SystemVariables.GetGlobal(name)
	if !ok {
		return false // not cached: it may be registered later
	}
	g := sv.IsGlobalOnly()
	globalOnlyVars.Store(name, g)
	return g
}

func (s *Session) txnOptions(ctx *sql.Context, chr sql.TransactionCharacteristic) txn.Options {
	opts := txn.Options{ReadOnly: chr == sql.ReadOnly}
	if v, err := s.GetSessionVariable(ctx, "transaction_isolation"); err == nil {
		switch strings.ToUpper(fmt.Sprint(v)) {
		case "READ-COMMITTED", "READ-UNCOMMITTED":
			opts.Isolation = txn.ReadCommitted
		}
	}
	if v, err := s.GetSessionVariable(ctx, "transaction_read_only"); err == nil {
		if sqlvalue.Truthy(v) {
			opts.ReadOnly = true
		}
	}
	if v, err := s.GetSessionVariable(ctx, "wsrep_trx_fragment_size"); err == nil {
		if n, ok := sqlvalue.AsInt(v); ok && n > 0 {
			opts.FragmentSize = n
			if u, err := s.GetSessionVariable(ctx, "wsrep_trx_fragment_unit"); err == nil {
				opts.FragmentUnit, _ = txn.ParseFragmentUnit(fmt.Sprint(u))
			}
		}
	}
	if v, err := s.GetSessionVariable(ctx, "innodb_lock_wait_timeout"); err == nil {
		if n, ok := sqlvalue.AsInt(v); ok && n > 0 {
			opts.LockWaitTimeout = time.Duration(n) * time.Second
		}
	}
	return opts
}

// StartTransaction implements sql.TransactionSession.
func (s *Session) StartTransaction(ctx *sql.Context, chr sql.TransactionCharacteristic) (sql.Transaction, error) {
	if old, ok := s.GetTransaction().(*Transaction); ok && old != nil {
		old.Rollback()
		s.temp.Rollback()
	}
	s.temp.BeginTransaction()
	return &Transaction{Txn: s.p.mgr.Begin(s.txnOptions(ctx, chr))}, nil
}

// CommitTransaction implements sql.TransactionSession: the write-set is
// replicated, certified and applied before it returns.
//
// go-mysql-server binds a view's CREATE VIEW statement to read the view
// and keeps that statement's DDL flag for the query, so any statement
// reading a view committed the open transaction, as DDL does: a ROLLBACK
// after `INSERT ...; SELECT ... FROM v` kept the row, and mysqldump
// --single-transaction lost its savepoint at the first view. A commit asked
// while a query or DML statement runs inside an explicit transaction is
// that flag, and is refused: the transaction goes on (keepTxn keeps
// go-mysql-server from dropping it).
func (s *Session) CommitTransaction(ctx *sql.Context, tx sql.Transaction) error {
	t, ok := tx.(*Transaction)
	if !ok || t == nil {
		return nil
	}
	if s.noImplicitCommit && s.inExplicitTransaction() {
		s.keepTxn = true
		return nil
	}
	out, err := t.Commit(ctx)
	if err != nil {
		// the transaction is over whatever happened; don't leave it behind
		ctx.SetTransaction(nil)
		ctx.SetIgnoreAutoCommit(false)
		s.temp.Rollback()
		if errors.Is(err, txn.ErrCertification) {
			s.certFailed = true
		}
		return engineErr(err)
	}
	if out.Seqno != 0 {
		s.lastSeqno = out.Seqno
	}
	s.temp.Commit()
	return nil
}

// inExplicitTransaction reports whether the session's transaction was
// begun by START TRANSACTION or runs with autocommit off.
func (s *Session) inExplicitTransaction() bool {
	if s.GetIgnoreAutoCommit() {
		return true
	}
	ac, err := s.GetSessionVariable(nil, sql.AutoCommitSessionVar)
	return err == nil && !sqlvalue.Truthy(ac)
}

// SetTransaction implements sql.Session: go-mysql-server drops the
// transaction after committing it, except after a commit refused (see
// CommitTransaction).
func (s *Session) SetTransaction(tx sql.Transaction) {
	if tx == nil && s.keepTxn {
		s.keepTxn = false
		return
	}
	s.BaseSession.SetTransaction(tx)
}

// Rollback implements sql.TransactionSession.
func (s *Session) Rollback(ctx *sql.Context, tx sql.Transaction) error {
	if t, ok := tx.(*Transaction); ok && t != nil {
		t.Rollback()
	}
	s.temp.Rollback()
	return nil
}

// CreateSavepoint implements sql.TransactionSession.
func (s *Session) CreateSavepoint(ctx *sql.Context, tx sql.Transaction, name string) error {
	if t, ok := tx.(*Transaction); ok && t != nil {
		t.Savepoint(strings.ToLower(name))
		s.temp.Savepoint(strings.ToLower(name))
	}
	return nil
}

// RollbackToSavepoint implements sql.TransactionSession.
func (s *Session) RollbackToSavepoint(ctx *sql.Context, tx sql.Transaction, name string) error {
	t, ok := tx.(*Transaction)
	if !ok || t == nil {
		return sql.ErrSavepointDoesNotExist.New(name)
	}
	if err := t.RollbackToSavepoint(strings.ToLower(name)); err != nil {
		return sql.ErrSavepointDoesNotExist.New(name)
	}
	s.temp.RollbackTo(strings.ToLower(name))
	return nil
}

// ReleaseSavepoint implements sql.TransactionSession.
func (s *Session) ReleaseSavepoint(ctx *sql.Context, tx sql.Transaction, name string) error {
	t, ok := tx.(*Transaction)
	if !ok || t == nil || !t.ReleaseSavepoint(strings.ToLower(name)) {
		return sql.ErrSavepointDoesNotExist.New(name)
	}
	s.temp.Release(strings.ToLower(name))
	return nil
}

// deferWarning keeps a warning for the running statement (see deferred).
func (s *Session) deferWarning(code int, msg string) {
	s.deferred = append(s.deferred, sql.Warning{Level: "Warning", Code: code, Message: msg})
}

// emitDeferred gives the statement the warnings deferred while parsing it.
func emitDeferred(ctx *sql.Context) {
	s, ok := ctx.Session.(*Session)
	if !ok || len(s.deferred) == 0 {
		return
	}
	for _, w := range s.deferred {
		ctx.Warn(w.Code, "%s", w.Message)
	}
	s.deferred = nil
}

// CommandBegin implements sql.LifecycleAwareSession.
func (s *Session) CommandBegin() error {
	s.certFailed = false
	s.deferred = nil
	s.temp.NewCommand()
	if t, ok := s.GetTransaction().(*Transaction); ok && t != nil {
		t.NewStatement()
	}
	return nil
}

// CommandEnd implements sql.LifecycleAwareSession. A failed autocommit
// statement leaves its implicit transaction behind in go-mysql-server; roll
// it back here so the next statement does not read a stale snapshot.
func (s *Session) CommandEnd() {
	t, ok := s.GetTransaction().(*Transaction)
	if !ok || t == nil {
		return
	}
	if t.Aborted() {
		// a deadlock victim: InnoDB rolled back the whole transaction
		t.Rollback()
		s.temp.Rollback()
		s.SetTransaction(nil)
		s.SetIgnoreAutoCommit(false)
		return
	}
	if s.GetIgnoreAutoCommit() {
		return
	}
	if ac, err := s.GetSessionVariable(nil, sql.AutoCommitSessionVar); err == nil && sqlvalue.Truthy(ac) {
		t.Rollback()
		s.temp.Rollback()
		s.SetTransaction(nil)
	}
}

// SessionEnd implements sql.LifecycleAwareSession: the transaction is
// rolled back and the temporary tables dropped.
func (s *Session) SessionEnd() {
	if t, ok := s.GetTransaction().(*Transaction); ok && t != nil {
		t.Rollback()
		s.SetTransaction(nil)
	}
	s.temp = temptable.Store{}
}
