// Package clientconn guards a MySQL server's client connections at the
// byte level, below the protocol library, so that no client can hold the
// server's memory or connections longer than MySQL would let it:
//
//   - at most max_connections + 1 connections are logged in (the last one
//     for an administrator, which the server checks at login); past that a
//     new connection gets 1040 "Too many connections" before anything is
//     read;
//   - at most max_connections connections are logging in at once; one more
//     closes the oldest of them, so that sockets that connect and send
//     nothing cannot keep clients out (a login takes milliseconds);
//   - a login must finish within connect_timeout of the accept, however
//     slowly its bytes trickle in, and no packet of it may be larger than
//     loginPacketLimit (a handshake response is a few hundred bytes);
//   - after login no logical packet (MySQL splits one at 16 MiB) may be
//     larger than max_allowed_packet: it is refused from its header, before
//     the protocol library allocates it, with 1153;
//   - a connection waiting for its next command longer than its wait_timeout,
//     or stuck within a packet (net_read_timeout) or a write
//     (net_write_timeout), is closed.
//
// It also takes part in the login: TLS is done here (so that the packets
// stay visible to this layer and to the session-tracking filter above it),
// require_secure_transport is kept here, and so is caching_sha2_password's
// RSA key exchange (login.go).
//
// The timeouts are kept by one reaper goroutine per listener rather than by
// socket deadlines, which would take connections out of directio's direct
// reads.
package clientconn

import (
	"crypto/rsa"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/certusdb/certus/internal/directio"
)

// Limits are read when a connection needs them, so that SET GLOBAL changes
// them for the connections that come next.
type Limits struct {
	// MaxConnections is max_connections (0: unlimited).
	MaxConnections func() int
	// ConnectTimeout is connect_timeout: the time a login may take.
	ConnectTimeout func() time.Duration
	// MaxPacket is max_allowed_packet, in bytes.
	MaxPacket func() int
	// IdleTimeout is the global wait_timeout, each connection's until it
	// sets its own (SetIdleTimeout).
	IdleTimeout func() time.Duration
	// ReadTimeout is net_read_timeout: how long a packet that has begun may
	// pause.
	ReadTimeout func() time.Duration
	// WriteTimeout is net_write_timeout: how long a write may block on a
	// client that does not read.
	WriteTimeout func() time.Duration
	// TLS is the configuration of the TLS clients may ask for (nil, or
	// returning nil: none offered). It is asked at each login, so a reload
	// applies to the logins that follow.
	TLS func() *tls.Config
	// RequireSecure is require_secure_transport: a login without TLS is
	// refused (nil: false).
	RequireSecure func() bool
	// RSAKey is the key of caching_sha2_password's password exchange
	// without TLS (nil: a password is only taken over TLS).
	RSAKey *rsa.PrivateKey
	// Logger gets a line for connections closed or refused (at most one
	// per reason every logEvery).
	Logger *slog.Logger
}

// loginPacketLimit bounds each packet a client sends before it is logged
// in. MySQL truncates connection attributes at 64 KiB; a handshake
// response is otherwise a few hundred bytes.
const loginPacketLimit = 64<<10 + 1024

// maxPayload is the payload length of a packet that a continuation follows.
const maxPayload = 1<<24 - 1

// reapEvery is how often the timeouts are checked, and so how late past
// its timeout a connection may be closed.
const reapEvery = 250 * time.Millisecond

// logEvery bounds how often one reason to close or refuse connections is
// logged (a flood of them must not flood the log).
const logEvery = 10 * time.Second

// MySQL's errors that this package answers itself.
var (
	errTooMany     = sqlError{1040, "08004", "Too many connections"}
	errBadLogin    = sqlError{1043, "08S01", "Bad handshake"}
	errPacketLarge = sqlError{1153, "08S01", "Got a packet bigger than 'max_allowed_packet' bytes"}
)

type sqlError struct {
	code  uint16
	state string
	msg   string
}

func (e sqlError) Error() string { return e.msg }

// packet returns e as an ERR packet with sequence number seq.
func (e sqlError) packet(seq byte) []byte {
	n := 1 + 2 + 1 + 5 + len(e.msg)
	p := []byte{byte(n), byte(n >> 8), byte(n >> 16), seq, 0xff}
	p = binary.LittleEndian.AppendUint16(p, e.code)
	p = append(p, '#')
	p = append(p, e.state...)
	return append(p, e.msg...)
}

// Listener accepts client connections within the limits.
type Listener struct {
	net.Listener
	lim   Limits
	group *directio.Group

	loggedIn atomic.Int64 // connections logged in and not closed

	mu    sync.Mutex
	conns map[*Conn]struct{}
	// closed counts connections closed or refused per reason since the
	// reason was last logged (logged)
	closed map[string]int
	logged map[string]time.Time

	stop     chan struct{}
	stopOnce sync.Once
}

