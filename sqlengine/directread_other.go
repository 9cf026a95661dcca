//go:build !linux

package sqlengine

import "net"

// directConn is Linux-only; elsewhere every connection uses Go's poller.
type directConn struct{ net.Conn }

func newDirectConn(net.Conn) *directConn { return nil }
