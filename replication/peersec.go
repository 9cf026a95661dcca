package replication

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"sync"
	"time"

	"github.com/certusdb/certus/internal/frame"
	"github.com/certusdb/certus/internal/pki"
)

// Peer connection security (see DESIGN.md, "Peer connections").
//
// A connection is TLS when this end has peer certificates (mutual: each
// end's certificate must be signed by the CA), or plain. On both, the
// dialer's hello names the cluster and the dialer's id. With a cluster
// secret the listener then challenges the dialer with a fresh nonce, the
// dialer proves it knows the secret, and the listener proves it back; on a
// plain connection every byte after the handshake then travels in records
// authenticated with keys derived for this connection (macConn). Without
// either, a connection is open: anyone who reaches the port is a peer.
const (
	frameChallenge byte = 12 // JSON challenge: the listener's id and nonce
	frameProof     byte = 13 // JSON proof: the dialer's answer
)

// PeerSecurity is how peer connections are protected: "open", "secret" or
// "tls".
type PeerSecurity string

// The peer security modes.
const (
	PeerOpen   PeerSecurity = "open"
	PeerSecret PeerSecurity = "secret"
	PeerTLS    PeerSecurity = "tls"
)

// errPlainRefused: a plain connection reached a listener that requires
// TLS.
const errPlainRefused = "plain connection refused: this node requires peer TLS"

// peerAuth is what one end proves and demands on its peer connections.
type peerAuth struct {
	cluster string
	secret  string
	self    uint64
	tls     *pki.Peer // nil: plain connections only
	// tlsOptional also takes plain connections and falls back to a plain
	// dial when TLS fails: a cluster rolling to TLS.
	tlsOptional bool
}

func (a *peerAuth) security() PeerSecurity {
	switch {
	case a.tls != nil:
		return PeerTLS
	case a.secret != "":
		return PeerSecret
	}
	return PeerOpen
}

type challenge struct {
	NodeID uint64 `json:"node_id"`
	Nonce  string `json:"nonce"`
}

type proof struct {
	Auth string `json:"auth"`
}

func newNonce() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// transcript binds a handshake's proofs and keys to the cluster, both
// ends and both nonces; each field is length-prefixed, so no two
// handshakes share one.
func transcript(cluster string, dialer, listener uint64, lnonce, dnonce string) []byte {
	var b []byte
	for _, f := range []string{cluster, fmt.Sprintf("%016x", dialer), fmt.Sprintf("%016x", listener), lnonce, dnonce} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

// derive is HMAC-SHA256 of secret over label and the transcript: the
// proofs and the connection's keys.
func derive(secret, label string, tr []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(label))
	m.Write(tr)
	return m.Sum(nil)
}

const (
	labelDialer   = "certus peer dialer proof"
	labelListener = "certus peer listener proof"
	labelKeyDL    = "certus peer key dialer to listener"
	labelKeyLD    = "certus peer key listener to dialer"
)

// peerRejected marks err as a refusal that dialing again cannot fix.
func peerRejected(addr string, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrPeerRejected, addr, err)
}

// dial connects to addr and completes the handshake; want, when not 0, is
// the id the listener must have. It tries TLS when this end has
// certificates and, when TLS is optional, a plain connection after a
// failed TLS one (the peer may not be on TLS yet).
func (a *peerAuth) dial(ctx context.Context, addr string, want uint64) (net.Conn, error) {
	c, err := a.dialOnce(ctx, addr, want, a.tls != nil)
	if err != nil && a.tls != nil && a.tlsOptional && ctx.Err() == nil {
		if c, plainErr := a.dialOnce(ctx, addr, want, false); plainErr == nil {
			return c, nil
		}
	}
	return c, err
}

func (a *peerAuth) dialOnce(ctx context.Context, addr string, want uint64, useTLS bool) (net.Conn, error) {
	d := net.Dialer{Timeout: 3 * time.Second, KeepAlive: 10 * time.Second, Control: peerControl}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	// a peer that accepted but does not answer must not hold up stopping
	stop := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Now()) })
	defer stop()
	c, err := a.clientHandshake(raw, addr, want, useTLS)
	if err != nil {
		raw.Close()
		return nil, err
	}
	_ = raw.SetDeadline(time.Time{})
	return c, nil
}

