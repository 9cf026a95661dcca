// Package backend is the proxy's client side towards the nodes: it dials
// and authenticates MySQL connections, runs commands on them, relays
// their results to a client connection (translating between EOF and
// CLIENT_DEPRECATE_EOF framing and between OK packet formats), keeps a
// per-connection cache of prepared statements, and pools idle
// connections per node.
package backend

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/certusdb/certus/internal/directio"
	"github.com/certusdb/certus/internal/mysqlauth"
	"github.com/certusdb/certus/proxy/mysqlproto"
)

// ErrProtocol is returned (wrapped) when a node sends something the
// protocol does not allow at that point; the connection is unusable.
var ErrProtocol = errors.New("backend protocol error")

// ErrAuth is returned (wrapped) when a node refuses the proxy's account.
var ErrAuth = errors.New("backend authentication failed")

// ErrClientWrite wraps a failure to write to the client while relaying:
// the backend connection is still in a known state only if the relay
// finished reading, which it does before returning this error.
var ErrClientWrite = errors.New("writing to the client failed")

// wantCaps are the capabilities the proxy asks of a node.
const wantCaps = mysqlproto.CapLongPassword | mysqlproto.CapLongFlag | mysqlproto.CapProtocol41 |
	mysqlproto.CapTransactions | mysqlproto.CapSecureConnection | mysqlproto.CapMultiStatements |
	mysqlproto.CapMultiResults | mysqlproto.CapPSMultiResults | mysqlproto.CapPluginAuth |
	mysqlproto.CapPluginAuthLenenc | mysqlproto.CapDeprecateEOF | mysqlproto.CapSessionTrack |
	mysqlproto.CapLocalFiles

// maxStmtCache bounds the prepared statements kept per connection.
const maxStmtCache = 512

// Options are the account and timeouts for dialing nodes.
type Options struct {
	User        string
	Password    string
	DialTimeout time.Duration
	// Direct, when set, counts the connection among those that are read
	// blocked in read(2) outside Go's poller while few are open
	// (internal/directio); nil keeps the poller.
	Direct *directio.Group
	// TLS, when set, is the TLS the connection must use (a node that
	// does not offer it is refused); its ServerName is the node's host
	// unless it skips verification.
	TLS *tls.Config
}

// Stmt is a statement prepared on one backend connection.
type Stmt struct {
	ID         uint32
	NumParams  uint16
	NumColumns uint16
	Warnings   uint16
	// Params and Columns are the definition packets of the response.
	Params  [][]byte
	Columns [][]byte
}

// Conn is one authenticated connection to a node.
type Conn struct {
	pc *mysqlproto.Conn
	// raw is the socket (or its directio.Conn) under pc, TLS or not.
	raw net.Conn
	// Node and Addr identify the node.
	Node string
	Addr string
	// User is the account the connection is logged in as.
	User string
	// SyncWait connections run with wsrep_sync_wait=1.
	SyncWait bool
	// Caps are the negotiated capabilities.
	Caps uint32
	// Status is the server status of the last OK/EOF.
	Status uint16
	// DB is the connection's default database.
	DB string
	// Vars are the session assignments applied (key -> statement).
	Vars map[string]string
	// Broken is set when the connection must not be reused.
	Broken bool
	// LastInsertID is the connection's LAST_INSERT_ID() as far as the
	// proxy knows (from OK packets and its own settings).
	LastInsertID uint64
	// Conditions is set when the last statement left warnings or an error
	// in the node's diagnostics area (see Pool.Put).
	Conditions bool
	// TracksGTIDs is set when the node accepted session_track_gtids: the
	// OK packet of every statement that commits a write-set then names
	// its GTID.
	TracksGTIDs bool

	stmts    map[string]*Stmt
	key      string
	lastUsed time.Time
}

// setIdle tells the connection's direct I/O (Options.Direct) whether it
// sits in the pool, where nothing waits on it.
func (c *Conn) setIdle(idle bool) {
	if d, ok := c.raw.(*directio.Conn); ok {
		d.SetIdle(idle)
	}
}

