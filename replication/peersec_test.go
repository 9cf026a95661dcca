package replication

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/certusdb/certus/internal/frame"
	"github.com/certusdb/certus/internal/pki"
)

// handshakePair runs the handshake between dialer and listener over
// loopback TCP and returns both ends' connections, or the dialer's and the
// listener's (last) errors. The listener takes connections until one
// passes (an optional TLS dialer may try twice) or the dialer gave up.
func handshakePair(t testing.TB, dialer, listener *peerAuth) (dc, lc net.Conn, derr, lerr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		var last error
		for {
			raw, err := ln.Accept()
			if err != nil {
				done <- result{nil, last}
				return
			}
			c, _, err := listener.serverHandshake(raw, func(uint64) bool { return false })
			if err == nil {
				done <- result{c, nil}
				return
			}
			raw.Close()
			last = err
		}
	}()
	dc, derr = dialer.dial(t.Context(), ln.Addr().String(), listener.self)
	if derr != nil {
		ln.Close()
	}
	r := <-done
	ln.Close()
	return dc, r.c, derr, r.err
}

func TestPeerHandshake(t *testing.T) {
	secret := func(self uint64, s string) *peerAuth { return &peerAuth{cluster: "c", secret: s, self: self} }
	for _, tc := range []struct {
		name             string
		dialer, listener *peerAuth
		ok               bool
	}{
		{"open", secret(1, ""), secret(2, ""), true},
		{"secret", secret(1, "s"), secret(2, "s"), true},
		{"wrong secret", secret(1, "x"), secret(2, "s"), false},
		{"dialer without secret", secret(1, ""), secret(2, "s"), false},
		// the listener does not know the secret: the dialer must not
		// take it for a member
		{"listener without secret", secret(1, "s"), secret(2, ""), false},
		{"other cluster", &peerAuth{cluster: "d", secret: "s", self: 1}, secret(2, "s"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc, lc, derr, lerr := handshakePair(t, tc.dialer, tc.listener)
			if tc.ok != (derr == nil) {
				t.Fatalf("dialer: %v", derr)
			}
			if !tc.ok {
				if !errors.Is(derr, ErrPeerRejected) {
					t.Fatalf("dialer error %v, want ErrPeerRejected", derr)
				}
				return
			}
			if lerr != nil {
				t.Fatal(lerr)
			}
			defer dc.Close()
			defer lc.Close()
			for _, c := range []net.Conn{dc, lc} {
				// open: the socket itself, so that the leader's side of a
				// read link can be moved to a blocking thread
				_, mac := c.(*macConn)
				_, tcp := c.(*net.TCPConn)
				if mac != (tc.dialer.secret != "") || tcp != (tc.dialer.secret == "") {
					t.Fatalf("connection %T", c)
				}
			}
			exchange(t, dc, lc)
		})
	}
}

// exchange sends a frame each way.
func exchange(t *testing.T, a, b net.Conn) {
	t.Helper()
	for _, pair := range [][2]net.Conn{{a, b}, {b, a}} {
		if err := frame.Write(pair[0], frameRaft, []byte("payload")); err != nil {
			t.Fatal(err)
		}
		_ = pair[1].SetReadDeadline(time.Now().Add(5 * time.Second))
		typ, payload, err := frame.Read(pair[1])
		if err != nil || typ != frameRaft || string(payload) != "payload" {
			t.Fatalf("got %d %q %v", typ, payload, err)
		}
	}
}

// TestPeerHandshakeWrongListener: a dialer that expects another member
// at the address refuses the listener.
func TestPeerHandshakeWrongListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	listener := &peerAuth{cluster: "c", secret: "s", self: 2}
	go func() {
		if raw, err := ln.Accept(); err == nil {
			_, _, _ = listener.serverHandshake(raw, func(uint64) bool { return false })
			raw.Close()
		}
	}()
	_, err = (&peerAuth{cluster: "c", secret: "s", self: 1}).dial(t.Context(), ln.Addr().String(), 3)
	if !errors.Is(err, ErrPeerRejected) {
		t.Fatalf("dial of member 3 reaching member 2: %v", err)
	}
}

// recorder keeps what is written through it.
type recorder struct {
	net.Conn
	out bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.out.Write(p)
	return r.Conn.Write(p)
}

// macRecords writes frames through a macConn of keys k and returns its
// records as they went on the wire, one per frame.
func macRecords(t *testing.T, k *connKeys, payloads ...string) [][]byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	go func() { _, _ = io.Copy(io.Discard, b) }()
	rec := &recorder{Conn: a}
	m := newMACConn(rec, k)
	var out [][]byte
	for _, p := range payloads {
		rec.out.Reset()
		if err := frame.Write(m, frameRaft, []byte(p)); err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Clone(rec.out.Bytes()))
	}
	return out
}

