package sqlengine

import (
	"encoding/binary"
	"net"
	"sync"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/certusdb/certus/internal/clientconn"
	"github.com/certusdb/certus/internal/comrefresh"
	"github.com/certusdb/certus/internal/comstatistics"
	"github.com/certusdb/certus/internal/directio"
)

// Session-state tracking of GTIDs in OK packets.
//
// The MySQL protocol lets an OK packet carry session state changes; with
// session_track_gtids=OWN_GTID a client (or a proxy) learns the GTID of the
// transaction it just committed from the OK packet itself, with no extra
// round trip. The protocol library Certus uses does not implement the
// server side of CLIENT_SESSION_TRACK, so a thin filter over each TCP
// connection does: it advertises the capability in the server greeting,
// notes whether the client asked for it, and rewrites the one OK packet of
// a command that committed a write-set to carry its GTID. The handler
// clears the free-text "info" of OK packets for such clients, since with
// session tracking that field changes encoding.

const (
	capSessionTrack           = 1 << 23
	statusSessionChanged      = 0x4000
	sessionTrackGTIDs    byte = 0x03
)

// trackListener wraps accepted connections in trackConn.
type trackListener struct {
	net.Listener
	// accepted runs before a new connection's handshake (which
	// authenticates the user).
	accepted func()
	// statistics answers COM_STATISTICS (nil: the command goes to the
	// protocol library, which refuses it).
	statistics func() string
}

func (l trackListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.accepted != nil {
		l.accepted()
	}
	return &trackConn{Conn: c, stats: l.statistics}, nil
}

// clientConns are the server's client connections: each has a goroutine
// waiting on it, so they are read directly while there are at most
// GOMAXPROCS of them (the listener of internal/clientconn does it).
var clientConns = directio.Group{PerProc: 1}

// trackConn is the packet filter of one client connection.
type trackConn struct {
	net.Conn // the accepted connection
	// vconn is the protocol library's connection over this one (see
	// RemoteAddr); protected marks it told the password channel is safe
	vconn     *mysql.Conn
	protected bool

	mu       sync.Mutex
	greeted  bool   // the server greeting went out (with the capability added)
	hdr      []byte // partial packet header being written
	pkt      []byte // a packet being captured (greeting or OK to rewrite)
	capture  bool
	left     int    // bytes of the current packet still to pass through
	pending  string // GTID for the next packet, if it is an OK packet
	tracking bool   // the client negotiated CLIENT_SESSION_TRACK

	respSeen bool
	resp     []byte // the client's handshake response, until its flags are known

	// The client's packets, followed to find where each begins: rhdr is a
	// partial header, rleft the payload bytes of the current packet still
	// to come. A COM_STATISTICS packet is answered here with stats and
	// not passed on; a COM_REFRESH becomes the COM_QUERY of its FLUSH
	// statement. rpend is what the server has not read yet of a packet
	// made longer that way.
	stats func() string
	rhdr  []byte
	rleft int
	rpend []byte

	// wbuf holds what was written since the connection last read: the
	// packets of one response (a prepare's OK, parameter and column
	// definitions, EOFs) go out in one write instead of one each.
	wbuf []byte
	werr error // the error of the last flush, returned by every later call
}

// flushAt is the size at which buffered output goes out without waiting
// for the next read.
const flushAt = 64 << 10

// flush writes the buffered output; c.mu is held.
func (c *trackConn) flush() error {
	if c.werr != nil {
		return c.werr
	}
	if len(c.wbuf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.wbuf)
	c.wbuf = c.wbuf[:0]
	if cap(c.wbuf) > 4*flushAt {
		c.wbuf = nil
	}
	c.werr = err
	return err
}

// Close sends what is buffered and closes the connection.
func (c *trackConn) Close() error {
	c.mu.Lock()
	_ = c.flush()
	c.mu.Unlock()
	return c.Conn.Close()
}

// Tracking reports whether the client negotiated session tracking.
func (c *trackConn) Tracking() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tracking
}

// AttachGTID makes the next packet written, if it is an OK packet, carry
// gtid as session state.
func (c *trackConn) AttachGTID(gtid string) {
	c.mu.Lock()
	c.pending = gtid
	c.mu.Unlock()
}

// Read passes data through, noting the client's capabilities from its
// handshake response and answering COM_STATISTICS itself.
func (c *trackConn) Read(b []byte) (int, error) {
	for {
		c.mu.Lock()
		if len(c.rpend) > 0 {
			n := copy(b, c.rpend)
			c.rpend = c.rpend[n:]
			c.mu.Unlock()
			return n, nil
		}
		ferr := c.flush() // the response is complete: the server waits for the next command
		c.mu.Unlock()
		if ferr != nil {
			return 0, ferr
		}
		n, err := c.Conn.Read(b)
		if n > 0 {
			c.mu.Lock()
			if !c.respSeen {
				c.resp = append(c.resp, b[:n]...)
				if len(c.resp) >= 8 {
					flags := binary.LittleEndian.Uint32(c.resp[4:8])
					c.tracking = flags&capSessionTrack != 0
					c.respSeen, c.resp = true, nil
				}
			}
			pass := c.filterRead(b[:n])
			n = copy(b, pass)
			c.rpend = append(c.rpend, pass[n:]...)
			c.mu.Unlock()
		}
		if n > 0 || err != nil {
			return n, err
		}
		// everything read was answered here: wait for the next command
	}
}

// filterRead follows the client's packets through p and returns what the
// server is to read of it. A command that p holds whole with nothing before
// it (a client sends these alone and waits for the answer; the server has
// answered every earlier command, since it reads only when it needs the
// next one) is handled here: COM_STATISTICS is removed and its answer
// queued, COM_REFRESH replaced by the COM_QUERY of its FLUSH statement.
// c.mu is held.
func (c *trackConn) filterRead(p []byte) []byte {
	out := p[:0] // what is kept, moved down in place until a packet grows
	for i := 0; i < len(p); {
		if c.rleft > 0 {
			k := min(c.rleft, len(p)-i)
			out = append(out, p[i:i+k]...)
			c.rleft -= k
			i += k
			continue
		}
		if len(c.rhdr) == 0 && len(out) == 0 && c.stats != nil && len(p)-i >= 5 &&
			p[i] == 1 && p[i+1] == 0 && p[i+2] == 0 && p[i+3] == 0 && p[i+4] == comstatistics.Command {
			answer := c.stats()
			c.wbuf = append(c.wbuf, byte(len(answer)), byte(len(answer)>>8), byte(len(answer)>>16), 1)
			c.wbuf = append(c.wbuf, answer...)
			i += 5
			continue
		}
		if len(c.rhdr) == 0 && len(out) == 0 && len(p)-i >= 6 &&
			p[i] == 2 && p[i+1] == 0 && p[i+2] == 0 && p[i+3] == 0 && p[i+4] == comrefresh.Command {
			q := comrefresh.Statement(p[i+5])
			grown := make([]byte, 0, 5+len(q)+len(p)-i-6)
			grown = append(grown, byte(len(q)+1), byte((len(q)+1)>>8), 0, 0, mysql.ComQuery)
			out = append(grown, q...) // no longer in p: what follows is copied
			i += 6
			continue
		}
		k := min(4-len(c.rhdr), len(p)-i)
		c.rhdr = append(c.rhdr, p[i:i+k]...)
		out = append(out, p[i:i+k]...)
		i += k
		if len(c.rhdr) == 4 {
			c.rleft = int(c.rhdr[0]) | int(c.rhdr[1])<<8 | int(c.rhdr[2])<<16
			c.rhdr = c.rhdr[:0]
		}
	}
	return out
}