// Dial connects and authenticates to a node.
func Dial(ctx context.Context, node, addr string, opt Options) (*Conn, error) {
	if opt.DialTimeout == 0 {
		opt.DialTimeout = 5 * time.Second
	}
	d := net.Dialer{Timeout: opt.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if opt.Direct != nil {
		if d := directio.New(nc, opt.Direct); d != nil {
			nc = d
		}
	}
	c := &Conn{pc: mysqlproto.NewConn(nc), raw: nc, Node: node, Addr: addr, User: opt.User, Vars: map[string]string{}, stmts: map[string]*Stmt{}}
	c.pc.SetDeadlineIn(opt.DialTimeout)
	if err := c.handshake(opt); err != nil {
		nc.Close()
		return nil, err
	}
	if c.Caps&mysqlproto.CapSessionTrack != 0 {
		// Ask the node to put each commit's GTID in its OK packet, which
		// saves the proxy a WSREP_LAST_WRITTEN_GTID() round trip per
		// write. A server without the variable refuses it; the proxy then
		// falls back to asking.
		_, err := c.Exec("SET session_track_gtids = OWN_GTID")
		c.TracksGTIDs = err == nil
	}
	c.pc.SetDeadlineIn(0)
	c.refreshKey()
	return c, nil
}

func (c *Conn) handshake(opt Options) error {
	p, err := c.pc.ReadPacket()
	if err != nil {
		return err
	}
	g, err := mysqlproto.ParseGreeting(p)
	if err != nil {
		return err
	}
	c.Caps = wantCaps & g.Capabilities
	c.Status = g.Status
	if opt.TLS != nil {
		if err := c.startTLS(opt.TLS, g.Capabilities); err != nil {
			return err
		}
	}
	plugin := g.AuthPlugin
	if plugin != mysqlproto.CachingSha2 {
		plugin = mysqlproto.NativePassword
	}
	resp := scramble(plugin, g.Salt, opt.Password)
	hr := mysqlproto.HandshakeResponse{Capabilities: c.Caps, MaxPacket: mysqlproto.DefaultMaxPayload, Charset: 45,
		User: opt.User, AuthResponse: resp, AuthPlugin: plugin}
	if err := c.pc.WritePacket(mysqlproto.AppendHandshakeResponse(nil, hr)); err != nil {
		return err
	}
	if err := c.pc.Flush(); err != nil {
		return err
	}
	for range 4 {
		p, err := c.pc.ReadPacket()
		if err != nil {
			return err
		}
		if len(p) == 0 {
			return fmt.Errorf("%w: empty auth packet", ErrProtocol)
		}
		switch p[0] {
		case mysqlproto.HeaderOK:
			return nil
		case mysqlproto.HeaderErr:
			e, err := mysqlproto.ParseErr(p)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrAuth, err)
			}
			return fmt.Errorf("%w: %w", ErrAuth, e)
		case mysqlproto.HeaderEOF:
			name, data, err := mysqlproto.ParseAuthSwitch(p)
			if err != nil {
				return err
			}
			if name != mysqlproto.NativePassword && name != mysqlproto.CachingSha2 {
				return fmt.Errorf("%w: unsupported auth plugin %q", ErrAuth, name)
			}
			if err := c.pc.WritePacket(scramble(name, data, opt.Password)); err != nil {
				return err
			}
			if err := c.pc.Flush(); err != nil {
				return err
			}
		case mysqlauth.MoreData: // caching_sha2_password: fast auth ok, or full auth needed
			if len(p) > 1 && p[1] == mysqlauth.FullAuth {
				if opt.TLS == nil {
					return fmt.Errorf("%w: caching_sha2_password full authentication needs TLS (backend_tls)", ErrAuth)
				}
				if err := c.pc.WritePacket(append([]byte(opt.Password), 0)); err != nil {
					return err
				}
				if err := c.pc.Flush(); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("%w: unexpected auth packet 0x%02x", ErrProtocol, p[0])
		}
	}
	return fmt.Errorf("%w: authentication did not finish", ErrProtocol)
}

