package sqlengine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
	"google.golang.org/protobuf/proto"

	"github.com/certusdb/certus/internal/clientconn"
	"github.com/certusdb/certus/internal/pki"
	"github.com/certusdb/certus/internal/sqllex"
	"github.com/certusdb/certus/sqlengine/internal/fastpath"
	"github.com/certusdb/certus/sqlengine/internal/mysqlexpr"
	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
	"github.com/certusdb/certus/storage"
)

// Cluster is what the SQL layer needs from replication.
type Cluster interface {
	// Primary reports whether the node is in the primary component.
	Primary() bool
	// StartSyncWait starts a causal wait; calling the result waits until
	// the node has applied everything committed in the cluster when
	// StartSyncWait was called.
	StartSyncWait() func(context.Context) error
	// WaitApplied waits until the node has applied seqno.
	WaitApplied(ctx context.Context, seqno uint64) error
	// ClusterUUID is the cluster's state UUID (the GTID's domain).
	ClusterUUID() string
	// Applied is the seqno of the last write-set applied on this node.
	Applied() uint64
}

// Donor is implemented by a Cluster that can tell whether the node is
// serving a state transfer (wsrep_sst_donor_rejects_queries).
type Donor interface {
	Donating() bool
}

// donating reports whether the node serves a state transfer now.
func (h *Handler) donating() bool {
	d, ok := h.cluster.(Donor)
	return ok && d.Donating()
}

// StatusFlusher is implemented by a Cluster whose status averages (flow
// control paused fraction, queue lengths) FLUSH STATUS starts anew.
type StatusFlusher interface {
	FlushStatus()
}

// Handler wraps go-mysql-server's protocol handler: it turns errors into
// MySQL's codes and SQLSTATEs, refuses work outside the primary component
// (1047), waits for causal reads (wsrep_sync_wait), retries autocommit
// statements that lose certification (wsrep_retry_autocommit), and keeps a
// panic from reaching the client.
type Handler struct {
	inner   mysql.Handler
	cluster Cluster
	log     *slog.Logger
	// beforeStatement runs before every statement (reloading replicated
	// users and grants).
	beforeStatement func()
	// fast runs hot statements without go-mysql-server (nil: off).
	fast *fastpath.Cache
	// consts answers SELECTs of variables and literals (constselect.go)
	consts *constSelects
	// users holds the users and grants (nil: no privilege checks).
	users *mysql_db.MySQLDb
	// processes is go-mysql-server's process list (running statements).
	processes sql.ProcessList
	// stride spaces AUTO_INCREMENT values across the cluster (nil: a
	// cluster that does not).
	stride AutoIncrementStrider

	// listener guards the client connections (nil in tests without one)
	listener *clientconn.Listener
	// tls is the client port's TLS material (nil: no TLS)
	tls *pki.Server

	mu       sync.Mutex
	sessions map[uint32]*Session
	conns    map[uint32]*mysql.Conn
	// loginUsers are the users of the connections admitted at login, by
	// connection (max_user_connections)
	loginUsers map[uint32]string
}

var _ mysql.Handler = (*Handler)(nil)

// statement kinds for wsrep_sync_wait
const (
	kindRead   = 1
	kindUpdate = 2 // UPDATE, DELETE
	kindInsert = 4 // INSERT, REPLACE
	kindShow   = 8
)

// stmtInfo is what the handler needs to know of a statement's text: the
// traits the checks every statement gets look at, and what its class
// needs beyond them (special, answer).
type stmtInfo struct {
	kind         int  // sync-wait bit, or 0
	locking      bool // SELECT ... FOR UPDATE / FOR SHARE / LOCK IN SHARE MODE: a current read
	nonPrimaryOK bool // allowed outside the primary component
	commit       bool // COMMIT: never retried
	empty        bool // no SQL at all (1065)
	begin        bool // BEGIN, START TRANSACTION
	// implicitCommit: CHECK TABLE, which ends the open transaction as DDL
	// does although it reads
	implicitCommit bool
	// special is what the statement's class needs around its run, or nil
	// (special.go)
	special *special
	// answer is the handler's own answer to statements that begin so, or
	// nil (see answerer)
	answer answerer
}