// Write parses packet boundaries and rewrites the greeting and tagged OK
// packets; everything else passes through unchanged. Output is buffered
// until the server reads again (see wbuf).
func (c *trackConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.werr != nil {
		return 0, c.werr
	}
	total := len(b)
	out := c.wbuf
	for len(b) > 0 {
		if c.left > 0 {
			n := min(c.left, len(b))
			if c.capture {
				c.pkt = append(c.pkt, b[:n]...)
			} else {
				out = append(out, b[:n]...)
			}
			c.left -= n
			b = b[n:]
			if c.left == 0 && c.capture {
				out = append(out, c.rewrite(c.pkt)...)
				c.pkt, c.capture = nil, false
			}
			continue
		}
		need := 4 - len(c.hdr)
		n := min(need, len(b))
		c.hdr = append(c.hdr, b[:n]...)
		b = b[n:]
		if len(c.hdr) < 4 {
			continue
		}
		length := int(c.hdr[0]) | int(c.hdr[1])<<8 | int(c.hdr[2])<<16
		c.capture = !c.greeted || c.pending != ""
		if c.capture {
			c.pkt = append(c.pkt[:0], c.hdr...)
		} else {
			out = append(out, c.hdr...)
		}
		c.hdr = c.hdr[:0]
		c.left = length
		if length == 0 && c.capture {
			out = append(out, c.rewrite(c.pkt)...)
			c.pkt, c.capture = nil, false
		}
	}
	c.wbuf = out
	if len(c.wbuf) >= flushAt {
		if err := c.flush(); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// rewrite returns the packet to send in place of the captured pkt
// (header included).
func (c *trackConn) rewrite(pkt []byte) []byte {
	if !c.greeted {
		c.greeted = true
		return addSessionTrackCapability(pkt)
	}
	gtid := c.pending
	c.pending = ""
	if !c.tracking || len(pkt) < 5 || pkt[4] != mysql.OKPacket {
		return pkt
	}
	return okWithGTID(pkt, gtid)
}

// addSessionTrackCapability sets CLIENT_SESSION_TRACK in a HandshakeV10
// greeting.
func addSessionTrackCapability(pkt []byte) []byte {
	p := pkt[4:]
	// protocol version, server version (NUL-terminated), connection id (4),
	// auth data part 1 (8), filler (1), capability flags lower 2 bytes,
	// charset (1), status (2), capability flags upper 2 bytes
	if len(p) < 1 || p[0] != 10 {
		return pkt
	}
	i := 1
	for i < len(p) && p[i] != 0 {
		i++
	}
	i += 1 + 4 + 8 + 1 + 2 + 1 + 2
	if i+2 > len(p) {
		return pkt
	}
	upper := binary.LittleEndian.Uint16(p[i : i+2])
	binary.LittleEndian.PutUint16(p[i:i+2], upper|capSessionTrack>>16)
	return pkt
}

// okWithGTID rebuilds an OK packet with SERVER_SESSION_STATE_CHANGED and a
// session-state block holding the GTID. The original must end after its
// warnings count (the handler clears the info of tracking clients).
func okWithGTID(pkt []byte, gtid string) []byte {
	p := pkt[4:]
	i := 1
	for k := 0; k < 2; k++ { // affected rows, last insert id
		n := lenEncSize(p[i:])
		if n == 0 {
			return pkt
		}
		i += n
	}
	if i+4 > len(p) {
		return pkt
	}
	status := binary.LittleEndian.Uint16(p[i:i+2]) | statusSessionChanged
	body := append([]byte{}, p[:i]...)
	body = binary.LittleEndian.AppendUint16(body, status)
	body = append(body, p[i+2:i+4]...) // warnings
	body = append(body, 0)             // info: empty
	var entry []byte
	entry = append(entry, 0) // encoding specification
	entry = appendLenEnc(entry, []byte(gtid))
	var state []byte
	state = append(state, sessionTrackGTIDs)
	state = appendLenEnc(state, entry)
	body = appendLenEnc(body, state)
	out := make([]byte, 4, 4+len(body))
	out[0], out[1], out[2], out[3] = byte(len(body)), byte(len(body)>>8), byte(len(body)>>16), pkt[3]
	return append(out, body...)
}

// lenEncSize is the size of the length-encoded integer at the start of b
// (0 if malformed).
func lenEncSize(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] {
	case 0xfc:
		return boundSize(b, 3)
	case 0xfd:
		return boundSize(b, 4)
	case 0xfe:
		return boundSize(b, 9)
	}
	return 1
}

func boundSize(b []byte, n int) int {
	if len(b) < n {
		return 0
	}
	return n
}

func appendLenEnc(dst, s []byte) []byte {
	n := len(s)
	switch {
	case n < 251:
		dst = append(dst, byte(n))
	case n < 1<<16:
		dst = append(dst, 0xfc, byte(n), byte(n>>8))
	default:
		dst = append(dst, 0xfd, byte(n), byte(n>>8), byte(n>>16))
	}
	return append(dst, s...)
}

// RemoteAddr implements net.Conn. The protocol library asks it once in a
// login, right before it authenticates the user, which is where it is
// told that the client's password may come in the clear:
// caching_sha2_password's full authentication is allowed only over TLS,
// and the library cannot see the TLS internal/clientconn does below it
// (nor the RSA exchange clientconn does without TLS). clientconn reports
// when the password channel is protected; the library's connection is
// then marked TLS, which it reads only to decide that (a user's REQUIRE
// SSL is checked against clientconn's own state: Handler.admitted).
func (c *trackConn) RemoteAddr() net.Addr {
	if c.vconn != nil && !c.protected {
		if g, ok := c.Conn.(*clientconn.Conn); ok && g.PasswordChannel() {
			c.vconn.Capabilities |= mysql.CapabilityClientSSL
			c.protected = true
		}
	}
	return c.Conn.RemoteAddr()
}

// trackConnOf returns the filter of a protocol connection, if any.
func trackConnOf(c *mysql.Conn) *trackConn {
	tc, _ := c.Conn.(*trackConn)
	return tc
}