// startTLS asks the node for TLS (an SSL request: a handshake response
// cut after the capabilities) and runs the handshake; serverCaps are the
// greeting's.
func (c *Conn) startTLS(cfg *tls.Config, serverCaps uint32) error {
	if serverCaps&mysqlproto.CapSSL == 0 {
		return fmt.Errorf("%w: the node does not offer TLS", ErrAuth)
	}
	if !cfg.InsecureSkipVerify {
		host, _, err := net.SplitHostPort(c.Addr)
		if err != nil {
			return err
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	c.Caps |= mysqlproto.CapSSL
	req := mysqlproto.AppendHandshakeResponse(nil, mysqlproto.HandshakeResponse{Capabilities: c.Caps, MaxPacket: mysqlproto.DefaultMaxPayload, Charset: 45})
	if err := c.pc.WritePacket(req[:mysqlauth.SSLRequestLength]); err != nil {
		return err
	}
	if err := c.pc.StartTLS(cfg, false); err != nil {
		return fmt.Errorf("%w: TLS to %s: %v", ErrAuth, c.Addr, err)
	}
	return nil
}

func scramble(plugin string, salt []byte, password string) []byte {
	if plugin == mysqlproto.CachingSha2 {
		return mysqlproto.ScrambleSha2(salt, password)
	}
	return mysqlproto.ScrambleNative(salt, password)
}

// Sent returns how many bytes have been written to the node so far; a
// caller compares it before and after a command to learn whether any of
// the command reached the node.
func (c *Conn) Sent() int64 { return c.pc.Sent() }

// alive reports whether an idle connection is still open as far as can be
// told without a round trip: nothing waits to be read on it, neither the
// end of the stream nor a packet the node sent before it closed it (it
// restarted, or killed the thread). A statement written to such a
// connection would fail, and the proxy could not tell it from one that
// the node was running when it went away, which it must not run again
// elsewhere (see Sent).
func (c *Conn) alive() bool { return c.pc.Buffered() == 0 && peerQuiet(c.raw) }

// Close closes the connection.
func (c *Conn) Close() error {
	c.Broken = true
	return c.pc.Close()
}

// Key identifies the connection's session state (database and
// variables): connections with equal keys are interchangeable.
func (c *Conn) Key() string { return c.key }

// StateKey returns the Key a connection with database db and session
// assignments vars has.
func StateKey(db string, vars map[string]string) string {
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(db)
	for _, k := range keys {
		b.WriteByte(0)
		b.WriteString(vars[k])
	}
	return b.String()
}

func (c *Conn) refreshKey() { c.key = StateKey(c.DB, c.Vars) }

// WriteCommand sends a command packet (cmd and payload).
func (c *Conn) WriteCommand(cmd byte, payload []byte) error {
	c.pc.ResetSeq()
	buf := make([]byte, 0, 1+len(payload))
	buf = append(append(buf, cmd), payload...)
	if err := c.pc.WritePacket(buf); err != nil {
		c.Broken = true
		return err
	}
	return c.flush()
}

// WritePacket sends one more packet of the current command (no flush).
func (c *Conn) WritePacket(p []byte) error {
	if err := c.pc.WritePacket(p); err != nil {
		c.Broken = true
		return err
	}
	return nil
}

// erLocalInfileDisabled is MySQL's ER_CLIENT_LOCAL_FILES_DISABLED.
const erLocalInfileDisabled = 3948

// relayLocalFile serves the node's request req for a client file (LOAD
// DATA LOCAL INFILE): it hands the request to the client dst and relays
// the file's packets, up to the empty one that ends it, to the node. A
// client that did not enable local files (or none, dst nil) cannot be
// asked: the node gets an empty file and sent is false, so that the caller
// answers the client 3948, as MySQL does, instead of the node's OK for
// no rows. A client that breaks off mid-file breaks this connection too:
// the node then abandons the statement rather than load part of a file.
func (c *Conn) relayLocalFile(dst *mysqlproto.Conn, dstCaps uint32, req []byte) (sent bool, err error) {
	sent = dst != nil && dstCaps&mysqlproto.CapLocalFiles != 0
	if !sent {
		if err := c.WritePacket(nil); err != nil {
			return false, err
		}
		return false, c.flush()
	}
	clientErr := func(what string, err error) error {
		c.Broken = true
		return fmt.Errorf("%w: %s: %v", ErrClientWrite, what, err)
	}
	if err := dst.WritePacket(req); err != nil {
		return false, clientErr("asking for the local file", err)
	}
	if err := dst.Flush(); err != nil {
		return false, clientErr("asking for the local file", err)
	}
	for {
		p, err := dst.ReadPacket()
		if err != nil {
			return false, clientErr("reading the local file", err)
		}
		if err := c.WritePacket(p); err != nil {
			return false, err
		}
		if len(p) == 0 {
			return true, c.flush()
		}
	}
}

// flush sends the buffered packets; an error marks the connection broken.
func (c *Conn) flush() error {
	if err := c.pc.Flush(); err != nil {
		c.Broken = true
		return err
	}
	return nil
}

// read reads one packet; an error marks the connection broken.
func (c *Conn) read() ([]byte, error) {
	p, err := c.pc.ReadPacket()
	if err != nil {
		c.Broken = true
		return nil, err
	}
	if len(p) == 0 {
		c.Broken = true
		return nil, fmt.Errorf("%w: empty packet", ErrProtocol)
	}
	return p, nil
}

func (c *Conn) protoErr(format string, args ...any) error {
	c.Broken = true
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, args...)...)
}