// answerer answers a statement the handler runs itself instead of
// go-mysql-server, or reports that it does not (handled false: the text
// only begins like one).
type answerer func(h *Handler, ctx context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (handled bool, err error)

// The statements the handler answers itself, as answerers; each names the
// file that holds it.
var (
	answerFlush answerer = func(h *Handler, ctx context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (bool, error) {
		opts := flushOptions(query) // flush.go
		if opts == nil {
			return false, nil
		}
		return true, h.flush(ctx, c, opts, out)
	}
	answerEngineStatus answerer = func(h *Handler, ctx context.Context, c *mysql.Conn, _ string, out func(*sqltypes.Result) error) (bool, error) {
		return true, h.engineStatus(ctx, h.session(c), out) // engine_status.go
	}
	answerLogTable answerer = func(h *Handler, _ context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (bool, error) {
		return h.logTables(c, query, out) // logtables.go
	}
	answerDiagnostics answerer = func(h *Handler, _ context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (bool, error) {
		return h.showDiagnostics(h.session(c), query, out) // diagnostics.go
	}
	answerKill answerer = func(h *Handler, ctx context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (bool, error) {
		done, err := h.killOwn(ctx, h.session(c), query) // privileges.go
		if !done || err != nil {
			return done, err
		}
		return true, out(&sqltypes.Result{})
	}
	answerReloadTLS answerer = func(h *Handler, ctx context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (bool, error) {
		return h.reloadTLS(ctx, h.session(c), query, out) // tls.go
	}
	answerChecksum  answerer = (*Handler).checksumTables // checksum.go
	answerDo        answerer = (*Handler).do
	answerOptimize  answerer = (*Handler).optimizeTables // optimize.go
	answerCheck     answerer = (*Handler).checkTables    // checktable.go
	answerPassword  answerer = (*Handler).changePassword // password.go
	answerAlterUser answerer = (*Handler).alterUser      // require.go

	answerShowCreateUser answerer = (*Handler).showCreateUser // showcreateuser.go
)

func inspect(q string) stmtInfo {
	lx := sqllex.NewScanner(q)
	switch lx.Word() {
	case "SELECT", "WITH", "VALUES", "TABLE":
		info := stmtInfo{kind: kindRead, nonPrimaryOK: true}
		prev := ""
		for w := lx.Word(); w != ""; prev, w = w, lx.Word() {
			switch {
			case w == "FROM":
				info.nonPrimaryOK = false
			case prev == "FOR" && (w == "UPDATE" || w == "SHARE"), prev == "SHARE" && w == "MODE":
				info.locking = true
			}
		}
		return info
	case "UPDATE", "DELETE":
		return stmtInfo{kind: kindUpdate}
	case "INSERT", "REPLACE":
		return stmtInfo{kind: kindInsert}
	case "SHOW":
		info := stmtInfo{kind: kindShow, nonPrimaryOK: true}
		switch w := lx.Word(); {
		case w == "GRANTS":
			info.special = specialShowGrants
		case w == "PROCESSLIST", w == "FULL" && lx.Word() == "PROCESSLIST":
			if lx.Word() == "" {
				info.special = specialProcessList
			}
		case w == "ENGINE":
			if lx.Word() == "INNODB" && lx.Word() == "STATUS" && lx.Word() == "" {
				info.answer = answerEngineStatus
			}
		case w == "CREATE":
			switch lx.Word() {
			case "TABLE":
				info.answer = answerLogTable
			case "USER":
				info.answer = answerShowCreateUser
			}
		case w == "ERRORS", w == "WARNINGS", w == "COUNT":
			info.answer = answerDiagnostics
		}
		return info
	case "FLUSH":
		return stmtInfo{nonPrimaryOK: true, answer: answerFlush}
	case "SET":
		info := stmtInfo{nonPrimaryOK: true, special: specialSet}
		if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(q[lx.Pos():])), "PASSWORD") {
			return stmtInfo{answer: answerPassword}
		}
		for t := lx.Next(); t.Kind != sqllex.EOF && info.special == specialSet; t = lx.Next() {
			global := false
			switch t.Kind {
			case sqllex.Word: // SET GLOBAL x = ...
				global = t.Is("GLOBAL") || t.Is("PERSIST") || t.Is("PERSIST_ONLY")
			case sqllex.Var: // SET @@global.x = ...
				u := t.Upper()
				global = strings.HasPrefix(u, "@@GLOBAL.") || strings.HasPrefix(u, "@@PERSIST.") || strings.HasPrefix(u, "@@PERSIST_ONLY.")
			}
			if global {
				info.special = specialSetGlobal
			}
		}
		return info
	case "KILL":
		return stmtInfo{nonPrimaryOK: true, answer: answerKill}
	case "CHECKSUM":
		return stmtInfo{kind: kindRead, answer: answerChecksum}
	case "DO":
		return stmtInfo{nonPrimaryOK: true, answer: answerDo}
	case "OPTIMIZE":
		return stmtInfo{answer: answerOptimize}
	case "CHECK":
		return stmtInfo{kind: kindRead, implicitCommit: true, answer: answerCheck}
	case "USE", "ROLLBACK", "PREPARE", "DEALLOCATE", "QUIT":
		return stmtInfo{nonPrimaryOK: true}
	case "BEGIN":
		return stmtInfo{begin: true}
	case "EXECUTE":
		return stmtInfo{special: specialExecute}
	case "START":
		info := stmtInfo{begin: lx.Word() == "TRANSACTION"}
		for w := lx.Word(); info.begin && w != ""; w = lx.Word() {
			if w == "CONSISTENT" {
				info.special = specialSnapshot
			}
		}
		return info
	case "COMMIT":
		return stmtInfo{commit: true}
	case "DROP":
		return stmtInfo{special: specialDrop}
	case "ALTER":
		switch lx.Word() {
		case "USER":
			return stmtInfo{special: specialDDL, answer: answerAlterUser}
		case "INSTANCE":
			return stmtInfo{nonPrimaryOK: true, answer: answerReloadTLS}
		}
		return stmtInfo{special: specialDDL}
	case "CREATE":
		info := stmtInfo{special: specialDDL}
		if lx.Word() == "TABLE" {
			info.answer = answerLogTable
		}
		return info
	case "RENAME", "TRUNCATE":
		return stmtInfo{special: specialDDL}
	case "":
		return stmtInfo{nonPrimaryOK: true, empty: isEmptyQuery(q)}
	}
	return stmtInfo{}
}

// isEmptyQuery reports whether q holds nothing but blanks, comments and
// semicolons.
func isEmptyQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';':
		case c == '#' || c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*' && !(i+2 < len(q) && q[i+2] == '!'):
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return false
			}
			i += end + 3
		default:
			return false
		}
	}
	return true
}

