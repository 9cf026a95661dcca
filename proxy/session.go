package proxy

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/certusdb/certus/internal/comrefresh"
	"github.com/certusdb/certus/internal/comstatistics"
	"github.com/certusdb/certus/internal/execcomment"
	"github.com/certusdb/certus/internal/mysqlauth"
	"github.com/certusdb/certus/proxy/backend"
	"github.com/certusdb/certus/proxy/config"
	"github.com/certusdb/certus/proxy/mysqlproto"
	"github.com/certusdb/certus/proxy/sqltext"
)

// serverCaps are the capabilities the proxy offers clients.
const serverCaps = mysqlproto.CapLongPassword | mysqlproto.CapLongFlag | mysqlproto.CapConnectWithDB |
	mysqlproto.CapProtocol41 | mysqlproto.CapTransactions | mysqlproto.CapSecureConnection |
	mysqlproto.CapMultiStatements | mysqlproto.CapMultiResults | mysqlproto.CapPSMultiResults |
	mysqlproto.CapPluginAuth | mysqlproto.CapPluginAuthLenenc | mysqlproto.CapConnectAttrs |
	mysqlproto.CapDeprecateEOF | mysqlproto.CapLocalFiles

// serverVersion is the version the proxy announces to clients: the nodes'
// MySQL version, marked as the proxy's.
var serverVersion = execcomment.VersionText() + "-Certus-proxy"

// errQuit ends a session normally (COM_QUIT).
var errQuit = errors.New("client quit")

// session is one client connection.
type session struct {
	p *Proxy
	c *mysqlproto.Conn
	// raw is the client's socket (or its directio.Conn) under c, TLS or
	// not.
	raw    net.Conn
	id     uint32
	caps   uint32
	ctx    context.Context
	cancel context.CancelFunc

	// backend is the account the session runs as on the nodes.
	backend backend.Options
	// tls: the client connection is over TLS.
	tls bool

	db         string
	vars       map[string]string // assignment key -> replay statement
	autocommit bool

	// pinned is the backend connection the session holds across
	// statements: during a transaction, or for the rest of the session
	// once sticky.
	pinned *backend.Conn
	sticky bool
	// diag is the connection that ran the session's last statement when
	// that left warnings or an error, held until the next statement so
	// that SHOW WARNINGS reads them there.
	diag *backend.Conn
	// lastInsertID is the session's LAST_INSERT_ID(): the last
	// AUTO_INCREMENT value one of its statements generated.
	lastInsertID uint64
	// rowCount is the session's ROW_COUNT(): the rows its last statement
	// changed, -1 after a result set or an error. The proxy answers
	// `SELECT ROW_COUNT()` with it: the connection that ran the statement
	// may since have run another session's.
	rowCount int64
	// wrote: the session wrote since its last commit.
	wrote bool
	// causal is the seqno of the session's last commit: its reads run
	// where it has been applied. causalLost: a commit's seqno could not
	// be learned, the next read goes to the writer.
	causal     uint64
	causalLost bool

	stmts    map[uint32]*clientStmt
	nextStmt uint32

	// idle ends the wait for the client's next command after wait;
	// inactive is set when it did (see readCommand).
	wait     time.Duration
	idle     *time.Timer
	inactive atomic.Bool
}

// clientStmt is a statement the client prepared.
type clientStmt struct {
	sql       string
	st        sqltext.Statement
	digest    string
	numParams uint16
	// types are the parameter types of the last execution that sent
	// them; executions that do not send types reuse them.
	types []byte
	long  map[uint16][]byte
	// longSize is the size of long; longOver is set when it outgrew
	// max_allowed_packet, and the next execution fails.
	longSize int
	longOver bool
}

func (p *Proxy) newSession(nc net.Conn) *session {
	ctx, cancel := context.WithCancel(p.ctx)
	return &session{p: p, c: mysqlproto.NewConn(nc), raw: nc, id: p.connID.Add(1), ctx: ctx, cancel: cancel,
		vars: map[string]string{}, autocommit: true, stmts: map[uint32]*clientStmt{}}
}

func (s *session) close() {
	s.cancel()
	if s.idle != nil {
		s.idle.Stop()
	}
	if s.pinned != nil {
		// its transaction or session state dies with the client
		s.pinned.Close()
		s.pinned = nil
	}
	s.releaseDiag()
	s.c.Close()
}