// readMAC reads the frames of wire through a macConn of keys k: the
// payloads it took before the first error.
func readMAC(k *connKeys, wire []byte) ([]string, error) {
	a, b := net.Pipe()
	go func() {
		_, _ = b.Write(wire)
		b.Close()
	}()
	m := newMACConn(a, k)
	r := bufio.NewReader(m)
	var got []string
	for {
		_, payload, err := frame.Read(r)
		if err != nil {
			return got, err
		}
		got = append(got, string(payload))
	}
}

func TestMACConn(t *testing.T) {
	k := &connKeys{send: []byte("k1"), recv: []byte("k2")}
	rk := &connKeys{send: k.recv, recv: k.send} // the other end's
	recs := macRecords(t, k, "first", "second", "third")
	join := func(rs ...[]byte) []byte { return bytes.Join(rs, nil) }
	tampered := join(recs...)
	tampered[len(recs[0])+10] ^= 1
	other := macRecords(t, &connKeys{send: []byte("k3"), recv: []byte("k4")}, "first", "second", "third")
	for _, tc := range []struct {
		name string
		k    *connKeys
		wire []byte
		want []string
	}{
		{"intact", rk, join(recs...), []string{"first", "second", "third"}},
		{"tampered byte", rk, tampered, []string{"first"}},
		{"replayed record", rk, join(recs[0], recs[1], recs[1], recs[2]), []string{"first", "second"}},
		{"reordered", rk, join(recs[0], recs[2], recs[1]), []string{"first"}},
		{"dropped", rk, join(recs[0], recs[2]), []string{"first"}},
		{"wrong key", &connKeys{recv: []byte("k9")}, join(recs...), nil},
		// a record of this direction sent back to its sender
		{"reflected", &connKeys{recv: k.recv}, join(recs...), nil},
		{"spliced from another connection", rk, join(recs[0], other[1]), []string{"first"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readMAC(tc.k, tc.wire)
			if len(got) != len(tc.want) || len(got) > 0 && got[len(got)-1] != tc.want[len(tc.want)-1] {
				t.Fatalf("read %q, want %q", got, tc.want)
			}
			if len(tc.want) == 3 {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("err %v, want EOF", err)
				}
			} else if !errors.Is(err, ErrRecordAuth) {
				t.Fatalf("err %v, want ErrRecordAuth", err)
			}
		})
	}
}

// TestMACConnBigWrite: a write past recordMax travels in several records
// and reads back whole.
func TestMACConnBigWrite(t *testing.T) {
	k := &connKeys{send: []byte("a"), recv: []byte("b")}
	big := bytes.Repeat([]byte("0123456789"), recordMax/3)
	a, b := net.Pipe()
	go func() {
		_ = frame.Write(newMACConn(a, k), frameRaft, big)
		a.Close()
	}()
	_, payload, err := frame.Read(newMACConn(b, &connKeys{send: k.recv, recv: k.send}))
	if err != nil || !bytes.Equal(payload, big) {
		t.Fatalf("read %d bytes, %v", len(payload), err)
	}
}

// testCA makes a CA in dir and a member certificate it signed for each
// name; it returns each member's files.
func testCA(t testing.TB, dir string, names ...string) map[string]pki.Files {
	t.Helper()
	ca, err := pki.NewCA(dir, "test CA")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]pki.Files{}
	for _, n := range names {
		f := pki.Files{Cert: filepath.Join(dir, n+".pem"), Key: filepath.Join(dir, n+"-key.pem"), CA: filepath.Join(dir, "ca.pem")}
		if err := ca.Issue(f.Cert, f.Key, n, nil); err != nil {
			t.Fatal(err)
		}
		out[n] = f
	}
	return out
}