// Exec runs a statement whose result the proxy consumes itself and
// returns the first column of each row of the last result set. A
// statement the node refuses returns a *mysqlproto.Error and leaves the
// connection usable.
func (c *Conn) Exec(q string) ([]string, error) {
	if err := c.WriteCommand(mysqlproto.ComQuery, []byte(q)); err != nil {
		return nil, err
	}
	var col []string
	res, err := c.Relay(nil, 0, &col)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, res.Err
	}
	return col, nil
}

// InitDB makes db the default database.
func (c *Conn) InitDB(db string) error {
	if err := c.WriteCommand(mysqlproto.ComInitDB, []byte(db)); err != nil {
		return err
	}
	res, err := c.Relay(nil, 0, nil)
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	c.DB = db
	c.refreshKey()
	return nil
}

// SetVar applies a session assignment (its replay statement).
func (c *Conn) SetVar(key, stmt string) error {
	if _, err := c.Exec(stmt); err != nil {
		return err
	}
	c.NoteVar(key, stmt)
	return nil
}

// NoteVar records that the connection has the assignment (run by the
// client's own SET statement).
func (c *Conn) NoteVar(key, stmt string) {
	c.Vars[key] = stmt
	c.refreshKey()
}

// NoteDB records that the connection's default database is db.
func (c *Conn) NoteDB(db string) {
	c.DB = db
	c.refreshKey()
}

// Result describes a relayed response.
type Result struct {
	// OK is the last OK packet or end of result set.
	OK mysqlproto.OK
	// Err is set when the response ended with an ERR packet; the relay
	// did not write it to the client (ErrPacket is the raw packet).
	Err       *mysqlproto.Error
	ErrPacket []byte
	// Rows counts rows relayed; Affected sums affected rows.
	Rows     int64
	Affected uint64
	// ResultSets counts result sets with columns.
	ResultSets int
}

