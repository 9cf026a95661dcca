package sqlengine

import (
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Direct reads of client commands.
//
// Go reads a socket without blocking and, when nothing is there, parks the
// goroutine until the network poller (epoll) reports the socket readable
// and another thread wakes it. For one client that sends a statement as
// soon as it has the previous answer, that round costs more than the
// statement: on this project's 2-core test machine a single session's
// point select ran at 13.7k/s through the poller and 16.3k/s with the
// connection's thread blocked in recv(2), as MariaDB's
// thread-per-connection server does (oltp_point_select, one thread; two
// threads: 24.3k/s and 30.6k/s). With more sessions than cores, blocked
// threads cost more than the poller saves (16 threads: 35k/s vs 22k/s), so
// a read blocks only while the server has at most GOMAXPROCS client
// connections, and otherwise waits on the poller as before.

// liveDirect counts the open client connections read directly.
var liveDirect atomic.Int32

// directReader reads a client connection's socket, set to blocking mode,
// with recv(2).
type directReader struct {
	raw    syscall.RawConn
	closed atomic.Bool
	// maxBlocking is GOMAXPROCS when the connection was accepted (asking
	// each time takes the scheduler's lock)
	maxBlocking int32
}

// newDirectReader puts c's socket in blocking mode and returns its reader,
// or nil when c is not a socket it can read directly.
func newDirectReader(c net.Conn) *directReader {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil || serr != nil {
		return nil
	}
	liveDirect.Add(1)
	return &directReader{raw: raw, maxBlocking: int32(runtime.GOMAXPROCS(0))}
}

// read reads into b: blocked in recv(2) when there are few connections,
// else without waiting (MSG_DONTWAIT) and through the poller when nothing
// is there yet.
func (d *directReader) read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	flags := uintptr(syscall.MSG_DONTWAIT)
	if liveDirect.Load() <= d.maxBlocking {
		flags = 0
	}
	var n int
	var errno syscall.Errno
	err := d.raw.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), flags, 0, 0)
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait on the poller, then try again
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, errno
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// close wakes a read blocked in recv(2) (closing a socket does not) and
// stops counting the connection; the caller then closes it.
func (d *directReader) close() {
	if d.closed.Swap(true) {
		return
	}
	liveDirect.Add(-1)
	_ = d.raw.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
}