// loginPacketLimit bounds a client's packets until it is authenticated: a
// handshake response is a few hundred bytes.
const loginPacketLimit = 64 << 10

// handshake greets the client and authenticates it: TLS when the client
// asks for it, then the account's plugin. The whole login, however slowly
// the client sends it, is bounded by connect_timeout, and its packets by
// loginPacketLimit.
func (s *session) handshake(cfg *config.Config) error {
	login := time.AfterFunc(time.Duration(cfg.ConnectTimeout), func() { s.c.Close() })
	defer login.Stop()
	salt, err := mysqlproto.NewSalt()
	if err != nil {
		return err
	}
	caps := serverCaps
	tlsCfg := s.p.clientTLS()
	if tlsCfg != nil {
		caps |= mysqlproto.CapSSL
	}
	g := mysqlproto.Greeting{ServerVersion: serverVersion, ConnectionID: s.id, Salt: salt, Capabilities: caps,
		Charset: 45, Status: mysqlproto.StatusAutocommit, AuthPlugin: mysqlproto.NativePassword}
	if err := s.c.WritePacket(mysqlproto.AppendGreeting(nil, g)); err != nil {
		return err
	}
	if err := s.c.Flush(); err != nil {
		return err
	}
	s.c.MaxPayload = loginPacketLimit
	pkt, err := s.read()
	if err != nil {
		return err
	}
	if tlsCfg != nil && len(pkt) == mysqlauth.SSLRequestLength && binary.LittleEndian.Uint32(pkt)&mysqlproto.CapSSL != 0 {
		if err := s.c.StartTLS(tlsCfg, true); err != nil {
			return err
		}
		s.tls = true
		if pkt, err = s.read(); err != nil {
			return err
		}
	}
	hr, err := mysqlproto.ParseHandshakeResponse(pkt)
	if err != nil {
		_ = s.c.WriteErr(mysqlproto.NewError(1043, "08S01", "Bad handshake: %v", err))
		return err
	}
	if !s.tls && cfg.RequireSecureTransport {
		e := mysqlproto.NewError(mysqlauth.InsecureCode, mysqlauth.InsecureState, mysqlauth.InsecureMsg)
		_ = s.c.WriteErr(e)
		return e
	}
	s.caps = hr.Capabilities & serverCaps
	ok, sent, err := s.authenticate(cfg, hr, salt)
	if err != nil {
		return err
	}
	if !ok {
		using := "NO"
		if sent {
			using = "YES"
		}
		e := mysqlproto.NewError(1045, "28000", "Access denied for user '%s' (using password: %s)", hr.User, using)
		_ = s.c.WriteErr(e)
		return e
	}
	s.c.MaxPayload = cfg.MaxAllowedPacket
	if hr.Database != "" {
		if e := s.checkDB(hr.Database, time.Duration(cfg.ConnectTimeout)); e != nil {
			_ = s.c.WriteErr(e)
			return e
		}
		s.db = hr.Database
	}
	s.wait = time.Duration(cfg.WaitTimeout)
	return s.writeOK()
}

// authenticate runs the login's exchange for the account hr names, with
// its plugin, and when the password is right sets the account the session
// uses on the nodes. sent says whether the client sent a password. An
// unknown user goes through mysql_native_password and is refused.
func (s *session) authenticate(cfg *config.Config, hr mysqlproto.HandshakeResponse, salt []byte) (ok, sent bool, err error) {
	var u *config.User
	for i := range cfg.Users {
		if cfg.Users[i].Name == hr.User {
			u = &cfg.Users[i]
		}
	}
	plugin := mysqlproto.NativePassword
	if u != nil && u.Plugin == mysqlproto.CachingSha2 {
		plugin = mysqlproto.CachingSha2
	}
	auth := hr.AuthResponse
	if hr.AuthPlugin != plugin && (hr.AuthPlugin != "" || plugin != mysqlproto.NativePassword) {
		if hr.Capabilities&mysqlproto.CapPluginAuth == 0 {
			return false, len(auth) > 0, nil // cannot be asked to switch
		}
		if auth, err = s.exchange(mysqlproto.AppendAuthSwitch(nil, plugin, salt)); err != nil {
			return false, false, err
		}
	}
	sent = len(auth) > 0
	switch {
	case u == nil:
		return false, sent, nil
	case plugin == mysqlproto.NativePassword:
		ok = mysqlproto.CheckNative(salt, auth, u.Password)
	default:
		ok, err = s.cachingSha2(u, salt, auth)
	}
	if ok {
		s.backend.User, s.backend.Password = cfg.Backend(*u)
		s.backend.Direct = &s.p.conns
		s.backend.TLS = s.p.backendTLS
	}
	return ok, sent, err
}

