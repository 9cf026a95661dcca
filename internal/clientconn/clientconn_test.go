package clientconn

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// limits returns test limits with max_connections max and the given
// login and idle timeouts.
func limits(max int, login, idle time.Duration, packet int) Limits {
	return Limits{
		MaxConnections: func() int { return max },
		ConnectTimeout: func() time.Duration { return login },
		MaxPacket:      func() int { return packet },
		IdleTimeout:    func() time.Duration { return idle },
		ReadTimeout:    func() time.Duration { return time.Minute },
		WriteTimeout:   func() time.Duration { return time.Minute },
	}
}

// server listens on loopback with lim and hands each accepted connection
// to serve.
func server(t *testing.T, lim Limits, serve func(*Conn)) *Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(ln, lim, nil)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c.(*Conn))
		}
	}()
	return l
}

// okPacket is an OK packet's payload.
var okPacket = []byte{0, 0, 0, 2, 0, 0, 0}

// greetAndLogin plays the server's side of a login: a greeting, the
// client's response read, then an OK packet; then it answers each packet
// with an OK packet, until an error.
func greetAndLogin(c *Conn) {
	defer c.Close()
	if _, err := c.Write(packet(0, []byte{10, 'v', 0})); err != nil {
		return
	}
	for seq := byte(2); ; seq = 1 {
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
			return
		}
		if _, err := c.Write(packet(seq, okPacket)); err != nil {
			return
		}
	}
}

func dial(t *testing.T, l *Listener) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// readPacket reads one packet from c.
func readPacket(t *testing.T, c net.Conn) []byte {
	t.Helper()
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		t.Fatalf("reading a packet header: %v", err)
	}
	p := make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)
	if _, err := io.ReadFull(c, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// logIn completes a login on c (the greeting, a response, the OK).
func logIn(t *testing.T, c net.Conn) {
	t.Helper()
	readPacket(t, c)
	respond(t, c)
}

// respond sends a handshake response on c, greeted already, and reads the
// OK.
func respond(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := c.Write(packet(1, make([]byte, 32))); err != nil {
		t.Fatal(err)
	}
	if ok := readPacket(t, c); ok[0] != 0 {
		t.Fatalf("login answered %x, want an OK packet", ok)
	}
}

// wantError reads packets from c up to an ERR packet, which must have
// code.
func wantError(t *testing.T, c net.Conn, code uint16) {
	t.Helper()
	p := readPacket(t, c)
	for p[0] == 0 {
		p = readPacket(t, c)
	}
	if p[0] != 0xff || uint16(p[1])|uint16(p[2])<<8 != code {
		t.Fatalf("got %q, want error %d", p, code)
	}
}

// wantClosed waits for the server to close c.
func wantClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, err := c.Read(make([]byte, 1024))
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || err != nil && !isTimeout(err) {
			return
		}
		if isTimeout(err) {
			t.Fatal("the server did not close the connection")
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A login packet larger than loginPacketLimit is refused from its header
// (1043), before its bytes arrive.
func TestLoginPacketLimit(t *testing.T) {
	l := server(t, limits(10, time.Minute, time.Minute, 1<<20), greetAndLogin)
	c := dial(t, l)
	readPacket(t, c)
	n := 16<<20 - 1
	if _, err := c.Write([]byte{byte(n), byte(n >> 8), byte(n >> 16), 1, 'x'}); err != nil {
		t.Fatal(err)
	}
	wantError(t, c, errBadLogin.code)
	wantClosed(t, c)
}

// After login a logical packet over max_allowed_packet is refused with
// 1153, also when it is split into 16 MiB parts.
func TestMaxPacket(t *testing.T) {
	const limit = 20 << 20
	l := server(t, limits(10, time.Minute, time.Minute, limit), greetAndLogin)

	c := dial(t, l)
	logIn(t, c)
	small := packet(0, bytes.Repeat([]byte("a"), 1000))
	if _, err := c.Write(small); err != nil {
		t.Fatal(err)
	}
	if got := readPacket(t, c); got[0] != 0 {
		t.Fatalf("answered %q", got)
	}
	// a first part of 16 MiB - 1 passes (the server reads it), the
	// continuation that takes the packet past the limit is refused
	first := packet(0, make([]byte, maxPayload))
	if _, err := c.Write(first); err != nil {
		t.Fatal(err)
	}
	n := 5 << 20
	if _, err := c.Write([]byte{byte(n), byte(n >> 8), byte(n >> 16), 1}); err != nil {
		t.Fatal(err)
	}
	wantError(t, c, errPacketLarge.code)
	wantClosed(t, c)
}

// Connections past max_connections + 1 logged in are answered 1040; one
// more logging in than max_connections closes the oldest login.
func TestMaxConnections(t *testing.T) {
	l := server(t, limits(2, time.Minute, time.Minute, 1<<20), greetAndLogin)

	var in []net.Conn
	for range 3 { // two, and the one for an administrator
		c := dial(t, l)
		logIn(t, c)
		in = append(in, c)
	}
	wantError(t, dial(t, l), errTooMany.code)
	if got := l.LoggedIn(); got != 3 {
		t.Fatalf("LoggedIn = %d, want 3", got)
	}
	in[0].Close()
	in[1].Close()
	deadline := time.Now().Add(10 * time.Second)
	for l.LoggedIn() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}

	idle1, idle2 := dial(t, l), dial(t, l) // connect and send nothing
	readPacket(t, idle1)
	readPacket(t, idle2)
	logIn(t, dial(t, l))
	wantClosed(t, idle1) // the oldest login made room
	respond(t, idle2)
}

// A login that does not finish within connect_timeout is closed, however
// its bytes trickle in; a logged-in connection idle past its wait_timeout
// is closed too, one that keeps talking is not.
func TestTimeouts(t *testing.T) {
	l := server(t, limits(10, 600*time.Millisecond, 900*time.Millisecond, 1<<20), greetAndLogin)

	slow := dial(t, l)
	readPacket(t, slow)
	go func() {
		for range 20 {
			if _, err := slow.Write([]byte{1}); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	wantClosed(t, slow)

	busy, idle := dial(t, l), dial(t, l)
	logIn(t, busy)
	logIn(t, idle)
	for range 8 {
		time.Sleep(250 * time.Millisecond)
		if _, err := busy.Write(packet(0, []byte{3, 'x'})); err != nil {
			t.Fatal(err)
		}
		readPacket(t, busy)
	}
	wantClosed(t, idle)
}

// A connection's own idle timeout replaces the listener's.
func TestSetIdleTimeout(t *testing.T) {
	l := server(t, limits(10, time.Minute, time.Hour, 1<<20), func(c *Conn) {
		c.SetIdleTimeout(300 * time.Millisecond)
		greetAndLogin(c)
	})
	c := dial(t, l)
	logIn(t, c)
	wantClosed(t, c)
}

// The client's capability flags say whether it is interactive.
func TestInteractive(t *testing.T) {
	got := make(chan bool, 1)
	l := server(t, limits(10, time.Minute, time.Minute, 1<<20), func(c *Conn) {
		defer c.Close()
		_, _ = c.Write(packet(0, []byte{10, 'v', 0}))
		buf := make([]byte, 100)
		_, _ = io.ReadAtLeast(c, buf, 8)
		got <- c.Interactive()
	})
	c := dial(t, l)
	readPacket(t, c)
	resp := make([]byte, 32)
	resp[1] = clientInteractive >> 8
	if _, err := c.Write(packet(1, resp)); err != nil {
		t.Fatal(err)
	}
	if !<-got {
		t.Fatal("Interactive() = false for CLIENT_INTERACTIVE")
	}
}
