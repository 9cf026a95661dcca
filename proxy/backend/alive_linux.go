package backend

import (
	"net"
	"syscall"
)

// peerQuiet reports whether nothing waits to be read on nc, neither bytes
// nor the end of the stream nor an error: one non-blocking peek.
func peerQuiet(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var b [1]byte
	var perr error
	if err := raw.Control(func(fd uintptr) {
		_, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}); err != nil {
		return false
	}
	return perr == syscall.EAGAIN
}