// cachingSha2 checks caching_sha2_password's answer auth, as MySQL does:
// the scramble (the fast path) when the user passed the full
// authentication since the proxy started with the same password;
// otherwise it asks for the password, which comes in the clear over TLS
// and RSA-encrypted with the proxy's key without it.
func (s *session) cachingSha2(u *config.User, salt, auth []byte) (bool, error) {
	if len(auth) == 0 {
		return u.Password == "", nil
	}
	if s.p.sha2Cached(u.Name, u.Password) {
		if !mysqlproto.CheckSha2(salt, auth, u.Password) {
			return false, nil
		}
		return true, s.c.WritePacket([]byte{mysqlauth.MoreData, mysqlauth.FastAuthOK})
	}
	pkt, err := s.exchange([]byte{mysqlauth.MoreData, mysqlauth.FullAuth})
	if err != nil {
		return false, err
	}
	var password []byte
	switch {
	case s.tls:
		password = bytes.TrimSuffix(pkt, []byte{0})
	case len(pkt) == 1 && pkt[0] == mysqlauth.PublicKeyRequest && s.p.rsaKey != nil:
		ct, err := s.exchange(append([]byte{mysqlauth.MoreData}, mysqlauth.PublicKeyPEM(s.p.rsaKey)...))
		if err != nil {
			return false, err
		}
		if password, err = mysqlauth.DecryptPassword(s.p.rsaKey, ct, salt); err != nil {
			return false, nil
		}
	default:
		return false, nil // a password in the clear without TLS is not taken
	}
	if subtle.ConstantTimeCompare(password, []byte(u.Password)) != 1 {
		return false, nil
	}
	s.p.sha2Remember(u.Name, u.Password)
	return true, nil
}

// exchange sends the login packet p and reads the client's answer.
func (s *session) exchange(p []byte) ([]byte, error) {
	if err := s.c.WritePacket(p); err != nil {
		return nil, err
	}
	if err := s.c.Flush(); err != nil {
		return nil, err
	}
	return s.read()
}

// checkDB verifies that db exists by making it the default database of
// a backend connection (on another node if one cannot be reached), within
// timeout.
func (s *session) checkDB(db string, timeout time.Duration) *mysqlproto.Error {
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	for {
		c, err := s.connTo(ctx, s.pickAny(), false)
		if err == nil {
			err = c.InitDB(db)
			s.p.putConn(c)
		}
		if err == nil {
			return nil
		}
		if !retryable(err) || ctx.Err() != nil {
			return asSQLError(err)
		}
		s.pause()
	}
}

// loop serves commands until the client quits or the connection fails.
func (s *session) loop() error {
	for {
		pkt, err := s.readCommand()
		if err != nil {
			return err
		}
		if len(pkt) == 0 {
			if err := s.c.WriteErr(errMalformed); err != nil {
				return err
			}
			continue
		}
		if err := s.dispatch(pkt[0], pkt[1:]); err != nil {
			if errors.Is(err, errQuit) {
				return nil
			}
			return err
		}
	}
}

// read reads the client's next packet. One longer than the connection's
// limit is refused with 1153 before it is read, and the session ends: the
// rest of it would be read as commands.
func (s *session) read() ([]byte, error) {
	pkt, err := s.c.ReadPacket()
	if errors.Is(err, mysqlproto.ErrPacketTooLarge) {
		_ = s.c.WriteErr(errTooLarge)
	}
	return pkt, err
}

// readCommand reads the client's next command, waiting for it at most
// wait_timeout. Then, as MySQL does, it tells the client why (4031) and
// the session ends.
func (s *session) readCommand() ([]byte, error) {
	if s.idle == nil {
		s.idle = time.AfterFunc(s.wait, s.timeOut)
	} else {
		s.idle.Reset(s.wait)
	}
	pkt, err := s.read()
	s.idle.Stop()
	if err != nil && s.inactive.Load() {
		s.c.ResetSeq()
		_ = s.c.WriteErr(errInactive)
		return nil, fmt.Errorf("idle for wait_timeout (%v)", s.wait)
	}
	return pkt, err
}