// clientHandshake runs the dialer's side of the handshake on raw and
// returns the connection to use.
func (a *peerAuth) clientHandshake(raw net.Conn, addr string, want uint64, useTLS bool) (net.Conn, error) {
	var c net.Conn = raw
	if useTLS {
		tc := tls.Client(raw, a.tls.Client())
		if err := tc.Handshake(); err != nil {
			return nil, tlsError(addr, err)
		}
		c = tc
	}
	dnonce := newNonce()
	data, _ := json.Marshal(hello{Cluster: a.cluster, From: a.self, Nonce: dnonce})
	if err := frame.Write(c, frameHello, data); err != nil {
		return nil, tlsError(addr, err)
	}
	typ, payload, err := frame.ReadMax(c, helloMax)
	if err != nil {
		return nil, fmt.Errorf("handshake with %s: %w", addr, tlsError(addr, err))
	}
	var tr []byte // the transcript, when the listener asked for the secret
	if typ == frameChallenge {
		var ch challenge
		switch {
		case json.Unmarshal(payload, &ch) != nil:
			return nil, fmt.Errorf("handshake with %s: unreadable challenge", addr)
		case a.secret == "":
			return nil, peerRejected(addr, errors.New("the peer requires the cluster secret; this node has none"))
		case want != 0 && ch.NodeID != want:
			return nil, peerRejected(addr, fmt.Errorf("peer is %016x, not %016x", ch.NodeID, want))
		}
		tr = transcript(a.cluster, a.self, ch.NodeID, ch.Nonce, dnonce)
		data, _ := json.Marshal(proof{Auth: hex.EncodeToString(derive(a.secret, labelDialer, tr))})
		if err := frame.Write(c, frameProof, data); err != nil {
			return nil, err
		}
		if typ, payload, err = frame.ReadMax(c, helloMax); err != nil {
			return nil, fmt.Errorf("handshake with %s: %w", addr, err)
		}
	}
	if typ != frameHelloOK {
		return nil, fmt.Errorf("handshake with %s: unexpected frame %d", addr, typ)
	}
	var reply helloReply
	if err := json.Unmarshal(payload, &reply); err != nil {
		return nil, peerRejected(addr, err)
	}
	switch {
	case !reply.OK:
		return nil, peerRejected(addr, errors.New(reply.Error))
	case want != 0 && reply.NodeID != want:
		return nil, peerRejected(addr, fmt.Errorf("peer is %016x, not %016x", reply.NodeID, want))
	case a.secret != "" && tr == nil:
		return nil, peerRejected(addr, errors.New("the peer did not ask for the cluster secret"))
	case tr != nil && !hmac.Equal(unhex(reply.Auth), derive(a.secret, labelListener, tr)):
		return nil, peerRejected(addr, errors.New("the peer does not know the cluster secret"))
	}
	if tr != nil && !useTLS {
		return newMACConn(c, &connKeys{send: derive(a.secret, labelKeyDL, tr), recv: derive(a.secret, labelKeyLD, tr)}), nil
	}
	return c, nil
}

// tlsError marks a refused certificate, ours or the peer's, as a
// rejection.
func tlsError(addr string, err error) error {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var op *net.OpError
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &op) && op.Op == "remote error" {
		return peerRejected(addr, err)
	}
	return err
}

func unhex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

// serverHandshake runs the listener's side of the handshake on raw,
// within helloTimeout, and returns the connection to use and the peer's
// hello. Nothing is read ahead: no buffer is given to a peer before it is
// authenticated. refuse says whether to drop a peer (fault injection)
// without an answer.
func (a *peerAuth) serverHandshake(raw net.Conn, refuse func(uint64) bool) (net.Conn, hello, error) {
	_ = raw.SetDeadline(time.Now().Add(helloTimeout))
	defer func() { _ = raw.SetDeadline(time.Time{}) }()
	var first [1]byte
	if _, err := io.ReadFull(raw, first[:]); err != nil {
		return nil, hello{}, fmt.Errorf("bad handshake: %w", err)
	}
	var c net.Conn = &prefixConn{Conn: raw, first: first[0], has: true}
	useTLS := first[0] == tlsHandshakeRecord
	switch {
	case useTLS && a.tls == nil:
		return nil, hello{}, errors.New("a TLS connection, and this node has no peer certificates")
	case !useTLS && a.tls != nil && !a.tlsOptional:
		// the hello is read first, so that the answer is not lost to a
		// reset for unread data
		_, _, _ = frame.ReadMax(c, helloMax)
		return nil, hello{}, a.refuse(c, errPlainRefused)
	}
	if useTLS {
		tc := tls.Server(c, a.tls.Server())
		if err := tc.Handshake(); err != nil {
			return nil, hello{}, fmt.Errorf("tls handshake: %w", err)
		}
		c = tc
	}
	typ, payload, err := frame.ReadMax(c, helloMax)
	if err == nil && typ != frameHello {
		err = fmt.Errorf("frame type %d instead of a hello", typ)
	}
	if err != nil {
		return nil, hello{}, fmt.Errorf("bad handshake: %w", err)
	}
	if !useTLS {
		c = raw // the first byte went with the hello: raw can move (readDirectly)
	}
	h, reason := a.checkHello(payload)
	if refuse(h.From) {
		return nil, h, errDropped
	}
	if reason != "" {
		return nil, h, a.refuse(c, reason)
	}
	reply := helloReply{OK: true, NodeID: a.self}
	var tr []byte
	if a.secret != "" {
		lnonce := newNonce()
		data, _ := json.Marshal(challenge{NodeID: a.self, Nonce: lnonce})
		if err := frame.Write(c, frameChallenge, data); err != nil {
			return nil, h, err
		}
		typ, payload, err := frame.ReadMax(c, helloMax)
		if err == nil && typ != frameProof {
			err = fmt.Errorf("frame type %d instead of a proof", typ)
		}
		if err != nil {
			return nil, h, fmt.Errorf("bad handshake: %w", err)
		}
		tr = transcript(a.cluster, h.From, a.self, lnonce, h.Nonce)
		if !a.checkProof(payload, tr) {
			return nil, h, a.refuse(c, "cluster secret mismatch")
		}
		reply.Auth = hex.EncodeToString(derive(a.secret, labelListener, tr))
	}
	data, _ := json.Marshal(reply)
	if err := frame.Write(c, frameHelloOK, data); err != nil {
		return nil, h, err
	}
	if tr != nil && !useTLS {
		c = newMACConn(c, &connKeys{send: derive(a.secret, labelKeyLD, tr), recv: derive(a.secret, labelKeyDL, tr)})
	}
	return c, h, nil
}

// checkHello decodes a hello; reason is why it is refused, "" when it is
// not.
func (a *peerAuth) checkHello(payload []byte) (h hello, reason string) {
	if err := json.Unmarshal(payload, &h); err != nil {
		return hello{}, "unreadable hello: " + err.Error()
	}
	if h.Cluster != a.cluster {
		return h, fmt.Sprintf("cluster name mismatch: this node is in cluster %q, peer claims %q", a.cluster, h.Cluster)
	}
	return h, ""
}

// checkProof says whether payload proves the dialer of transcript tr
// knows the secret.
func (a *peerAuth) checkProof(payload, tr []byte) bool {
	var p proof
	return json.Unmarshal(payload, &p) == nil && hmac.Equal(unhex(p.Auth), derive(a.secret, labelDialer, tr))
}

// peerCertNames are the names the certificate of c's peer carries (its
// common name and DNS names), which must include its member name; nil for
// a plain connection.
func peerCertNames(c net.Conn) []string {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return nil
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return []string{} // not nil: no name matches
	}
	return append([]string{certs[0].Subject.CommonName}, certs[0].DNSNames...)
}

// errDropped: the peer is cut off by fault injection; its connection is
// closed without an answer.
var errDropped = errors.New("peer cut off")

// refuse answers a refused hello and returns the reason as an error.
func (a *peerAuth) refuse(c net.Conn, reason string) error {
	data, _ := json.Marshal(helloReply{Error: reason})
	_ = frame.Write(c, frameHelloOK, data)
	return errors.New(reason)
}