func peerTLS(t testing.TB, f pki.Files) *pki.Peer {
	t.Helper()
	p, err := pki.NewPeer(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPeerTLS(t *testing.T) {
	ours := testCA(t, t.TempDir(), "n1", "n2")
	theirs := testCA(t, t.TempDir(), "n1")
	member := func(self uint64, f pki.Files, optional bool) *peerAuth {
		return &peerAuth{cluster: "c", secret: "s", self: self, tls: peerTLS(t, f), tlsOptional: optional}
	}
	plain := &peerAuth{cluster: "c", secret: "s", self: 1}
	for _, tc := range []struct {
		name             string
		dialer, listener *peerAuth
		ok, tls          bool
	}{
		{"same CA", member(1, ours["n1"], false), member(2, ours["n2"], false), true, true},
		{"dialer from another CA", member(1, theirs["n1"], false), member(2, ours["n2"], false), false, false},
		{"listener from another CA", member(1, ours["n1"], false), member(2, theirs["n1"], false), false, false},
		{"plain to required", plain, member(2, ours["n2"], false), false, false},
		{"plain to optional", plain, member(2, ours["n2"], true), true, false},
		{"optional to plain", member(1, ours["n1"], true), &peerAuth{cluster: "c", secret: "s", self: 2}, true, false},
		{"required to plain", member(1, ours["n1"], false), &peerAuth{cluster: "c", secret: "s", self: 2}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc, lc, derr, lerr := handshakePair(t, tc.dialer, tc.listener)
			if tc.ok != (derr == nil && lerr == nil) {
				t.Fatalf("dialer: %v; listener: %v", derr, lerr)
			}
			if !tc.ok {
				return
			}
			defer dc.Close()
			defer lc.Close()
			if _, isTLS := lc.(*tls.Conn); isTLS != tc.tls {
				t.Fatalf("listener's connection %T", lc)
			}
			exchange(t, dc, lc)
		})
	}
}

// BenchmarkPeerConn streams raft-sized frames over one peer connection of
// each kind, written and read as a peer stream does (buffered): frames/s
// and MB/s.
func BenchmarkPeerConn(b *testing.B) {
	files := testCA(b, b.TempDir(), "n1", "n2")
	kinds := []struct {
		name             string
		dialer, listener *peerAuth
	}{
		{"open", &peerAuth{cluster: "c", self: 1}, &peerAuth{cluster: "c", self: 2}},
		{"secret-mac", &peerAuth{cluster: "c", secret: "s", self: 1}, &peerAuth{cluster: "c", secret: "s", self: 2}},
		{"tls", &peerAuth{cluster: "c", self: 1, tls: peerTLS(b, files["n1"])}, &peerAuth{cluster: "c", self: 2, tls: peerTLS(b, files["n2"])}},
	}
	for _, size := range []int{256, 4 << 10, 64 << 10} {
		for _, k := range kinds {
			b.Run(k.name+"/"+byteCount(size), func(b *testing.B) {
				dc, lc, derr, lerr := handshakePair(b, k.dialer, k.listener)
				if derr != nil || lerr != nil {
					b.Fatal(derr, lerr)
				}
				defer dc.Close()
				defer lc.Close()
				payload := make([]byte, size)
				b.SetBytes(int64(size))
				b.ResetTimer()
				go func() {
					w := bufio.NewWriterSize(dc, 256<<10)
					for range b.N {
						_ = frame.Write(w, frameRaft, payload)
					}
					_ = w.Flush()
				}()
				r := bufio.NewReaderSize(lc, 64<<10)
				for range b.N {
					if _, _, err := frame.Read(r); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
			})
		}
	}
}

func byteCount(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// TestTransportRefusesReplay captures what a member with the secret sends
// a transport (handshake, then a raft frame) and replays it: whole on a
// new connection (the listener's fresh nonce voids the proof), and its
// records after a handshake of its own (the connection's keys void them).
// Both are refused and logged.
func TestTransportRefusesReplay(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	tr, err := NewTCPTransport(TransportConfig{Self: 1, Listen: "127.0.0.1:0", ClusterName: "c", Secret: "s",
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.SetMembers([]Member{{ID: 2, Name: "n2"}})
	member := &peerAuth{cluster: "c", secret: "s", self: 2}
	connect := func() (*recorder, net.Conn) {
		raw, err := net.Dial("tcp", tr.Addr())
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{Conn: raw}
		c, err := member.clientHandshake(rec, tr.Addr(), 1, false)
		if err != nil {
			t.Fatal(err)
		}
		return rec, c
	}
	rec, c := connect()
	handshake := bytes.Clone(rec.out.Bytes())
	rec.out.Reset()
	from, to := uint64(2), uint64(1)
	data, _ := proto.Marshal(&pb.Message{Type: pb.MsgHeartbeat.Enum(), From: &from, To: &to})
	if err := frame.Write(c, frameRaft, data); err != nil {
		t.Fatal(err)
	}
	records := bytes.Clone(rec.out.Bytes())
	c.Close()

	waitLogged := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			found := strings.Contains(logged.String(), what)
			mu.Unlock()
			if found {
				return
			}
		}
		t.Fatalf("%q not logged:\n%s", what, logged.String())
	}
	replay, err := net.Dial("tcp", tr.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	if _, err := replay.Write(append(handshake, records...)); err != nil {
		t.Fatal(err)
	}
	waitLogged("cluster secret mismatch")

	time.Sleep(1100 * time.Millisecond) // refusals are logged once a second
	rec, c = connect()
	defer c.Close()
	if _, err := rec.Conn.Write(records); err != nil {
		t.Fatal(err)
	}
	waitLogged(ErrRecordAuth.Error())
}