// timeOut ends the wait for a command: it shuts the client connection's
// reading side, which wakes the read, and leaves its writing side open for
// the goodbye.
func (s *session) timeOut() {
	s.inactive.Store(true)
	if c, ok := s.raw.(interface{ CloseRead() error }); ok && c.CloseRead() == nil {
		return
	}
	s.c.Close()
}

// dispatch serves one command. An error ends the session.
func (s *session) dispatch(cmd byte, data []byte) error {
	switch cmd {
	case mysqlproto.ComQuit:
		return errQuit
	case mysqlproto.ComPing:
		return s.writeOK()
	case comrefresh.Command:
		if len(data) != 1 {
			return s.writeErr(errMalformed)
		}
		return s.query(comrefresh.Statement(data[0]))
	case comstatistics.Command:
		if err := s.c.WritePacket([]byte(s.p.statistics())); err != nil {
			return err
		}
		return s.c.Flush()
	case mysqlproto.ComQuery:
		q := string(data)
		return s.query(q)
	case mysqlproto.ComInitDB:
		return s.initDB(string(data))
	case mysqlproto.ComFieldList:
		return s.fieldList(data)
	case mysqlproto.ComStmtPrepare:
		return s.prepare(string(data))
	case mysqlproto.ComStmtExecute:
		return s.execute(data)
	case mysqlproto.ComStmtSendLongData:
		s.sendLongData(data)
		return nil
	case mysqlproto.ComStmtClose:
		if len(data) >= 4 {
			delete(s.stmts, binary.LittleEndian.Uint32(data))
		}
		return nil
	case mysqlproto.ComStmtReset:
		if len(data) < 4 {
			return s.writeErr(errMalformed)
		}
		cs := s.stmts[binary.LittleEndian.Uint32(data)]
		if cs == nil {
			return s.writeErr(errUnknownStmt(binary.LittleEndian.Uint32(data), "mysqld_stmt_reset"))
		}
		cs.takeLong()
		return s.writeOK()
	case mysqlproto.ComResetConnection:
		s.reset()
		return s.writeOK()
	case mysqlproto.ComSetOption:
		if err := s.c.WritePacket(mysqlproto.AppendResultEnd(nil, mysqlproto.OK{Status: s.status()}, s.caps)); err != nil {
			return err
		}
		return s.c.Flush()
	}
	return s.writeErr(errUnknownCom)
}

func errUnknownStmt(id uint32, where string) *mysqlproto.Error {
	return mysqlproto.NewError(1243, "HY000", "Unknown prepared statement handler (%d) given to %s", id, where)
}

// status is the server status the proxy reports in its own OK packets.
func (s *session) status() uint16 {
	var st uint16
	if s.autocommit {
		st |= mysqlproto.StatusAutocommit
	}
	if s.pinned != nil && s.pinned.Status&mysqlproto.StatusInTrans != 0 {
		st |= mysqlproto.StatusInTrans
	}
	return st
}

func (s *session) writeOK() error {
	if err := s.c.WritePacket(mysqlproto.AppendOK(nil, mysqlproto.HeaderOK, mysqlproto.OK{Status: s.status()}, s.caps)); err != nil {
		return err
	}
	return s.c.Flush()
}

func (s *session) writeErr(e *mysqlproto.Error) error { return s.c.WriteErr(e) }

// reset implements COM_RESET_CONNECTION: session variables, prepared
// statements, transaction and sticky state are dropped; the default
// database stays.
func (s *session) reset() {
	if s.pinned != nil {
		s.pinned.Close()
		s.pinned = nil
	}
	s.releaseDiag()
	s.sticky, s.wrote, s.lastInsertID, s.rowCount = false, false, 0, 0
	s.vars = map[string]string{}
	s.autocommit = true
	s.stmts = map[uint32]*clientStmt{}
}

// query serves COM_QUERY.
func (s *session) query(q string) error {
	if col, ok := sqltext.RowCountQuery(q); ok {
		return s.answerRowCount(col)
	}
	st := sqltext.Classify(q)
	return s.run(plan{st: st, text: q, digest: sqltext.Digest(q), record: true}, func(c *backend.Conn) error {
		return c.WriteCommand(mysqlproto.ComQuery, []byte(q))
	}, s.relay)
}

