//go:build !linux

package replication

import "syscall"

// peerControl does nothing where TCP_USER_TIMEOUT is not available: a
// cut-off peer's connection then ends when TCP's retransmissions give up.
func peerControl(_, _ string, _ syscall.RawConn) error { return nil }