// Listen wraps ln. Connections are read through directio in group (nil:
// through Go's poller). Close stops the reaper with the listener.
func Listen(ln net.Listener, lim Limits, group *directio.Group) *Listener {
	if lim.Logger == nil {
		lim.Logger = slog.Default()
	}
	l := &Listener{Listener: ln, lim: lim, group: group, conns: map[*Conn]struct{}{},
		closed: map[string]int{}, logged: map[string]time.Time{}, stop: make(chan struct{})}
	go l.reap()
	return l
}

// LoggedIn is the number of connections logged in.
func (l *Listener) LoggedIn() int { return int(l.loggedIn.Load()) }

// Accept returns the next connection while fewer than max_connections + 1
// are logged in; others are answered 1040 and closed here.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		max := int64(l.lim.MaxConnections())
		if max > 0 && l.loggedIn.Load() > max {
			// a fresh socket's send buffer takes the packet at once; the
			// deadline is for a peer that shrank its window to nothing
			_ = raw.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = raw.Write(errTooMany.packet(0))
			_ = raw.Close()
			l.count("refused: too many connections (max_connections)", raw.RemoteAddr())
			continue
		}
		if max > 0 {
			l.makeRoomToLogIn(max)
		}
		var io net.Conn = raw
		if l.group != nil {
			if d := directio.New(raw, l.group); d != nil {
				io = d
			}
		}
		c := &Conn{raw: io, io: io, l: l, accepted: time.Now(), login: &login{}}
		c.idle.Store(int64(l.lim.IdleTimeout()))
		l.mu.Lock()
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		return c, nil
	}
}

// makeRoomToLogIn closes the connection that has been logging in longest
// when max are logging in.
func (l *Listener) makeRoomToLogIn(max int64) {
	l.mu.Lock()
	var oldest *Conn
	n := int64(0)
	for c := range l.conns {
		if c.state.Load() != stateLogin {
			continue
		}
		n++
		if oldest == nil || c.accepted.Before(oldest.accepted) {
			oldest = c
		}
	}
	l.mu.Unlock()
	if n >= max && oldest != nil {
		_ = oldest.Close()
		l.count("closed: the longest unfinished login, for a new connection (max_connections logging in)", oldest.RemoteAddr())
	}
}

// Close stops accepting and stops the reaper; open connections stay.
func (l *Listener) Close() error {
	l.stopOnce.Do(func() { close(l.stop) })
	return l.Listener.Close()
}

// count notes a connection closed or refused for reason, logging the
// reason's count at most once per logEvery.
func (l *Listener) count(reason string, remote net.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed[reason]++
	now := time.Now()
	last := l.logged[reason]
	if now.Sub(last) < logEvery {
		return
	}
	attrs := []any{"connections", l.closed[reason], "last_remote", remote.String()}
	if !last.IsZero() {
		attrs = append(attrs, "since", last.Format(time.RFC3339))
	}
	l.lim.Logger.Warn("client connections "+reason, attrs...)
	l.logged[reason] = now
	l.closed[reason] = 0
}

// reap closes, every reapEvery, the connections past a timeout.
func (l *Listener) reap() {
	t := time.NewTicker(reapEvery)
	defer t.Stop()
	var late []*Conn
	var why []string
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		login := l.lim.ConnectTimeout()
		read, write := l.lim.ReadTimeout(), l.lim.WriteTimeout()
		late, why = late[:0], why[:0]
		l.mu.Lock()
		for c := range l.conns {
			if r := c.overdue(now, login, read, write); r != "" {
				late, why = append(late, c), append(why, r)
			}
		}
		l.mu.Unlock()
		for i, c := range late {
			_ = c.Close()
			l.count(why[i], c.RemoteAddr())
		}
	}
}

// A connection's states.
const (
	stateLogin = iota
	stateLoggedIn
	stateClosed
)

// What a connection is doing when the reaper looks (Conn.op).
const (
	opNone    = iota // no read or write in progress: a statement runs
	opCommand        // reading, waiting for the next command
	opPacket         // reading the rest of a packet
	opWrite          // writing
)

// Conn is one client connection within the limits. Read and Write are the
// protocol library's (one goroutine); Close and the reaper's look may come
// from any.
type Conn struct {
	raw      net.Conn // the socket, or its directio.Conn
	io       net.Conn // raw, or the TLS connection over it
	l        *Listener
	accepted time.Time

	state atomic.Int32 // stateLogin, stateLoggedIn or stateClosed
	idle  atomic.Int64 // this connection's wait_timeout, in ns
	// op is the current read or write: its start in Unix nanoseconds
	// with the op kind in the low two bits, or 0
	op       atomic.Int64
	tlsState atomic.Pointer[tls.ConnectionState]

	login *login // until the login ends (login.go)
	carry []byte // client bytes read while logging in, for after it
	flags uint32 // the capability flags of the client's handshake response

	// the client's packets after login, followed to check their lengths
	rhdr    [4]byte
	rhdrN   int
	rleft   int // bytes of the current packet still to come
	logical int // bytes of the current logical packet before this part
}