// answerRowCount answers `SELECT ROW_COUNT()` with the session's own
// count, in a column named col.
func (s *session) answerRowCount(col string) error {
	n := s.rowCount
	s.rowCount = -1 // that was a result set
	packets := [][]byte{
		mysqlproto.AppendLenEnc(nil, 1),
		mysqlproto.AppendColumn(nil, mysqlproto.Column{Name: col, Type: mysqlproto.TypeLongLong, Charset: 63, Length: 21,
			Flags: mysqlproto.FlagNotNull | mysqlproto.FlagBinary}),
	}
	if s.caps&mysqlproto.CapDeprecateEOF == 0 {
		packets = append(packets, mysqlproto.AppendEOF(nil, 0, s.status()))
	}
	packets = append(packets, mysqlproto.AppendLenEncString(nil, strconv.AppendInt(nil, n, 10)),
		mysqlproto.AppendResultEnd(nil, mysqlproto.OK{Status: s.status()}, s.caps))
	for _, p := range packets {
		if err := s.c.WritePacket(p); err != nil {
			return err
		}
	}
	return s.c.Flush()
}

func (s *session) relay(c *backend.Conn) (backend.Result, error) { return c.Relay(s.c, s.caps, nil) }

// initDB serves COM_INIT_DB.
func (s *session) initDB(db string) error {
	return s.run(plan{st: sqltext.Statement{Kind: sqltext.Use, DB: db}, text: "USE " + db}, func(c *backend.Conn) error {
		return c.WriteCommand(mysqlproto.ComInitDB, []byte(db))
	}, s.relay)
}

// fieldList serves COM_FIELD_LIST on a reader.
func (s *session) fieldList(data []byte) error {
	return s.run(plan{st: sqltext.Statement{Kind: sqltext.Read}, stale: true}, func(c *backend.Conn) error {
		return c.WriteCommand(mysqlproto.ComFieldList, data)
	}, func(c *backend.Conn) (backend.Result, error) { return c.RelayFieldList(s.c, s.caps) })
}

// prepare serves COM_STMT_PREPARE: the statement is prepared on a node of
// its hostgroup, registered under a session-local id, and prepared again
// lazily on whichever connection executes it.
func (s *session) prepare(q string) error {
	st := sqltext.Classify(q)
	var stmt *backend.Stmt
	err := s.run(plan{st: st, stale: true, text: q, prepareOnly: true}, func(c *backend.Conn) error {
		var err error
		stmt, _, err = c.Prepare(q)
		return err
	}, func(c *backend.Conn) (backend.Result, error) { return backend.Result{}, nil })
	if err != nil || stmt == nil {
		return err
	}
	s.nextStmt++
	id := s.nextStmt
	if st.Kind == sqltext.Set || st.Kind == sqltext.Use {
		// a prepared SET or USE takes its values at execution: the
		// proxy cannot replay it, so the session stays on one connection
		st = sqltext.Statement{Kind: sqltext.Write, Sticky: true}
	}
	s.stmts[id] = &clientStmt{sql: q, st: st, digest: sqltext.Digest(q), numParams: stmt.NumParams}
	pok := mysqlproto.PrepareOK{StmtID: id, NumColumns: stmt.NumColumns, NumParams: stmt.NumParams, Warnings: stmt.Warnings}
	if err := s.c.WritePacket(mysqlproto.AppendPrepareOK(nil, pok)); err != nil {
		return err
	}
	for _, defs := range [][][]byte{stmt.Params, stmt.Columns} {
		if len(defs) == 0 {
			continue
		}
		for _, d := range defs {
			if err := s.c.WritePacket(d); err != nil {
				return err
			}
		}
		if s.caps&mysqlproto.CapDeprecateEOF == 0 {
			if err := s.c.WritePacket(mysqlproto.AppendEOF(nil, 0, s.status())); err != nil {
				return err
			}
		}
	}
	return s.c.Flush()
}

// takeLong returns the statement's long data, and whether it outgrew
// max_allowed_packet, and clears both for the next execution.
func (cs *clientStmt) takeLong() (map[uint16][]byte, bool) {
	long, over := cs.long, cs.longOver
	cs.long, cs.longSize, cs.longOver = nil, 0, false
	return long, over
}

