package directio

import (
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Go reads a socket without blocking and, when nothing is there, parks the
// goroutine until the network poller (epoll) reports the socket readable
// and another thread wakes it. For one client that sends a statement as
// soon as it has the previous answer, that round costs more than the
// statement: on this project's 2-core test machine a single session's
// point select ran at 13.7k/s through the poller and 16.3k/s with the
// connection's thread blocked in recv(2), as MariaDB's
// thread-per-connection server does (oltp_point_select, one thread; two
// threads: 24.3k/s and 30.6k/s).
//
// Blocking in recv(2) is not enough while the socket stays registered with
// the poller: every command that arrives and every acknowledgement that
// frees send space is an edge the poller's thread wakes up for, finds no
// goroutine waiting on, and goes back to sleep; holding a scheduler slot
// meanwhile, it also makes the runtime hand the connection's slot to yet
// another thread. Measured with one sysbench thread, that was about two
// extra thread wake-ups per statement and 42 µs of server CPU per point
// select. So a connection read directly takes its socket out of the
// poller altogether: it keeps a duplicate of the descriptor in blocking
// mode, outside the poller, and closes the poller's one.
//
// With more sessions than cores, blocked threads cost more than the poller
// saves (16 threads: 35k/s vs 22k/s), so a connection is read directly
// only while its Group has at most PerProc × GOMAXPROCS connections open;
// at its next read after that is exceeded it moves back into the poller,
// and out again once the count falls.

// Group counts the open connections of one kind (a server's clients, a
// proxy's clients and backends) that decide together whether each is read
// directly.
type Group struct {
	// PerProc is how many open connections per GOMAXPROCS may be read
	// directly: 1 where each connection has a goroutine waiting on it,
	// more where a goroutine waits on one of several at a time.
	PerProc int
	live    atomic.Int32
}

// Live is the number of the group's open connections.
func (g *Group) Live() int { return int(g.live.Load()) }

// Conn is a TCP connection whose I/O is blocked in read(2)/write(2) on a
// descriptor outside Go's poller while its group has few connections open,
// and goes through the poller otherwise, or while a deadline is set (the
// poller keeps deadlines). Read, Write and the deadlines are called by the
// connection's goroutine; Close may come from any.
type Conn struct {
	g *Group
	// maxBlocking is the group's limit when the connection was opened
	// (asking GOMAXPROCS each time takes the scheduler's lock)
	maxBlocking int32
	local       net.Addr
	remote      net.Addr

	mu     sync.Mutex
	file   *os.File // the socket in blocking mode, outside the poller; nil while polled
	polled net.Conn // the socket in the poller; nil while read directly
	closed bool
	idle   bool // not counted in the group (SetIdle)
	// a read or write deadline is set: the socket stays in the poller
	readDeadline, writeDeadline bool

	yielded time.Time // when a direct read last yielded the processor
}

var _ net.Conn = (*Conn)(nil)

// yieldEvery is how often a connection read directly yields its
// processor. A goroutine that goes from one blocking system call to the
// next never passes through the scheduler, and once that has lasted 10 ms
// the runtime's monitor thread takes its processor away in the middle of a
// call, then goes back to polling every 20 µs, on the core the client
// needs. Yielding now and then keeps the monitor asleep: one sysbench
// thread's point selects went from 16–18k/s to 17–20k/s.
const yieldEvery = 2 * time.Millisecond

// New takes c's socket out of the poller and returns the connection that
// does its I/O from now on, counted in g, or nil (c untouched) when c is
// not a socket it can do that with. On success c is closed.
func New(c net.Conn, g *Group) *Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	f, err := blockingDup(sc)
	if err != nil {
		return nil
	}
	_ = c.Close() // the socket stays open through f
	g.live.Add(1)
	return &Conn{g: g, maxBlocking: int32(max(1, g.PerProc) * runtime.GOMAXPROCS(0)), local: c.LocalAddr(), remote: c.RemoteAddr(), file: f}
}

// blockingDup duplicates sc's descriptor in blocking mode, as a file the
// poller does not watch (os.NewFile registers only non-blocking ones).
func blockingDup(sc syscall.Conn) (*os.File, error) {
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var serr error
	if err := raw.Control(func(fd uintptr) {
		if nfd, serr = syscall.Dup(int(fd)); serr != nil {
			return
		}
		syscall.CloseOnExec(nfd)
		// O_NONBLOCK belongs to the shared open file: sc is closed or
		// unused from here on
		if serr = syscall.SetNonblock(nfd, false); serr != nil {
			syscall.Close(nfd)
			nfd = -1
		}
	}); err != nil {
		if nfd >= 0 {
			syscall.Close(nfd)
		}
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	return os.NewFile(uintptr(nfd), "client"), nil
}

// handle returns what to do the next read or write on, first moving the
// socket into or out of the poller when the count of connections says so
// (reads only: a read is where the connection would wait).
func (d *Conn) handle(read bool) (*os.File, net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, nil, net.ErrClosed
	}
	if read {
		if d.g.live.Load() > d.maxBlocking {
			d.toPoller()
		} else if d.polled != nil && !d.readDeadline && !d.writeDeadline {
			if f, err := blockingDup(d.polled.(syscall.Conn)); err == nil {
				_ = d.polled.Close()
				d.file, d.polled = f, nil
			}
		}
	}
	return d.file, d.polled, nil
}