var _ net.Conn = (*Conn)(nil)

// SetIdleTimeout sets how long the connection may wait for its next
// command (its session's wait_timeout).
func (c *Conn) SetIdleTimeout(d time.Duration) { c.idle.Store(int64(d)) }

// clientInteractive is CLIENT_INTERACTIVE: the session's idle timeout is
// interactive_timeout.
const clientInteractive = 1 << 10

// Interactive reports whether the client's login said it is interactive.
func (c *Conn) Interactive() bool { return c.flags&clientInteractive != 0 }

// LoggedIn reports whether the server accepted the client's login.
func (c *Conn) LoggedIn() bool { return c.state.Load() == stateLoggedIn }

// overdue returns why c is to be closed now, or "".
func (c *Conn) overdue(now time.Time, login, read, write time.Duration) string {
	if c.state.Load() == stateLogin {
		if login > 0 && now.Sub(c.accepted) > login {
			return "closed: not logged in within connect_timeout"
		}
		return ""
	}
	op := c.op.Load()
	if op == 0 {
		return ""
	}
	waited := time.Duration(now.UnixNano() - op&^3)
	switch op & 3 {
	case opCommand:
		if d := time.Duration(c.idle.Load()); d > 0 && waited > d {
			return "closed: idle past wait_timeout"
		}
	case opPacket:
		if read > 0 && waited > read {
			return "closed: a packet stalled past net_read_timeout"
		}
	case opWrite:
		if write > 0 && waited > write {
			return "closed: not reading its results within net_write_timeout"
		}
	}
	return ""
}

func (c *Conn) begin(kind int64) { c.op.Store(time.Now().UnixNano()&^3 | kind) }
func (c *Conn) end()             { c.op.Store(0) }

// ErrRefused is returned by Read for a packet over its limit; the client
// has been sent MySQL's error for it.
var ErrRefused = errors.New("clientconn: packet over the limit refused")

// Read reads from the client, refusing a packet over max_allowed_packet
// as soon as its header arrives.
func (c *Conn) Read(p []byte) (int, error) {
	if c.login != nil {
		return c.readLogin(p)
	}
	if len(c.carry) > 0 {
		n := copy(p, c.carry)
		c.carry = c.carry[n:]
		return n, c.follow(p[:n])
	}
	kind := int64(opPacket)
	if c.rleft == 0 && c.rhdrN == 0 {
		kind = opCommand
	}
	c.begin(kind)
	n, err := c.io.Read(p)
	c.end()
	if n > 0 {
		if ferr := c.follow(p[:n]); ferr != nil {
			return 0, ferr
		}
	}
	return n, err
}

// follow checks the lengths of the packets whose headers p holds.
func (c *Conn) follow(p []byte) error {
	for i := 0; i < len(p); {
		if c.rleft > 0 {
			k := min(c.rleft, len(p)-i)
			c.rleft -= k
			i += k
			continue
		}
		c.rhdr[c.rhdrN] = p[i]
		c.rhdrN++
		i++
		if c.rhdrN < 4 {
			continue
		}
		c.rhdrN = 0
		n := int(c.rhdr[0]) | int(c.rhdr[1])<<8 | int(c.rhdr[2])<<16
		if c.logical+n > c.l.lim.MaxPacket() {
			return c.refuse(errPacketLarge, c.rhdr[3]+1)
		}
		if n == maxPayload {
			c.logical += n
		} else {
			c.logical = 0
		}
		c.rleft = n
	}
	return nil
}

// Write writes to the client; while logging in, through the login's
// rewriting.
func (c *Conn) Write(p []byte) (int, error) {
	if c.login != nil {
		return c.writeLogin(p)
	}
	c.begin(opWrite)
	n, err := c.io.Write(p)
	c.end()
	return n, err
}

// Close closes the connection; only the first call does anything.
func (c *Conn) Close() error {
	switch c.state.Swap(stateClosed) {
	case stateClosed:
		return nil
	case stateLoggedIn:
		c.l.loggedIn.Add(-1)
	}
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.raw.Close()
}

// LocalAddr implements net.Conn.
func (c *Conn) LocalAddr() net.Addr { return c.raw.LocalAddr() }

// RemoteAddr implements net.Conn.
func (c *Conn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// SetDeadline implements net.Conn.
func (c *Conn) SetDeadline(t time.Time) error { return c.raw.SetDeadline(t) }

// SetReadDeadline implements net.Conn.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.raw.SetReadDeadline(t) }

// SetWriteDeadline implements net.Conn.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }
