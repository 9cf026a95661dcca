package mysqlproto

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
)

// Authentication plugin names.
const (
	NativePassword = "mysql_native_password"
	CachingSha2    = "caching_sha2_password"
)

// Greeting is the server's initial handshake packet (protocol 10).
type Greeting struct {
	ServerVersion string
	ConnectionID  uint32
	// Salt is the 20-byte auth plugin data.
	Salt         []byte
	Capabilities uint32
	Charset      byte
	Status       uint16
	AuthPlugin   string
}

// NewSalt returns 20 random printable bytes (no NUL) for a greeting.
func NewSalt() ([]byte, error) {
	s := make([]byte, 20)
	if _, err := rand.Read(s); err != nil {
		return nil, err
	}
	for i := range s {
		s[i] = s[i]&0x7f | 1
		if s[i] == '$' {
			s[i] = '#'
		}
	}
	return s, nil
}

// AppendGreeting appends g as a HandshakeV10 packet.
func AppendGreeting(b []byte, g Greeting) []byte {
	b = append(b, 10)
	b = append(b, g.ServerVersion...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint32(b, g.ConnectionID)
	salt := g.Salt
	b = append(b, salt[:8]...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(g.Capabilities))
	b = append(b, g.Charset)
	b = binary.LittleEndian.AppendUint16(b, g.Status)
	b = binary.LittleEndian.AppendUint16(b, uint16(g.Capabilities>>16))
	b = append(b, byte(len(salt)+1))
	b = append(b, make([]byte, 10)...)
	b = append(b, salt[8:]...)
	b = append(b, 0)
	b = append(b, g.AuthPlugin...)
	return append(b, 0)
}

// ParseGreeting parses a server's HandshakeV10 packet.
func ParseGreeting(p []byte) (Greeting, error) {
	var g Greeting
	if len(p) < 1 {
		return g, fmt.Errorf("%w: empty greeting", ErrMalformed)
	}
	if p[0] == HeaderErr {
		if e, err := ParseErr(p); err == nil {
			return g, e
		}
	}
	if p[0] != 10 {
		return g, fmt.Errorf("%w: protocol version %d", ErrMalformed, p[0])
	}
	v, pos, ok := ReadNullString(p, 1)
	if !ok || pos+4+8+1+2 > len(p) {
		return g, fmt.Errorf("%w: short greeting", ErrMalformed)
	}
	g.ServerVersion = string(v)
	g.ConnectionID = binary.LittleEndian.Uint32(p[pos:])
	pos += 4
	g.Salt = append([]byte(nil), p[pos:pos+8]...)
	pos += 9
	g.Capabilities = uint32(binary.LittleEndian.Uint16(p[pos:]))
	pos += 2
	if pos+16 > len(p) {
		return g, nil
	}
	g.Charset = p[pos]
	g.Status = binary.LittleEndian.Uint16(p[pos+1:])
	g.Capabilities |= uint32(binary.LittleEndian.Uint16(p[pos+3:])) << 16
	saltLen := int(p[pos+5])
	pos += 16
	if g.Capabilities&CapSecureConnection != 0 {
		n := saltLen - 9
		if n < 12 {
			n = 12
		}
		if pos+n > len(p) {
			return g, fmt.Errorf("%w: short salt", ErrMalformed)
		}
		g.Salt = append(g.Salt, p[pos:pos+n]...)
		pos += n
		if pos < len(p) && p[pos] == 0 {
			pos++
		}
	}
	if g.Capabilities&CapPluginAuth != 0 && pos < len(p) {
		name, _, ok := ReadNullString(p, pos)
		if !ok {
			name = p[pos:]
		}
		g.AuthPlugin = string(name)
	}
	return g, nil
}

// HandshakeResponse is the client's HandshakeResponse41 packet.
type HandshakeResponse struct {
	Capabilities uint32
	MaxPacket    uint32
	Charset      byte
	User         string
	AuthResponse []byte
	Database     string
	AuthPlugin   string
}

// ParseHandshakeResponse parses a client's HandshakeResponse41. A short
// packet carrying only the capabilities with CLIENT_SSL set is an SSL
// request, which the caller answers before: here it is an error.
func ParseHandshakeResponse(p []byte) (HandshakeResponse, error) {
	var h HandshakeResponse
	if len(p) < 32 {
		return h, fmt.Errorf("%w: short handshake response", ErrMalformed)
	}
	h.Capabilities = binary.LittleEndian.Uint32(p)
	if h.Capabilities&CapProtocol41 == 0 {
		return h, fmt.Errorf("%w: client does not speak protocol 4.1", ErrMalformed)
	}
	h.MaxPacket = binary.LittleEndian.Uint32(p[4:])
	h.Charset = p[8]
	pos := 32
	user, pos, ok := ReadNullString(p, pos)
	if !ok {
		if h.Capabilities&CapSSL != 0 {
			return h, fmt.Errorf("%w: TLS was not offered", ErrMalformed)
		}
		return h, fmt.Errorf("%w: user name", ErrMalformed)
	}
	h.User = string(user)
	switch {
	case h.Capabilities&CapPluginAuthLenenc != 0:
		var a []byte
		if a, pos, ok = ReadLenEncString(p, pos); !ok {
			return h, fmt.Errorf("%w: auth response", ErrMalformed)
		}
		h.AuthResponse = append([]byte(nil), a...)
	case h.Capabilities&CapSecureConnection != 0:
		if pos >= len(p) || pos+1+int(p[pos]) > len(p) {
			return h, fmt.Errorf("%w: auth response", ErrMalformed)
		}
		h.AuthResponse = append([]byte(nil), p[pos+1:pos+1+int(p[pos])]...)
		pos += 1 + int(p[pos])
	default:
		var a []byte
		if a, pos, ok = ReadNullString(p, pos); !ok {
			return h, fmt.Errorf("%w: auth response", ErrMalformed)
		}
		h.AuthResponse = append([]byte(nil), a...)
	}
	if h.Capabilities&CapConnectWithDB != 0 && pos < len(p) {
		var db []byte
		if db, pos, ok = ReadNullString(p, pos); !ok {
			return h, fmt.Errorf("%w: database", ErrMalformed)
		}
		h.Database = string(db)
	}
	if h.Capabilities&CapPluginAuth != 0 && pos < len(p) {
		name, _, ok := ReadNullString(p, pos)
		if !ok {
			name = p[pos:]
		}
		h.AuthPlugin = string(name)
	}
	return h, nil
}

// AppendHandshakeResponse appends h as a HandshakeResponse41 packet.
func AppendHandshakeResponse(b []byte, h HandshakeResponse) []byte {
	b = binary.LittleEndian.AppendUint32(b, h.Capabilities)
	b = binary.LittleEndian.AppendUint32(b, h.MaxPacket)
	b = append(b, h.Charset)
	b = append(b, make([]byte, 23)...)
	b = append(b, h.User...)
	b = append(b, 0)
	if h.Capabilities&CapPluginAuthLenenc != 0 {
		b = AppendLenEncString(b, h.AuthResponse)
	} else {
		b = append(b, byte(len(h.AuthResponse)))
		b = append(b, h.AuthResponse...)
	}
	if h.Capabilities&CapConnectWithDB != 0 {
		b = append(b, h.Database...)
		b = append(b, 0)
	}
	if h.Capabilities&CapPluginAuth != 0 {
		b = append(b, h.AuthPlugin...)
		b = append(b, 0)
	}
	return b
}

// ScrambleNative computes the mysql_native_password response:
// SHA1(password) XOR SHA1(salt + SHA1(SHA1(password))). An empty password
// gives an empty response.
func ScrambleNative(salt []byte, password string) []byte {
	if password == "" {
		return nil
	}
	h1 := sha1.Sum([]byte(password))
	h2 := sha1.Sum(h1[:])
	h := sha1.New()
	h.Write(trimSalt(salt))
	h.Write(h2[:])
	h3 := h.Sum(nil)
	for i := range h3 {
		h3[i] ^= h1[i]
	}
	return h3
}

// ScrambleSha2 computes the caching_sha2_password fast-auth response:
// SHA256(password) XOR SHA256(SHA256(SHA256(password)) + salt).
func ScrambleSha2(salt []byte, password string) []byte {
	if password == "" {
		return nil
	}
	h1 := sha256.Sum256([]byte(password))
	h2 := sha256.Sum256(h1[:])
	h := sha256.New()
	h.Write(h2[:])
	h.Write(trimSalt(salt))
	h3 := h.Sum(nil)
	for i := range h3 {
		h3[i] ^= h1[i]
	}
	return h3
}

// CheckSha2 reports whether resp is the caching_sha2_password fast-auth
// response for password under salt.
func CheckSha2(salt, resp []byte, password string) bool {
	want := ScrambleSha2(salt, password)
	if len(want) == 0 {
		return len(resp) == 0
	}
	return subtle.ConstantTimeCompare(want, resp) == 1
}

// CheckNative reports whether resp is the mysql_native_password response
// for password under salt.
func CheckNative(salt, resp []byte, password string) bool {
	want := ScrambleNative(salt, password)
	if len(want) == 0 {
		return len(resp) == 0
	}
	return subtle.ConstantTimeCompare(want, resp) == 1
}

func trimSalt(s []byte) []byte {
	if len(s) > 20 {
		s = s[:20]
	}
	return bytes.TrimRight(s, "\x00")
}

// AppendAuthSwitch appends an AuthSwitchRequest packet.
func AppendAuthSwitch(b []byte, plugin string, salt []byte) []byte {
	b = append(b, HeaderEOF)
	b = append(b, plugin...)
	b = append(b, 0)
	b = append(b, salt...)
	return append(b, 0)
}

// ParseAuthSwitch parses an AuthSwitchRequest packet.
func ParseAuthSwitch(p []byte) (plugin string, data []byte, err error) {
	if len(p) < 1 || p[0] != HeaderEOF {
		return "", nil, fmt.Errorf("%w: auth switch", ErrMalformed)
	}
	name, pos, ok := ReadNullString(p, 1)
	if !ok {
		return string(p[1:]), nil, nil
	}
	return string(name), bytes.TrimRight(p[pos:], "\x00"), nil
}