// Relay reads the response to COM_QUERY or COM_STMT_EXECUTE (text or
// binary result sets, OK, ERR, several results chained with
// SERVER_MORE_RESULTS_EXISTS) and writes it to dst in the format of a
// client with capabilities dstCaps, except a final ERR, which is
// returned in Result for the caller to write (or retry). dst may be nil
// to consume the response. If col is not nil it receives the first
// column of each text row. An error means the backend connection is
// broken (or, wrapped in ErrClientWrite, that the client went away).
func (c *Conn) Relay(dst *mysqlproto.Conn, dstCaps uint32, col *[]string) (Result, error) {
	var res Result
	var werr error
	out := func(p []byte) {
		if dst != nil && werr == nil {
			werr = dst.WritePacket(p)
		}
	}
	refused := false // a LOAD DATA LOCAL the client cannot serve
	finish := func() (Result, error) {
		if werr != nil {
			return res, fmt.Errorf("%w: %v", ErrClientWrite, werr)
		}
		if refused && res.Err == nil {
			res.Err = mysqlproto.NewError(erLocalInfileDisabled, "42000", "Loading local data is disabled; this must be enabled on both the client and server sides")
			res.ErrPacket = mysqlproto.AppendErr(nil, res.Err)
		}
		return res, nil
	}
	for {
		p, err := c.read()
		if err != nil {
			return res, err
		}
		switch p[0] {
		case mysqlproto.HeaderOK:
			ok, err := mysqlproto.ParseOK(p, c.Caps)
			if err != nil {
				return res, c.protoErr("%v", err)
			}
			c.Status = ok.Status
			res.OK = ok
			res.Affected += ok.AffectedRows
			out(mysqlproto.AppendOK(nil, mysqlproto.HeaderOK, ok, dstCaps))
			if ok.Status&mysqlproto.StatusMoreResults != 0 {
				continue
			}
			return finish()
		case mysqlproto.HeaderErr:
			e, err := mysqlproto.ParseErr(p)
			if err != nil {
				return res, c.protoErr("%v", err)
			}
			res.Err, res.ErrPacket = e, p
			return finish()
		case mysqlproto.HeaderLocalInFile:
			sent, err := c.relayLocalFile(dst, dstCaps, p)
			if err != nil {
				return res, err
			}
			if !sent {
				// the node loaded nothing: its OK would read as success
				refused = true
				out = func([]byte) {}
			}
			continue
		}
		ncol, _, _, ok := mysqlproto.ReadLenEnc(p, 0)
		if !ok || ncol == 0 || ncol > 4096 {
			return res, c.protoErr("bad column count")
		}
		res.ResultSets++
		out(p)
		for range ncol {
			if p, err = c.read(); err != nil {
				return res, err
			}
			out(p)
		}
		if c.Caps&mysqlproto.CapDeprecateEOF == 0 {
			if p, err = c.read(); err != nil {
				return res, err
			}
			if !mysqlproto.IsEOF(p) {
				return res, c.protoErr("no EOF after column definitions")
			}
		}
		if dstCaps&mysqlproto.CapDeprecateEOF == 0 {
			out(mysqlproto.AppendEOF(nil, 0, c.Status&^mysqlproto.StatusMoreResults))
		}
		more := false
		for {
			if p, err = c.read(); err != nil {
				return res, err
			}
			if p[0] == mysqlproto.HeaderErr {
				e, err := mysqlproto.ParseErr(p)
				if err != nil {
					return res, c.protoErr("%v", err)
				}
				res.Err, res.ErrPacket = e, p
				return finish()
			}
			if mysqlproto.IsResultEnd(p, c.Caps) {
				end, err := mysqlproto.ParseResultEnd(p, c.Caps)
				if err != nil {
					return res, c.protoErr("%v", err)
				}
				c.Status = end.Status
				res.OK = end
				out(mysqlproto.AppendResultEnd(nil, end, dstCaps))
				more = end.Status&mysqlproto.StatusMoreResults != 0
				break
			}
			res.Rows++
			if col != nil {
				v, _, ok := mysqlproto.ReadLenEncString(p, 0)
				if !ok {
					return res, c.protoErr("bad row")
				}
				*col = append(*col, string(v))
			}
			out(p)
		}
		if !more {
			return finish()
		}
	}
}

