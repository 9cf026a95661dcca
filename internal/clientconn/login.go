package clientconn

import (
	"crypto/tls"
	"encoding/binary"
	"net"

	"github.com/certusdb/certus/internal/mysqlauth"
)

// The login exchange, which this layer takes part in:
//
//   - TLS. The greeting offers CLIENT_SSL when there is a certificate; a
//     client's SSL request (a 32-byte handshake response with CLIENT_SSL) is
//     answered here with the TLS handshake and not passed on, so the
//     protocol library above reads plaintext and never knows (its own TLS
//     would wrap this layer and hide the packets from it). The client's
//     sequence numbers run one ahead of the library's from then on, until
//     the login ends; this layer shifts them.
//   - require_secure_transport: a handshake response without TLS is
//     answered 3159.
//   - caching_sha2_password's full authentication: the library asks for
//     the password in the clear, which a client sends only over TLS; a
//     client without TLS asks for the server's RSA public key (0x02) and
//     sends the password encrypted with it (RSA-OAEP over the password
//     XORed with the scramble). Both are answered here, and the library
//     gets the password as if over TLS (PasswordChannel says when that is
//     true; a password in the clear without TLS fails to decrypt and is
//     refused with 1045).

// authSwitch starts an AuthSwitchRequest packet.
const authSwitch = 0xfe

var (
	errInsecure = sqlError{mysqlauth.InsecureCode, mysqlauth.InsecureState, mysqlauth.InsecureMsg}
	errDenied   = sqlError{1045, "28000", "Access denied: the password could not be decrypted"}
)

// login is a connection's state until the server accepts its login.
type login struct {
	in  []byte // client bytes read and not yet a whole packet
	out []byte // client packets, rewritten, the server has not read yet
	w   []byte // server bytes written and not yet a whole packet

	shift     byte // packets the client is ahead of the server by
	responded bool // the handshake response went to the server
	salt      []byte
	password  bool // the server asked for the password (FullAuth)
	server    int  // server packets seen
}

// readLogin gives the server the client's login packets, rewritten.
func (c *Conn) readLogin(p []byte) (int, error) {
	l := c.login
	for len(l.out) == 0 {
		if err := c.takeClientPackets(); err != nil {
			return 0, err
		}
		if len(l.out) > 0 || c.login == nil {
			break
		}
		var buf [4096]byte
		n, err := c.io.Read(buf[:])
		l.in = append(l.in, buf[:n]...)
		if n == 0 && err != nil {
			return 0, err
		}
	}
	n := copy(p, l.out)
	l.out = l.out[n:]
	return n, nil
}

// takeClientPackets handles the whole packets in c.login.in.
func (c *Conn) takeClientPackets() error {
	l := c.login
	for len(l.in) >= 4 {
		n := int(l.in[0]) | int(l.in[1])<<8 | int(l.in[2])<<16
		if n > loginPacketLimit {
			return c.refuse(errBadLogin, l.in[3]+1)
		}
		if len(l.in) < 4+n {
			return nil
		}
		pkt := append([]byte(nil), l.in[:4+n]...)
		l.in = l.in[4+n:]
		if err := c.clientPacket(pkt); err != nil {
			return err
		}
	}
	return nil
}

// clientPacket handles one login packet of the client (header included).
func (c *Conn) clientPacket(pkt []byte) error {
	l := c.login
	payload := pkt[4:]
	switch {
	case !l.responded:
		if len(payload) >= 4 {
			c.flags = binary.LittleEndian.Uint32(payload)
		}
		if len(payload) == mysqlauth.SSLRequestLength && c.flags&mysqlauth.ClientSSL != 0 {
			return c.startTLS(pkt[3])
		}
		l.responded = true
		if c.tlsState.Load() == nil && c.l.lim.RequireSecure != nil && c.l.lim.RequireSecure() {
			return c.refuse(errInsecure, pkt[3]+1)
		}
	case l.password:
		l.password = false
		if c.tlsState.Load() != nil {
			break // the password in the clear, over TLS
		}
		key := c.l.lim.RSAKey
		if len(payload) == 1 && payload[0] == mysqlauth.PublicKeyRequest && key != nil {
			l.password = true
			l.shift += 2 // the request and the answer, the server sees neither
			return c.writeRaw(packet(pkt[3]+1, append([]byte{mysqlauth.MoreData}, mysqlauth.PublicKeyPEM(key)...)))
		}
		password, err := mysqlauth.DecryptPassword(key, payload, l.salt)
		if err != nil {
			return c.refuse(errDenied, pkt[3]+1)
		}
		pkt = packet(pkt[3], append(password, 0))
	}
	pkt[3] -= l.shift
	l.out = append(l.out, pkt...)
	return nil
}

// startTLS answers an SSL request with the TLS handshake; what the client
// sent after its request is the handshake's start.
func (c *Conn) startTLS(seq byte) error {
	var cfg *tls.Config
	if c.l.lim.TLS != nil {
		cfg = c.l.lim.TLS()
	}
	if cfg == nil {
		return c.refuse(errBadLogin, seq+1)
	}
	l := c.login
	tc := tls.Server(&prefixConn{Conn: c.io, pre: l.in}, cfg)
	l.in = nil
	if err := tc.Handshake(); err != nil {
		return err // the reaper bounds it by connect_timeout
	}
	st := tc.ConnectionState()
	c.tlsState.Store(&st)
	c.io = tc
	l.shift = 1
	return nil
}

