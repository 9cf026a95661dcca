package directio

import (
	"errors"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// acceptPair returns a client connection and the server's Conn of it.
func acceptPair(t *testing.T, l net.Listener, g *Group) (net.Conn, *Conn) {
	t.Helper()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	d := New(sc, g)
	if d == nil {
		t.Fatal("a TCP connection cannot be read directly")
	}
	if d.RemoteAddr().String() != client.LocalAddr().String() {
		t.Fatalf("remote address %s, want %s", d.RemoteAddr(), client.LocalAddr())
	}
	t.Cleanup(func() { client.Close(); d.Close() })
	return client, d
}

// ioMode says whether d's socket is read directly or through the poller.
func ioMode(d *Conn) string {
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
func pong(t *testing.T, server *Conn, client net.Conn) {
	t.Helper()
	if _, err := server.Write([]byte("pong")); err != nil {
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
	l := ln
	g := &Group{PerProc: 1}

	for _, conns := range []int{1, runtime.GOMAXPROCS(0) + 2} {
		clients := make([]net.Conn, conns)
		servers := make([]*Conn, conns)
		for i := range clients {
			clients[i], servers[i] = acceptPair(t, l, g)
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
		if got := g.Live(); got != 0 {
			t.Fatalf("%d connections open after closing all, want 0", got)
		}
	}

	// a connection moves into the poller while there are many, and out of
	// it again once the others have gone
	many := runtime.GOMAXPROCS(0) + 2
	clients := make([]net.Conn, many)
	servers := make([]*Conn, many)
	for i := range clients {
		clients[i], servers[i] = acceptPair(t, l, g)
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
	_, server := acceptPair(t, l, g)
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
	if got := g.Live(); got != 0 {
		t.Fatalf("%d connections open after closing all, want 0", got)
	}
}

// TestDeadlines checks that a deadline moves a connection read directly
// into the poller, times a read out there, and that once cleared the
// connection is read directly again.
func TestDeadlines(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	g := &Group{PerProc: 1}
	client, server := acceptPair(t, ln, g)
	if err := server.SetDeadline(time.Time{}); err != nil {
		t.Fatalf("clearing no deadline: %v", err)
	}
	if got := ioMode(server); got != "direct" {
		t.Fatalf("the connection is %s before any deadline, want direct", got)
	}
	if err := server.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = server.Read(make([]byte, 4))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the read timed out after %s", d)
	}
	if got := ioMode(server); got != "polled" {
		t.Fatalf("the connection is %s with a deadline, want polled", got)
	}
	if err := server.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(server, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if got := ioMode(server); got != "direct" {
		t.Fatalf("the connection is %s after the deadline was cleared, want direct", got)
	}
	pong(t, server, client)
}

// TestWriteTimeout checks that a direct write to a peer that stopped
// reading fails after the write timeout and leaves the connection direct.
func TestWriteTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, server := acceptPair(t, ln, &Group{PerProc: 1})
	const timeout = 100 * time.Millisecond
	if err := server.SetWriteTimeout(timeout); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	start := time.Now()
	for written := 0; ; written += len(chunk) {
		if _, err = server.Write(chunk); err != nil {
			break
		}
		if written > 256<<20 {
			t.Fatal("256 MiB written to a peer that reads nothing")
		}
	}
	if !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("write to a full socket: %v, want EAGAIN", err)
	}
	if d := time.Since(start); d < timeout || d > 5*time.Second {
		t.Fatalf("the write failed after %s, want about %s", d, timeout)
	}
	if got := ioMode(server); got != "direct" {
		t.Fatalf("the connection is %s after a write timeout, want direct", got)
	}
}

// TestCloseRead checks that CloseRead from another goroutine wakes a read
// blocked on the connection, read directly or through the poller, and that
// writes still reach the peer.
func TestCloseRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, mode := range []string{"direct", "polled"} {
		g := &Group{PerProc: 1}
		if mode == "polled" {
			g.live.Add(int32(runtime.GOMAXPROCS(0))) // as many others open
		}
		client, server := acceptPair(t, ln, g)
		go func() {
			time.Sleep(20 * time.Millisecond) // the server reads first and waits
			_ = server.CloseRead()
		}()
		if n, err := server.Read(make([]byte, 16)); n != 0 || err != io.EOF {
			t.Fatalf("%s: read after CloseRead: %d, %v; want io.EOF", mode, n, err)
		}
		if got := ioMode(server); got != mode {
			t.Fatalf("the connection is %s, want %s", got, mode)
		}
		pong(t, server, client)
	}
}

// TestIdle checks that an idle connection leaves its group's count, comes
// back when used again, and that closing an idle one counts nothing twice.
func TestIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	g := &Group{PerProc: 1}
	_, a := acceptPair(t, ln, g)
	_, b := acceptPair(t, ln, g)
	if g.Live() != 2 {
		t.Fatalf("%d connections counted, want 2", g.Live())
	}
	a.SetIdle(true)
	a.SetIdle(true)
	if g.Live() != 1 {
		t.Fatalf("%d counted with one idle, want 1", g.Live())
	}
	a.SetIdle(false)
	if g.Live() != 2 {
		t.Fatalf("%d counted after the idle one was used again, want 2", g.Live())
	}
	b.SetIdle(true)
	b.Close()
	a.Close()
	if g.Live() != 0 {
		t.Fatalf("%d counted after closing both, want 0", g.Live())
	}
}