// RelayFieldList reads a COM_FIELD_LIST response (column definitions and
// an end marker) and writes it to dst like Relay.
func (c *Conn) RelayFieldList(dst *mysqlproto.Conn, dstCaps uint32) (Result, error) {
	var res Result
	for {
		p, err := c.read()
		if err != nil {
			return res, err
		}
		switch {
		case p[0] == mysqlproto.HeaderErr:
			e, err := mysqlproto.ParseErr(p)
			if err != nil {
				return res, c.protoErr("%v", err)
			}
			res.Err, res.ErrPacket = e, p
			return res, nil
		case mysqlproto.IsResultEnd(p, c.Caps) || mysqlproto.IsEOF(p):
			end, _ := mysqlproto.ParseResultEnd(p, c.Caps)
			if mysqlproto.IsEOF(p) {
				end, _ = mysqlproto.ParseResultEnd(p, 0)
			}
			c.Status = end.Status
			res.OK = end
			if err := dst.WritePacket(mysqlproto.AppendResultEnd(nil, end, dstCaps)); err != nil {
				return res, fmt.Errorf("%w: %v", ErrClientWrite, err)
			}
			return res, nil
		}
		if err := dst.WritePacket(p); err != nil {
			return res, fmt.Errorf("%w: %v", ErrClientWrite, err)
		}
	}
}

// Prepare returns the statement prepared on this connection, preparing
// it first if needed. A statement the node refuses returns a
// *mysqlproto.Error (and its raw packet) and leaves the connection
// usable.
func (c *Conn) Prepare(q string) (*Stmt, []byte, error) {
	if s := c.stmts[q]; s != nil {
		return s, nil, nil
	}
	if len(c.stmts) >= maxStmtCache {
		for k, s := range c.stmts {
			var id [4]byte
			id[0], id[1], id[2], id[3] = byte(s.ID), byte(s.ID>>8), byte(s.ID>>16), byte(s.ID>>24)
			if err := c.WriteCommand(mysqlproto.ComStmtClose, id[:]); err != nil {
				return nil, nil, err
			}
			delete(c.stmts, k)
			if len(c.stmts) < maxStmtCache/2 {
				break
			}
		}
	}
	if err := c.WriteCommand(mysqlproto.ComStmtPrepare, []byte(q)); err != nil {
		return nil, nil, err
	}
	p, err := c.read()
	if err != nil {
		return nil, nil, err
	}
	if p[0] == mysqlproto.HeaderErr {
		e, err := mysqlproto.ParseErr(p)
		if err != nil {
			return nil, nil, c.protoErr("%v", err)
		}
		return nil, p, e
	}
	pok, err := mysqlproto.ParsePrepareOK(p)
	if err != nil {
		return nil, nil, c.protoErr("%v", err)
	}
	s := &Stmt{ID: pok.StmtID, NumParams: pok.NumParams, NumColumns: pok.NumColumns, Warnings: pok.Warnings}
	read := func(n uint16) ([][]byte, error) {
		if n == 0 {
			return nil, nil
		}
		defs := make([][]byte, 0, n)
		for range n {
			p, err := c.read()
			if err != nil {
				return nil, err
			}
			defs = append(defs, p)
		}
		if c.Caps&mysqlproto.CapDeprecateEOF == 0 {
			p, err := c.read()
			if err != nil {
				return nil, err
			}
			if !mysqlproto.IsEOF(p) {
				return nil, c.protoErr("no EOF after definitions")
			}
		}
		return defs, nil
	}
	if s.Params, err = read(s.NumParams); err != nil {
		return nil, nil, err
	}
	if s.Columns, err = read(s.NumColumns); err != nil {
		return nil, nil, err
	}
	c.stmts[q] = s
	return s, nil, nil
}
