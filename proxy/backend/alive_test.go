package backend

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/directio"
	"github.com/certusdb/certus/proxy/mysqlproto"
)

// TestAlive: an idle connection is alive until the node sends something
// on it or closes it, read directly or through the poller.
func TestAlive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the check peeks at Linux sockets only")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pair := func(direct bool) (*Conn, net.Conn) {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		node, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if direct {
			nc = directio.New(nc, &directio.Group{PerProc: 1})
		}
		c := &Conn{pc: mysqlproto.NewConn(nc), raw: nc}
		t.Cleanup(func() { c.Close(); node.Close() })
		return c, node
	}
	// eventually waits for what the node did to reach the proxy's socket
	eventually := func(c *Conn, what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); c.alive(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("alive after the node %s", what)
			}
		}
	}
	for _, direct := range []bool{true, false} {
		c, node := pair(direct)
		if !c.alive() {
			t.Fatal("an open, quiet connection is not alive")
		}
		_, _ = node.Write([]byte{7, 0, 0, 0, 0xff})
		eventually(c, "sent a packet")
		c, node = pair(direct)
		node.Close()
		eventually(c, "closed it")
	}
}
