//go:build !linux

package directio

import (
	"net"
	"time"
)

// Group counts a kind of connection (see the Linux version).
type Group struct {
	// PerProc is how many open connections per GOMAXPROCS may be read
	// directly.
	PerProc int
}

// Live is the number of the group's open connections: none elsewhere.
func (g *Group) Live() int { return 0 }

// Conn is Linux-only; elsewhere every connection uses Go's poller.
type Conn struct{ net.Conn }

// SetIdle does nothing elsewhere.
func (d *Conn) SetIdle(bool) {}

// SetWriteTimeout does nothing elsewhere.
func (d *Conn) SetWriteTimeout(time.Duration) error { return nil }

// New returns nil: c keeps using Go's poller.
func New(net.Conn, *Group) *Conn { return nil }
