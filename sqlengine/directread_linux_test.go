package sqlengine

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// acceptPair returns a client connection and the server's trackConn of it.
func acceptPair(t *testing.T, l trackListener) (net.Conn, *trackConn) {
	t.Helper()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	tc := sc.(*trackConn)
	if _, ok := tc.io.(*directConn); !ok {
		t.Fatal("a TCP client connection is not read directly")
	}
	t.Cleanup(func() { client.Close(); tc.Close() })
	return client, tc
}

// ioMode says whether tc's socket is read directly or through the poller.
func ioMode(tc *trackConn) string {
	d := tc.io.(*directConn)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.file != nil:
		return "direct"
	case d.polled != nil:
		return "polled"
	}
	return "none"
}

// pong writes an answer on the server side and reads it on the client.
func pong(t *testing.T, server *trackConn, client net.Conn) {
	t.Helper()
	if _, err := server.io.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(client, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("client read %q, %v", buf, err)
	}
}

// TestDirectRead reads client data both ways (blocked in recv with few
// connections, through the poller with more than GOMAXPROCS), checks that
// closing a connection wakes a read blocked on it, and that the count of
// connections goes back down.
func TestDirectRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	l := trackListener{Listener: ln}
	base := liveDirect.Load()

	for _, conns := range []int{1, runtime.GOMAXPROCS(0) + 2} {
		clients := make([]net.Conn, conns)
		servers := make([]*trackConn, conns)
		for i := range clients {
			clients[i], servers[i] = acceptPair(t, l)
		}
		for i := range clients {
			go func(c net.Conn) {
				time.Sleep(20 * time.Millisecond) // the server reads first and waits
				_, _ = c.Write([]byte("ping"))
			}(clients[i])
			buf := make([]byte, 16)
			n, err := servers[i].Read(buf)
			if err != nil || string(buf[:n]) != "ping" {
				t.Fatalf("%d connections: read %q, %v", conns, buf[:n], err)
			}
			if n, err := servers[i].Read(buf[:0]); n != 0 || err != nil {
				t.Fatalf("empty read: %d, %v", n, err)
			}
			if got, want := ioMode(servers[i]), map[bool]string{true: "direct", false: "polled"}[conns == 1]; got != want {
				t.Fatalf("%d connections: the connection is %s, want %s", conns, got, want)
			}
			pong(t, servers[i], clients[i])
		}
		for i := range clients {
			clients[i].Close()
			n, err := servers[i].Read(make([]byte, 16))
			if err == nil || n != 0 {
				t.Fatalf("read after the client closed: %d, %v", n, err)
			}
			servers[i].Close()
		}
		if got := liveDirect.Load(); got != base {
			t.Fatalf("%d connections open after closing all, want %d", got, base)
		}
	}

	// a connection moves into the poller while there are many, and out of
	// it again once the others have gone
	many := runtime.GOMAXPROCS(0) + 2
	clients := make([]net.Conn, many)
	servers := make([]*trackConn, many)
	for i := range clients {
		clients[i], servers[i] = acceptPair(t, l)
	}
	for _, want := range []string{"polled", "direct"} {
		if want == "direct" {
			for i := 1; i < many; i++ {
				servers[i].Close()
			}
		}
		if _, err := clients[0].Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(servers[0], buf); err != nil || string(buf) != "ping" {
			t.Fatalf("read %q, %v", buf, err)
		}
		if got := ioMode(servers[0]); got != want {
			t.Fatalf("the connection is %s, want %s", got, want)
		}
		pong(t, servers[0], clients[0])
	}
	servers[0].Close()

	// a read blocked in recv(2) returns when another goroutine closes the
	// connection (KILL, wsrep_reject_queries=ALL_KILL, shutdown)
	_, server := acceptPair(t, l)
	done := make(chan error, 1)
	go func() {
		_, err := server.Read(make([]byte, 16))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	server.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a read on a closed connection succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing the connection did not wake its blocked read")
	}
	server.Close() // a second close counts nothing
	if got := liveDirect.Load(); got != base {
		t.Fatalf("%d connections open after closing all, want %d", got, base)
	}
}