// tlsHandshakeRecord is the first byte of a TLS connection (a handshake
// record); a plain connection starts with a frame's length, whose first
// byte is 0 for any hello.
const tlsHandshakeRecord = 0x16

// prefixConn gives back the byte read from a connection to tell TLS from
// plain.
type prefixConn struct {
	net.Conn
	first byte
	has   bool
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if p.has && len(b) > 0 {
		b[0], p.has = p.first, false
		return 1, nil
	}
	return p.Conn.Read(b)
}

// macConn carries the bytes of a plain connection with a cluster secret in
// authenticated records, one per write of up to recordMax bytes:
//
//	length uint32 | data | tag (16 bytes)
//
// where tag is HMAC-SHA256 of the direction's key over the direction's
// record number (uint64, from 0), the length and the data, truncated to 16
// bytes. The keys are the connection's own (derived from both nonces), one
// per direction, so a record replayed, reordered, dropped, reflected or
// spliced from another connection fails; the connection then ends, nothing
// of the record is read.
type macConn struct {
	net.Conn
	rmu   sync.Mutex
	rmac  hash.Hash
	rseq  uint64
	rbuf  []byte
	rdata []byte // of the last record, not read yet
	rerr  error

	wmu  sync.Mutex
	wmac hash.Hash
	wseq uint64
	wbuf []byte
	werr error
}

type connKeys struct{ send, recv []byte }

const (
	recordMax = 64 << 10
	tagSize   = 16
)

// ErrRecordAuth is returned by reads of a peer connection whose record
// failed authentication.
var ErrRecordAuth = errors.New("replication: peer record failed authentication")

func newMACConn(c net.Conn, k *connKeys) *macConn {
	return &macConn{Conn: c, rmac: hmac.New(sha256.New, k.recv), wmac: hmac.New(sha256.New, k.send)}
}

func recordTag(m hash.Hash, seq uint64, hdr, data []byte, out []byte) []byte {
	m.Reset()
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], seq)
	m.Write(s[:])
	m.Write(hdr)
	m.Write(data)
	return m.Sum(out)[:len(out)+tagSize]
}

func (m *macConn) Read(p []byte) (int, error) {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	for len(m.rdata) == 0 {
		if m.rerr != nil {
			return 0, m.rerr
		}
		m.rerr = m.readRecord()
	}
	n := copy(p, m.rdata)
	m.rdata = m.rdata[n:]
	return n, nil
}

// readRecord reads and checks the next record; any error, a timeout too,
// ends the connection's reads (a record may have been read in part).
func (m *macConn) readRecord() error {
	var hdr [4]byte
	if _, err := io.ReadFull(m.Conn, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > recordMax {
		return fmt.Errorf("%w: record of %d bytes", ErrRecordAuth, n)
	}
	if cap(m.rbuf) < int(n)+tagSize {
		m.rbuf = make([]byte, int(n)+tagSize)
	}
	buf := m.rbuf[:int(n)+tagSize]
	if _, err := io.ReadFull(m.Conn, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	data, tag := buf[:n], buf[n:]
	var sum [sha256.Size]byte
	if !hmac.Equal(recordTag(m.rmac, m.rseq, hdr[:], data, sum[:0]), tag) {
		return ErrRecordAuth
	}
	m.rseq++
	m.rdata = data
	return nil
}

func (m *macConn) Write(p []byte) (int, error) {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	written := 0
	for len(p) > 0 && m.werr == nil {
		chunk := p[:min(len(p), recordMax)]
		buf := binary.BigEndian.AppendUint32(m.wbuf[:0], uint32(len(chunk)))
		buf = append(buf, chunk...)
		buf = recordTag(m.wmac, m.wseq, buf[:4], chunk, buf)
		m.wbuf = buf
		if _, err := m.Conn.Write(buf); err != nil {
			m.werr = err // the peer cannot resynchronise: the connection is done
			break
		}
		m.wseq++
		written += len(chunk)
		p = p[len(chunk):]
	}
	return written, m.werr
}