// sendLongData stores a COM_STMT_SEND_LONG_DATA chunk; it is sent to the
// node right before the execution. Chunks that take a statement's long
// data past max_allowed_packet are dropped and its next execution fails,
// as in MySQL.
func (s *session) sendLongData(data []byte) {
	if len(data) < 6 {
		return
	}
	cs := s.stmts[binary.LittleEndian.Uint32(data)]
	if cs == nil {
		return
	}
	if cs.longSize += len(data) - 6; cs.longSize > s.c.MaxPayload {
		cs.long, cs.longOver = nil, true
	}
	if cs.longOver {
		return
	}
	param := binary.LittleEndian.Uint16(data[4:])
	if cs.long == nil {
		cs.long = map[uint16][]byte{}
	}
	cs.long[param] = append(cs.long[param], data[6:]...)
}

// execute serves COM_STMT_EXECUTE: the statement is routed like its text,
// prepared on the chosen connection if needed, and executed with the
// node's statement id. Parameter types are always sent, so a connection
// that did not see an earlier execution still has them.
func (s *session) execute(data []byte) error {
	if len(data) < 9 {
		return s.writeErr(errMalformed)
	}
	id := binary.LittleEndian.Uint32(data)
	cs := s.stmts[id]
	if cs == nil {
		return s.writeErr(errUnknownStmt(id, "mysqld_stmt_execute"))
	}
	long, over := cs.takeLong()
	if over {
		return s.writeErr(errLongData)
	}
	body, types, err := rewriteExecute(data[9:], cs.numParams, cs.types)
	if err != nil {
		return s.writeErr(err)
	}
	cs.types = types
	iter := data[5:9]
	return s.run(plan{st: cs.st, text: cs.sql, digest: cs.digest, record: true}, func(c *backend.Conn) error {
		stmt, _, err := c.Prepare(cs.sql)
		if err != nil {
			return err
		}
		var sid [4]byte
		binary.LittleEndian.PutUint32(sid[:], stmt.ID)
		for param, chunk := range long {
			pkt := make([]byte, 0, 6+len(chunk))
			pkt = append(pkt, sid[:]...)
			pkt = binary.LittleEndian.AppendUint16(pkt, param)
			if err := c.WriteCommand(mysqlproto.ComStmtSendLongData, append(pkt, chunk...)); err != nil {
				return err
			}
		}
		payload := make([]byte, 0, 9+len(body))
		payload = append(payload, sid[:]...)
		payload = append(payload, 0) // no cursor: rows come with the response
		payload = append(payload, iter...)
		payload = append(payload, body...)
		return c.WriteCommand(mysqlproto.ComStmtExecute, payload)
	}, s.relay)
}

// asSQLError turns an error into what the client gets.
func asSQLError(err error) *mysqlproto.Error {
	var e *mysqlproto.Error
	if errors.As(err, &e) {
		return e
	}
	return mysqlproto.NewError(2013, "HY000", "proxy: %v", err)
}

// rewriteExecute takes the part of a COM_STMT_EXECUTE packet after the
// statement id, flags and iteration count and returns it with the
// parameter types always present (new-params-bound = 1), using types
// remembered from an earlier execution when the client did not resend
// them. It returns the types to remember.
func rewriteExecute(rest []byte, numParams uint16, types []byte) (body, newTypes []byte, err *mysqlproto.Error) {
	n := int(numParams)
	if n == 0 {
		return rest, types, nil
	}
	nb := (n + 7) / 8
	if len(rest) < nb+1 {
		return nil, types, errMalformed
	}
	values := rest[nb+1:]
	switch rest[nb] {
	case 1:
		if len(values) < 2*n {
			return nil, types, errMalformed
		}
		types = append([]byte(nil), values[:2*n]...)
		values = values[2*n:]
	case 0:
		if len(types) != 2*n {
			return nil, types, mysqlproto.NewError(1210, "HY000", "Incorrect arguments to mysqld_stmt_execute: no parameter types")
		}
	default:
		return nil, types, errMalformed
	}
	body = make([]byte, 0, nb+1+len(types)+len(values))
	body = append(body, rest[:nb]...)
	body = append(body, 1)
	body = append(body, types...)
	return append(body, values...), types, nil
}