// NewHandler returns the wrapper of inner.
func NewHandler(inner mysql.Handler, cluster Cluster, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	h := &Handler{inner: inner, cluster: cluster, log: log, sessions: map[uint32]*Session{}, conns: map[uint32]*mysql.Conn{}, loginUsers: map[uint32]string{}}
	h.stride, _ = cluster.(AutoIncrementStrider)
	return h
}

func (h *Handler) addSession(id uint32, s *Session) {
	h.mu.Lock()
	h.sessions[id] = s
	h.mu.Unlock()
}

// session is c's session: the one its connection holds (see NewServer),
// else the one registered under its id.
func (h *Handler) session(c *mysql.Conn) *Session {
	if s, ok := c.ClientData.(*Session); ok {
		return s
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[c.ConnectionID]
}

// recoveredPanic logs a panic that go-mysql-server recovered into an error
// (its message carries the goroutine's stack) and gives the client the
// error without the stack, as recoverPanic does.
func (h *Handler) recoveredPanic(se *mysql.SQLError) *mysql.SQLError {
	const prefix = "panic recovered: "
	if !strings.HasPrefix(se.Message, prefix) {
		return se
	}
	msg, stack, _ := strings.Cut(strings.TrimPrefix(se.Message, prefix), "\ngoroutine ")
	h.log.Error("panic while executing a statement", "panic", msg, "stack", "goroutine "+stack)
	return mysql.NewSQLError(mysql.ERUnknownError, mysql.SSUnknownSQLState, "internal error: %s", strings.TrimSpace(msg))
}

// recoverPanic turns a panic in statement execution into an error for the
// client and a log line with the stack.
func (h *Handler) recoverPanic(err *error) {
	if r := recover(); r != nil {
		h.log.Error("panic while executing a statement", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = mysql.NewSQLError(mysql.ERUnknownError, mysql.SSUnknownSQLState, "internal error: %v", r)
	}
}

// before runs the checks that precede a statement. For a BEGIN that
// starts a causal wait it returns the wait's end, for the transaction.
func (h *Handler) before(ctx context.Context, s *Session, info stmtInfo) (began func(context.Context) error, err error) {
	if !info.nonPrimaryOK && (rejectQueries.Load() || donorRejects.Load() && h.donating()) {
		return nil, ErrNotPrimary // wsrep_reject_queries, or a donor told to refuse: the node is in maintenance
	}
	if h.cluster == nil {
		return nil, nil
	}
	if !info.nonPrimaryOK && !h.cluster.Primary() {
		return nil, ErrNotPrimary
	}
	if s == nil {
		return nil, nil
	}
	if info.begin && syncWaitBits(s)&kindRead != 0 {
		// As in Galera, BEGIN is a read for wsrep_sync_wait: the
		// transaction sees what the cluster committed before it began.
		// The wait starts here and ends at its first read (run hands it
		// to the transaction), so the leader's answer travels while the
		// client sends that read.
		return h.cluster.StartSyncWait(), nil
	}
	if info.kind == 0 || syncWaitBits(s)&info.kind == 0 {
		return nil, nil
	}
	var wait func(context.Context) error
	if info.kind == kindRead && !info.locking {
		if t, ok := s.GetTransaction().(*Transaction); ok && t != nil {
			if t.SnapshotFixed() {
				// a REPEATABLE READ transaction reads its snapshot
				// whatever the node applies now: the wait could not
				// change the result
				return nil, nil
			}
			wait, t.beginWait = t.beginWait, nil
		}
	}
	if wait == nil {
		wait = h.cluster.StartSyncWait()
	}
	if err := wait(ctx); err != nil {
		if !h.cluster.Primary() {
			return nil, ErrNotPrimary
		}
		return nil, ErrSyncWaitTimeout
	}
	return nil, nil
}

// syncWaitBits is the session's wsrep_sync_wait, with bit 1 set when
// wsrep_causal_reads is on.
func syncWaitBits(s *Session) int {
	bits := 0
	if v, err := s.GetSessionVariable(nil, "wsrep_sync_wait"); err == nil {
		if n, ok := sqlvalue.AsInt(v); ok {
			bits = int(n)
		}
	}
	if causal, err := s.GetSessionVariable(nil, "wsrep_causal_reads"); err == nil && sqlvalue.Truthy(causal) {
		bits |= kindRead
	}
	return bits
}

// retries is how often an autocommit statement that lost certification is
// run again, or 0 when it may not be (explicit transaction, COMMIT).
func retries(s *Session, info stmtInfo) int {
	if s == nil || info.commit || s.GetIgnoreAutoCommit() {
		return 0
	}
	if ac, err := s.GetSessionVariable(nil, "autocommit"); err != nil || !sqlvalue.Truthy(ac) {
		return 0
	}
	if v, err := s.GetSessionVariable(nil, "wsrep_retry_autocommit"); err == nil {
		if n, ok := sqlvalue.AsInt(v); ok {
			return int(n)
		}
	}
	return 0
}

// tracker returns a function applied to every result of a statement: for
// connections with session tracking it clears the OK packet's info and, if
// the statement committed a write-set and the session tracks GTIDs, has the
// OK packet carry the GTID.
func (h *Handler) tracker(c *mysql.Conn) func(r *sqltypes.Result) {
	tc := trackConnOf(c)
	if tc == nil || !tc.Tracking() {
		return func(*sqltypes.Result) {}
	}
	s := h.session(c)
	before := uint64(0)
	if s != nil {
		before = s.lastSeqno
	}
	return func(r *sqltypes.Result) {
		r.Info = ""
		if s == nil || s.lastSeqno == before || len(r.Fields) != 0 || h.cluster == nil {
			return
		}
		if v, err := s.GetSessionVariable(nil, "session_track_gtids"); err == nil {
			if mode := fmt.Sprint(v); mode == "OWN_GTID" || mode == "ALL_GTIDS" {
				tc.AttachGTID(GTID(h.cluster.ClusterUUID(), s.lastSeqno))
			}
		}
	}
}

// run executes one statement through exec with the checks, the retry of
// autocommit certification failures and the error mapping; exec gets what
// inspect learned of the statement.
func (h *Handler) run(ctx context.Context, c *mysql.Conn, query string, exec func(ctx context.Context, info stmtInfo, called *bool) error) (err error) {
	s := h.session(c)
	defer func() {
		if err != nil && s != nil {
			recordError(s, ToSQLError(err)) // after recoverPanic made a panic err
		}
	}()
	defer h.recoverPanic(&err)
	if h.beforeStatement != nil {
		h.beforeStatement()
	}
	info := inspect(query)
	if info.empty {
		return ErrEmptyQuery
	}
	if s != nil {
		// queries and DML never end a transaction (CHECK TABLE does)
		s.noImplicitCommit, s.keepTxn = info.kind != 0 && !info.implicitCommit, false
		defer func() { s.noImplicitCommit, s.keepTxn = false, false }()
	}
	if s != nil && uint64(len(query)) > sqlvalue.MaxPacket(s) {
		return ErrPacketTooLarge
	}
	if s != nil {
		defer s.recursion.endStatement()
	}
	began, err := h.before(ctx, s, info)
	if err != nil {
		return ToSQLError(err)
	}
	if began != nil {
		defer func() {
			// go-mysql-server may start and commit an implicit transaction
			// before the one BEGIN starts: the wait goes to the last
			if t, ok := s.GetTransaction().(*Transaction); ok && t != nil && err == nil {
				t.beginWait = began
			}
		}()
	}
	h.syncAutoIncrement(s)
	if s != nil && info.kind == kindRead {
		noteDiagnostics(s, query)
		if info.nonPrimaryOK { // no FROM
			defer keepConditions(s)()
		}
	}
	sp := info.special
	if sp != nil && sp.start != nil {
		end, err := sp.start(h, c, s, query)
		if err != nil {
			return err
		}
		if end != nil {
			defer end()
		}
	}
	if s != nil && info.kind == kindRead {
		var cancel context.CancelFunc
		if ctx, cancel = executionLimit(ctx, s, query); cancel != nil {
			defer cancel()
		}
	}
	left, lent, caughtUp, seen := retries(s, info), false, false, catalogOf(s)
	for {
		called := false
		err = exec(ctx, info, &called)
		if err == nil && sp != nil && sp.succeeded != nil {
			err = sp.succeeded(ctx, s, &began)
		}
		if err == nil {
			return nil
		}
		if s != nil && s.certFailed && !called && left > 0 {
			left--
			continue
		}
		if !called && !lent {
			if restore := lendDatabase(s, query, err); restore != nil {
				lent = true
				defer restore()
				continue
			}
		}
		if !called && !caughtUp && h.catchUpSchema(ctx, s, seen, err) {
			caughtUp = true
			continue
		}
		se := h.recoveredPanic(ToSQLError(err))
		if sp != nil && sp.failed != nil {
			se = sp.failed(se)
		}
		if se.Number() == erTableAccessDenied {
			se = deniedDetail(query, se)
		}
		if s != nil {
			se = withMySQLMessage(se, s.GetCurrentDatabase(), query)
			se = foreignKeyMessage(ctx, s, se, query)
			// the message read the catalog after go-mysql-server's
			// CommandEnd, through a transaction it gave the session
			// (Provider.txnFor): a failed autocommit statement leaves none
			s.CommandEnd()
		}
		return se
	}
}

// takeSnapshot takes the snapshot of the transaction START TRANSACTION
// WITH CONSISTENT SNAPSHOT began, after its causal wait if it has one
// (*began, which it uses up): go-mysql-server's parser drops the clause,
// and without it a REPEATABLE READ transaction takes its snapshot at its
// first read, so mysqldump --single-transaction could see rows committed
// between its START TRANSACTION and its first SELECT.
func takeSnapshot(ctx context.Context, s *Session, began *func(context.Context) error) error {
	if s == nil {
		return nil
	}
	t, ok := s.GetTransaction().(*Transaction)
	if !ok || t == nil {
		return nil
	}
	if wait := *began; wait != nil {
		*began = nil
		if err := wait(ctx); err != nil {
			return ErrSyncWaitTimeout
		}
	}
	t.TakeSnapshot()
	return nil
}

// do answers DO expr [, expr] ..., which go-mysql-server does not parse:
// the expressions are evaluated as a SELECT whose rows are dropped (DO
// GET_LOCK(...), DO SLEEP(n) in applications and dumps). handled is false
// when query is not one DO statement alone.
func (h *Handler) do(ctx context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	first, rest, err := sqlparser.SplitStatement(query)
	if err != nil || strings.TrimSpace(rest) != "" {
		return false, nil
	}
	lx := sqllex.NewScanner(first)
	if lx.Word() != "DO" {
		return false, nil
	}
	err = h.inner.ComQuery(ctx, c, "SELECT "+first[lx.Pos():], func(*sqltypes.Result, bool) error { return nil })
	if err != nil {
		return true, ToSQLError(err)
	}
	return true, out(&sqltypes.Result{})
}

// closeClients ends every client connection, the current one included, as
// wsrep_reject_queries = ALL_KILL does: running statements are killed and
// the sockets closed.
func (h *Handler) closeClients() {
	h.mu.Lock()
	conns := make(map[uint32]*mysql.Conn, len(h.conns))
	for id, c := range h.conns {
		conns[id] = c
	}
	h.mu.Unlock()
	for id, c := range conns {
		if h.processes != nil {
			h.processes.Kill(id)
		}
		c.Close()
	}
	h.log.Info("wsrep_reject_queries = ALL_KILL: closed the client connections", "connections", len(conns))
}

// NewConnection implements mysql.Handler.
// The handshake's status flags say whether the session starts in
// autocommit mode (the global autocommit): drivers such as PyMySQL read
// them to decide whether they must send SET autocommit=0 for a
// transactional connection.
func (h *Handler) NewConnection(c *mysql.Conn) {
	if _, v, ok := sql.SystemVariables.GetGlobal("autocommit"); !ok || sqlvalue.Truthy(v) {
		c.StatusFlags |= uint16(mysql.ServerStatusAutocommit)
	}
	if tc := trackConnOf(c); tc != nil {
		tc.vconn = c
	}
	h.mu.Lock()
	h.conns[c.ConnectionID] = c
	h.mu.Unlock()
	h.inner.NewConnection(c)
}

// ConnectionClosed implements mysql.Handler.
func (h *Handler) ConnectionClosed(c *mysql.Conn) {
	h.inner.ConnectionClosed(c)
	c.ClientData = nil
	h.mu.Lock()
	delete(h.sessions, c.ConnectionID)
	delete(h.conns, c.ConnectionID)
	delete(h.loginUsers, c.ConnectionID)
	h.mu.Unlock()
}

// ConnectionAuthenticated implements mysql.Handler.
func (h *Handler) ConnectionAuthenticated(c *mysql.Conn) error {
	if err := h.inner.ConnectionAuthenticated(c); err != nil {
		return ToSQLError(err)
	}
	return h.admitted(c)
}

// ConnectionAborted implements mysql.Handler.
func (h *Handler) ConnectionAborted(c *mysql.Conn, reason string) error {
	return h.inner.ConnectionAborted(c, reason)
}

// ComInitDB implements mysql.Handler.
func (h *Handler) ComInitDB(c *mysql.Conn, schemaName string) (err error) {
	defer h.recoverPanic(&err)
	if err := h.inner.ComInitDB(c, schemaName); err != nil {
		return withMySQLMessage(ToSQLError(err), "", "")
	}
	return nil
}

// ComQuery implements mysql.Handler.
func (h *Handler) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	callback = mysqlexpr.TimeSpool(callback)
	query, skipped := rewriteText(query, false)
	if skipped && isEmptyQuery(query) {
		// only comments MySQL would not execute: nothing to do, as
		// MariaDB answers the first line of its dumps
		return callback(&sqltypes.Result{}, false)
	}
	return h.run(ctx, c, query, func(ctx context.Context, info stmtInfo, called *bool) error {
		query, after := h.attempt(ctx, c, info, query)
		defer after()
		track := h.tracker(c)
		fc, handled, err := h.answer(ctx, c, query, info, called, track, callback)
		if handled {
			return err
		}
		return h.inner.ComQuery(ctx, c, query, h.spool(c, info, fc, track, called, callback))
	})
}

// textRewrite is a rewrite of a statement's text into text
// go-mysql-server parses as MySQL means it.
type textRewrite struct {
	name string
	fn   func(string) string
	// idempotent: a second pass changes nothing (generatedParens doubles
	// an AS (...) nested in another one on a second pass, which no column
	// definition has)
	idempotent bool
}

// textRewrites are applied in this order to every text statement, after
// versionComments and before rollupRewrite.
var textRewrites = []textRewrite{
	{"setKeywordValues", setKeywordValues, true},     // setvalues.go: SET x = ON, BINARY ...
	{"indexHints", indexHints, true},                 // indexhints.go
	{"assignUserVars", assignUserVars, true},         // assignvar.go: @v := expr
	{"generatedParens", generatedParens, false},      // generatedparens.go: generated columns' conditions
	{"flushModifier", flushModifier, true},           // flush.go: FLUSH LOCAL | NO_WRITE_TO_BINLOG
	{"createSelectParens", createSelectParens, true}, // createselect.go: CREATE TABLE t (SELECT ...)
	{"requireAnd", requireAnd, true},                 // require.go: REQUIRE SUBJECT '...' ISSUER '...'
	{"synonyms", synonyms, true},                     // synonyms.go: LOCK TABLE, ALTER SCHEMA, IS UNKNOWN, ENGINE = 'InnoDB'
	{"odbcEscapes", odbcEscapes, true},               // odbc.go: {fn f(...)}, {d '...'}, {oj ...}
}

// rewriteText turns a text statement into one go-mysql-server parses as
// MySQL means it: executable comments (versionComments), textRewrites,
// and WITH ROLLUP of the first statement when multi holds several
// (rollupRewrite). skipped reports comments MySQL would not execute.
func rewriteText(query string, multi bool) (string, bool) {
	query, skipped := versionComments(query)
	for _, r := range textRewrites {
		query = r.fn(query)
	}
	if sqllex.ContainsFold(query, "rollup") {
		first, rest := query, ""
		if multi {
			if f, r, err := sqlparser.SplitStatement(query); err == nil && r != "" {
				first, rest = f, r
			}
		}
		if q, ok := rollupRewrite(first); ok {
			query = q
			if rest != "" {
				query += ";" + rest
			}
		}
	}
	return query, skipped
}

// ComMultiQuery implements mysql.Handler. go-mysql-server runs the first
// statement of query and returns the rest, which comes back here.
func (h *Handler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	callback = mysqlexpr.TimeSpool(callback)
	query, skipped := rewriteText(query, true)
	if skipped && isEmptyQuery(query) {
		return "", callback(&sqltypes.Result{}, false)
	}
	var rest string
	err := h.run(ctx, c, query, func(ctx context.Context, info stmtInfo, called *bool) error {
		query, after := h.attempt(ctx, c, info, query)
		defer after()
		track := h.tracker(c)
		fc, handled, err := h.answer(ctx, c, query, info, called, track, callback)
		if handled {
			rest = ""
			return err
		}
		rest, err = h.inner.ComMultiQuery(ctx, c, query, h.spool(c, info, fc, track, called, callback))
		return err
	})
	return rest, err
}

// attempt prepares one of go-mysql-server's attempts at query: the text
// its special gives the first statement (special.attempt), and what runs
// after the attempt.
func (h *Handler) attempt(ctx context.Context, c *mysql.Conn, info stmtInfo, query string) (string, func()) {
	sp := info.special
	if sp == nil || sp.attempt == nil {
		return query, func() {}
	}
	first, rest, err := sqlparser.SplitStatement(query)
	if err != nil {
		return query, func() {}
	}
	q, after := sp.attempt(h, ctx, h.session(c), first)
	if q != first {
		query = q
		if rest != "" {
			query += ";" + rest
		}
	}
	if after == nil {
		after = func() {}
	}
	return query, after
}

// spool is the callback of go-mysql-server's results for a statement the
// handler did not answer itself: the fast path learns from them, the OK
// packet gets its GTID (track), and the special sees each (special.result).
func (h *Handler) spool(c *mysql.Conn, info stmtInfo, fc *fastCall, track func(*sqltypes.Result), called *bool, callback mysql.ResultSpoolFn) mysql.ResultSpoolFn {
	return func(r *sqltypes.Result, more bool) error {
		*called = true
		fc.learnFrom(r)
		track(r)
		if sp := info.special; sp != nil && sp.result != nil {
			sp.result(h.session(c))
		}
		return callback(r, more)
	}
}

// answer runs the text statements the handler answers itself (those
// inspect gives an answerer, SELECT WSREP_SYNC_WAIT_UPTO_GTID(...), constant
// SELECTs and the fast path's shapes).
// handled is false when go-mysql-server must run query; fc then learns
// from its results. track adds the session-state GTID to a commit's OK.
func (h *Handler) answer(ctx context.Context, c *mysql.Conn, query string, info stmtInfo, called *bool, track func(*sqltypes.Result), callback mysql.ResultSpoolFn) (fc *fastCall, handled bool, err error) {
	out := func(r *sqltypes.Result) error {
		*called = true
		return callback(r, false)
	}
	if info.answer != nil {
		if handled, err := info.answer(h, ctx, c, query, out); handled {
			return nil, true, err
		}
	}
	if info.kind == kindRead {
		if handled, err := h.syncUpto(ctx, h.session(c), query, out); handled {
			return nil, true, err
		}
	}
	fc = &fastCall{h: h, c: c, s: h.session(c), query: query, out: func(r *sqltypes.Result) error {
		track(r)
		return out(r)
	}}
	if info.kind == kindRead {
		if handled, err := fc.constSelect(ctx); handled {
			return fc, true, err
		}
	}
	handled, err = fc.try(ctx)
	return fc, handled, err
}

// ComPrepare implements mysql.Handler. Drivers such as go-sql-driver/mysql
// prepare the same text before every execution: a statement the fast path
// recognises is planned once per connection and schema (see
// Session.prepared); executing it needs no plan from the prepare.
func (h *Handler) ComPrepare(ctx context.Context, c *mysql.Conn, query string, prepare *mysql.PrepareData) (fields []*querypb.Field, err error) {
	defer h.recoverPanic(&err)
	if q, skipped := versionComments(query); skipped {
		// executions run the prepared text: keep the comments off there too
		query, prepare.PrepareStmt = q, q
	}
	s := h.session(c)
	cat := catalogOf(s)
	if s != nil {
		if p, ok := s.prepared[query]; ok && p.cat == cat && p.db == s.GetCurrentDatabase() {
			return cloneFields(p.fields), nil
		}
	}
	fields, err = h.inner.ComPrepare(ctx, c, query, prepare)
	if restore := lendDatabase(s, query, err); restore != nil {
		fields, err = h.inner.ComPrepare(ctx, c, query, prepare)
		restore()
	}
	if h.catchUpSchema(ctx, s, cat, err) {
		cat = catalogOf(s)
		fields, err = h.inner.ComPrepare(ctx, c, query, prepare)
	}
	if err == nil && s != nil && h.fast != nil && h.recognized(s, query) {
		if s.prepared == nil || len(s.prepared) >= maxPreparedPerSession {
			s.prepared = map[string]preparedAnswer{}
		}
		s.prepared[query] = preparedAnswer{cat: cat, db: s.GetCurrentDatabase(), fields: cloneFields(fields)}
	}
	return fields, ToSQLErrorOrNil(err)
}

// recognized reports whether the fast path takes the prepared statement.
func (h *Handler) recognized(s *Session, query string) bool {
	e, _ := h.fast.Entry(s.GetCurrentDatabase(), query, true)
	return e != nil
}

// preparedAnswer is a prepare's answer for one schema version.
type preparedAnswer struct {
	cat    *storage.Catalog
	db     string
	fields []*querypb.Field
}

// maxPreparedPerSession bounds a session's remembered prepares.
const maxPreparedPerSession = 256

// cloneFields deep-copies column metadata (the protocol layer edits the
// names it sends).
func cloneFields(fields []*querypb.Field) []*querypb.Field {
	if fields == nil {
		return nil
	}
	out := make([]*querypb.Field, len(fields))
	for i, f := range fields {
		out[i] = proto.Clone(f).(*querypb.Field)
	}
	return out
}

// ComStmtExecute implements mysql.Handler.
func (h *Handler) ComStmtExecute(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	return h.run(ctx, c, prepare.PrepareStmt, func(ctx context.Context, _ stmtInfo, called *bool) error {
		track := h.tracker(c)
		fc := &fastCall{h: h, c: c, s: h.session(c), query: prepare.PrepareStmt, prepared: true, binds: prepare.BindVars,
			out: func(r *sqltypes.Result) error {
				*called = true
				track(r)
				mysqlexpr.TrimTimeFractions(r)
				return callback(r)
			}}
		if handled, err := fc.try(ctx); handled {
			return err
		}
		return h.inner.ComStmtExecute(ctx, c, prepare, func(r *sqltypes.Result) error {
			*called = true
			fc.learnFrom(r)
			track(r)
			mysqlexpr.TrimTimeFractions(r)
			return callback(r)
		})
	})
}

// WarningCount implements mysql.Handler.
func (h *Handler) WarningCount(c *mysql.Conn) uint16 { return h.inner.WarningCount(c) }

// ComResetConnection implements mysql.Handler.
func (h *Handler) ComResetConnection(c *mysql.Conn) error {
	return ToSQLErrorOrNil(h.inner.ComResetConnection(c))
}

// ParserOptionsForConnection implements mysql.Handler.
func (h *Handler) ParserOptionsForConnection(c *mysql.Conn) (sqlparser.ParserOptions, error) {
	return h.inner.ParserOptionsForConnection(c)
}

// ToSQLErrorOrNil is ToSQLError that keeps a nil error nil (and a typed
// nil out of the error interface).
func ToSQLErrorOrNil(err error) error {
	if err == nil {
		return nil
	}
	var se *mysql.SQLError
	if errors.As(err, &se) && se == nil {
		return nil
	}
	return ToSQLError(err)
}
