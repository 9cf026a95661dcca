package clientconn

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/mysqlauth"
)

// selfSigned is a TLS configuration with a fresh self-signed certificate.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

// testSalt is the scramble of fullAuthServer's greeting.
var testSalt = []byte("0123456789abcdefghij")

// fullAuthServer plays the protocol library's side of a
// caching_sha2_password login that needs the password: a greeting, the
// handshake response read, a request for the password, the password read
// (it must be want), an OK; then it answers each packet with an OK.
func fullAuthServer(want string) func(*Conn) {
	return func(c *Conn) {
		defer c.Close()
		g := []byte{10}
		g = append(g, "8.0.31\x00"...)
		g = append(g, 1, 0, 0, 0)
		g = append(g, testSalt[:8]...)
		g = append(g, 0, 0xff, 0xf7, 33, 2, 0, 0xff, 0xdf, 21)
		g = append(g, make([]byte, 10)...)
		g = append(g, testSalt[8:]...)
		g = append(g, 0)
		g = append(g, "caching_sha2_password\x00"...)
		if _, err := c.Write(packet(0, g)); err != nil {
			return
		}
		if _, err := readServerPacket(c); err != nil { // the handshake response
			return
		}
		if _, err := c.Write(packet(2, []byte{mysqlauth.MoreData, mysqlauth.FullAuth})); err != nil {
			return
		}
		pw, err := readServerPacket(c)
		if err != nil {
			return
		}
		if string(pw[4:]) != want+"\x00" || pw[3] != 3 {
			_, _ = c.Write(errDenied.packet(pw[3] + 1))
			return
		}
		for seq := byte(4); ; seq = 1 {
			if _, err := c.Write(packet(seq, okPacket)); err != nil {
				return
			}
			if _, err := readServerPacket(c); err != nil {
				return
			}
		}
	}
}

// readServerPacket reads one packet as the protocol library does.
func readServerPacket(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	p := make([]byte, 4+(int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16))
	copy(p, hdr[:])
	_, err := io.ReadFull(r, p[4:])
	return p, err
}

// client is a client's side: its connection and the next sequence number.
type client struct {
	c   net.Conn
	seq byte
}

func (cl *client) send(t *testing.T, payload []byte) {
	t.Helper()
	if _, err := cl.c.Write(packet(cl.seq, payload)); err != nil {
		t.Fatal(err)
	}
	cl.seq++
}

func (cl *client) recv(t *testing.T) []byte {
	t.Helper()
	p, err := readServerPacket(cl.c)
	if err != nil {
		t.Fatal(err)
	}
	if p[3] != cl.seq {
		t.Fatalf("packet %x with sequence number %d, want %d", p[4:], p[3], cl.seq)
	}
	cl.seq++
	return p[4:]
}

// response is a handshake response with capability flags flags.
func response(flags uint32) []byte {
	r := make([]byte, 32)
	r[0], r[1], r[2], r[3] = byte(flags), byte(flags>>8), byte(flags>>16), byte(flags>>24)
	return append(r, "u\x00"...)
}

// sslRequest is a client's request for TLS.
func sslRequest() []byte { return response(mysqlauth.ClientSSL | 1<<9)[:mysqlauth.SSLRequestLength] }

// Over TLS the password goes in the clear, and the sequence numbers the
// client sees run on from its SSL request, which the server never sees.
func TestLoginOverTLS(t *testing.T) {
	cfg := selfSigned(t)
	lim := limits(10, time.Minute, time.Minute, 1<<20)
	lim.TLS = func() *tls.Config { return cfg }
	lim.RequireSecure = func() bool { return true }
	l := server(t, lim, fullAuthServer("secret"))

	cl := &client{c: dial(t, l)}
	g := cl.recv(t)
	if g[greetingCaps(g)+1]&(mysqlauth.ClientSSL>>8) == 0 {
		t.Fatal("the greeting does not offer TLS")
	}
	cl.send(t, sslRequest())
	tc := tls.Client(cl.c, &tls.Config{InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	cl.c = tc
	cl.send(t, response(mysqlauth.ClientSSL|1<<9))
	if p := cl.recv(t); !bytes.Equal(p, []byte{mysqlauth.MoreData, mysqlauth.FullAuth}) {
		t.Fatalf("got %x, want the request for the password", p)
	}
	cl.send(t, []byte("secret\x00"))
	if p := cl.recv(t); p[0] != 0 {
		t.Fatalf("login answered %q", p)
	}
	cl.seq = 0
	cl.send(t, []byte{3, 'x'})
	if p := cl.recv(t); p[0] != 0 {
		t.Fatalf("a command answered %q", p)
	}
}

// require_secure_transport refuses a login without TLS.
func TestRequireSecureTransport(t *testing.T) {
	lim := limits(10, time.Minute, time.Minute, 1<<20)
	lim.TLS = func() *tls.Config { return selfSigned(t) }
	lim.RequireSecure = func() bool { return true }
	l := server(t, lim, fullAuthServer("secret"))
	cl := &client{c: dial(t, l)}
	cl.recv(t)
	cl.send(t, response(1<<9))
	wantError(t, cl.c, errInsecure.code)
}

// Without TLS the client asks for the RSA public key and sends the
// password encrypted with it; a password in the clear is refused.
func TestLoginWithRSA(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	lim := limits(10, time.Minute, time.Minute, 1<<20)
	lim.RSAKey = key
	l := server(t, lim, fullAuthServer("secret"))

	cl := &client{c: dial(t, l)}
	cl.recv(t)
	cl.send(t, response(1<<9))
	cl.recv(t) // the request for the password
	cl.send(t, []byte{mysqlauth.PublicKeyRequest})
	p := cl.recv(t)
	block, _ := pem.Decode(p[1:])
	if p[0] != mysqlauth.MoreData || block == nil {
		t.Fatalf("public key answered %q", p)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pw := []byte("secret\x00")
	for i := range pw {
		pw[i] ^= testSalt[i%len(testSalt)]
	}
	ct, err := rsa.EncryptOAEP(sha1.New(), rand.Reader, pub.(*rsa.PublicKey), pw, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl.send(t, ct)
	if p := cl.recv(t); p[0] != 0 {
		t.Fatalf("login answered %q", p)
	}

	clear := &client{c: dial(t, l)}
	clear.recv(t)
	clear.send(t, response(1<<9))
	clear.recv(t)
	clear.send(t, []byte("secret\x00"))
	wantError(t, clear.c, errDenied.code)
}
