package replication

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// peerControl sets TCP_USER_TIMEOUT on a peer connection's socket: data
// the peer has not acknowledged for peerDeadAfter makes the kernel drop
// the connection (see peerDeadAfter).
func peerControl(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(peerDeadAfter/time.Millisecond))
	})
	if err != nil {
		return err
	}
	return serr
}