// toPoller moves the socket into the poller if it is not there; d.mu is
// held. If that fails, it stays read directly.
func (d *Conn) toPoller() {
	if d.file == nil {
		return
	}
	if pc, err := net.FileConn(d.file); err == nil { // dups and registers it
		_ = d.file.Close()
		d.file, d.polled = nil, pc
	}
}

// setDeadline sets the read deadline, the write deadline or both to t; a
// deadline keeps the socket in the poller until it is cleared.
func (d *Conn) setDeadline(read, write bool, t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return net.ErrClosed
	}
	if read {
		d.readDeadline = !t.IsZero()
	}
	if write {
		d.writeDeadline = !t.IsZero()
	}
	if t.IsZero() && d.polled == nil {
		return nil // no deadline to clear on a socket read directly
	}
	d.toPoller()
	if d.polled == nil {
		return errors.New("directio: cannot set a deadline")
	}
	switch {
	case read && write:
		return d.polled.SetDeadline(t)
	case read:
		return d.polled.SetReadDeadline(t)
	}
	return d.polled.SetWriteDeadline(t)
}

// SetDeadline implements net.Conn.
func (d *Conn) SetDeadline(t time.Time) error { return d.setDeadline(true, true, t) }

// SetReadDeadline implements net.Conn.
func (d *Conn) SetReadDeadline(t time.Time) error { return d.setDeadline(true, false, t) }

// SetWriteDeadline implements net.Conn.
func (d *Conn) SetWriteDeadline(t time.Time) error { return d.setDeadline(false, true, t) }

// SetWriteTimeout bounds each write made directly to t: a write(2) that
// cannot finish within it (the peer stopped reading and the send buffer is
// full) fails with EAGAIN. It is the socket's SO_SNDTIMEO, which a
// deadline cannot be on a blocking descriptor without moving the socket
// into the poller. Writes through the poller are bounded by deadlines
// only.
func (d *Conn) SetWriteTimeout(t time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	raw, err := d.raw()
	if err != nil {
		return err
	}
	tv := syscall.NsecToTimeval(t.Nanoseconds())
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptTimeval(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)
	}); err != nil {
		return err
	}
	return serr
}

// SyscallConn implements syscall.Conn: the socket as it is now, read
// directly or through the poller.
func (d *Conn) SyscallConn() (syscall.RawConn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.raw()
}

// raw returns the socket's raw connection; d.mu is held.
func (d *Conn) raw() (syscall.RawConn, error) {
	if d.closed {
		return nil, net.ErrClosed
	}
	if d.file != nil {
		return d.file.SyscallConn()
	}
	sc, ok := d.polled.(syscall.Conn)
	if !ok {
		return nil, errors.New("directio: no socket")
	}
	return sc.SyscallConn()
}

// CloseRead shuts the reading side down: a read blocked on the connection
// returns io.EOF while writes still go out, so that a server can say why
// it ends a connection it was waiting on.
func (d *Conn) CloseRead() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	raw, err := d.raw()
	if err != nil {
		return err
	}
	return shutdown(raw, syscall.SHUT_RD)
}

// shutdown shuts down the socket's side how (syscall.SHUT_RD, ...).
func shutdown(raw syscall.RawConn, how int) error {
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = syscall.Shutdown(int(fd), how) }); err != nil {
		return err
	}
	return serr
}

// SetIdle takes the connection out of its group's count while it sits
// unused (a proxy's pooled backend connection: nothing waits on it) and
// puts it back when it is used again.
func (d *Conn) SetIdle(idle bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.idle == idle {
		return
	}
	d.idle = idle
	if idle {
		d.g.live.Add(-1)
	} else {
		d.g.live.Add(1)
	}
}

// LocalAddr implements net.Conn.
func (d *Conn) LocalAddr() net.Addr { return d.local }

// RemoteAddr implements net.Conn.
func (d *Conn) RemoteAddr() net.Addr { return d.remote }

// Read reads into b.
func (d *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	f, pc, err := d.handle(true)
	switch {
	case err != nil:
		return 0, err
	case pc != nil:
		return pc.Read(b)
	}
	if now := time.Now(); now.Sub(d.yielded) > yieldEvery {
		// see yieldEvery
		d.yielded = now
		runtime.Gosched()
	}
	n, err := f.Read(b)
	return n, unwrapPath(err)
}

// Write writes b whole.
func (d *Conn) Write(b []byte) (int, error) {
	f, pc, err := d.handle(false)
	switch {
	case err != nil:
		return 0, err
	case pc != nil:
		return pc.Write(b)
	}
	n, err := f.Write(b)
	return n, unwrapPath(err)
}

// unwrapPath returns the system error inside an *os.PathError (the file's
// name means nothing here), so errors read as a socket's do.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Close shuts the socket down, which wakes a read blocked on it (closing
// the descriptor alone does not), closes it and stops counting the
// connection. Only the first call does anything.
func (d *Conn) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if !d.idle {
		d.g.live.Add(-1)
	}
	if d.polled != nil {
		return d.polled.Close()
	}
	if raw, err := d.file.SyscallConn(); err == nil {
		_ = shutdown(raw, syscall.SHUT_RDWR)
	}
	return d.file.Close()
}