// writeLogin passes the server's login packets to the client, rewritten.
func (c *Conn) writeLogin(p []byte) (int, error) {
	l := c.login
	l.w = append(l.w, p...)
	for len(l.w) >= 4 {
		n := int(l.w[0]) | int(l.w[1])<<8 | int(l.w[2])<<16
		if len(l.w) < 4+n {
			break
		}
		pkt := l.w[:4+n]
		l.w = l.w[4+n:]
		if err := c.serverPacket(pkt); err != nil {
			return 0, err
		}
		if c.login == nil { // logged in: what follows passes through
			if len(l.w) > 0 {
				if err := c.writeRaw(l.w); err != nil {
					return 0, err
				}
			}
			return len(p), nil
		}
	}
	if len(l.w) == 0 {
		l.w = nil
	}
	return len(p), nil
}

// serverPacket handles one login packet of the server (header included).
func (c *Conn) serverPacket(pkt []byte) error {
	l := c.login
	payload := pkt[4:]
	l.server++
	ok := false
	switch {
	case l.server == 1: // the greeting
		l.salt = greetingSalt(payload)
		if c.l.lim.TLS != nil && c.l.lim.TLS() != nil {
			offerTLS(payload)
		}
	case len(payload) == 0:
	case payload[0] == authSwitch:
		if i := indexByte(payload[1:], 0); i >= 0 {
			l.salt = trimNUL(payload[2+i:])
		}
	case payload[0] == mysqlauth.MoreData && len(payload) == 2 && payload[1] == mysqlauth.FullAuth:
		l.password = true
	case payload[0] == 0x00:
		ok = true
	}
	pkt[3] += l.shift
	if ok && c.state.CompareAndSwap(stateLogin, stateLoggedIn) {
		// counted before the client can see its OK: a login it starts
		// next must find this one counted against max_connections
		c.l.loggedIn.Add(1)
	}
	if err := c.writeRaw(pkt); err != nil {
		return err
	}
	if ok {
		c.loggedIn()
	}
	return nil
}

// loggedIn ends the login: the packets pass through from now on.
func (c *Conn) loggedIn() {
	c.carry = c.login.in // a pipelining client's first command
	c.login = nil
}

// PasswordChannel reports whether the protocol library may take a
// password in the clear from the client: over TLS, or decrypted here from
// caching_sha2_password's RSA exchange (which this layer insists on
// without TLS). The server tells the library so by marking the
// connection TLS once it has read the handshake response.
func (c *Conn) PasswordChannel() bool {
	return c.login != nil && c.login.responded || c.state.Load() == stateLoggedIn
}

// TLS is the connection's TLS state, or nil without TLS.
func (c *Conn) TLS() *tls.ConnectionState { return c.tlsState.Load() }

// refuse sends the client e as the packet with sequence number seq and
// returns ErrRefused.
func (c *Conn) refuse(e sqlError, seq byte) error {
	_ = c.writeRaw(e.packet(seq))
	c.l.count("refused: "+e.msg, c.RemoteAddr())
	return ErrRefused
}

// writeRaw writes p to the client as it is.
func (c *Conn) writeRaw(p []byte) error {
	c.begin(opWrite)
	_, err := c.io.Write(p)
	c.end()
	return err
}

// packet frames payload with sequence number seq.
func packet(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// The greeting (HandshakeV10): protocol version, server version
// (NUL-terminated), connection id (4), auth data part 1 (8), filler (1),
// capability flags lower 2 bytes, charset (1), status (2), capability
// flags upper 2 bytes, auth data length (1), reserved (10), auth data
// part 2 (NUL-terminated), plugin name.

// greetingCaps is the offset of the lower capability flags in a greeting,
// or -1.
func greetingCaps(g []byte) int {
	if len(g) < 1 || g[0] != 10 {
		return -1
	}
	i := indexByte(g[1:], 0)
	if i < 0 || 1+i+1+4+8+1+2 > len(g) {
		return -1
	}
	return 1 + i + 1 + 4 + 8 + 1
}

// offerTLS sets CLIENT_SSL in a greeting.
func offerTLS(g []byte) {
	if i := greetingCaps(g); i >= 0 {
		g[i+1] |= mysqlauth.ClientSSL >> 8
	}
}

// greetingSalt is the scramble a greeting carries (20 bytes), or nil.
func greetingSalt(g []byte) []byte {
	i := greetingCaps(g)
	if i < 0 {
		return nil
	}
	part1 := g[i-1-8 : i-1]
	j := i + 2 + 1 + 2 + 2 + 1 + 10
	if j >= len(g) {
		return append([]byte(nil), part1...)
	}
	part2 := g[j:]
	if k := indexByte(part2, 0); k >= 0 {
		part2 = part2[:k]
	}
	return append(append([]byte(nil), part1...), part2...)
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func trimNUL(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return append([]byte(nil), b...)
}

// prefixConn is a connection whose first reads return pre.
type prefixConn struct {
	net.Conn
	pre []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.pre) > 0 {
		n := copy(b, p.pre)
		p.pre = p.pre[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
