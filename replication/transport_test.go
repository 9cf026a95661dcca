package replication

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/certusdb/certus/internal/frame"
)

// TestSendKeepsOrder sends raft messages of mixed sizes, some bigger than
// the stream's write buffer, to a peer that stops reading now and then:
// the peer must get every one, whole and in the order sent.
func TestSendKeepsOrder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tr, err := NewTCPTransport(TransportConfig{Self: 1, Listen: "127.0.0.1:0", ClusterName: "c"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.SetMembers([]Member{{ID: 2, PeerAddr: ln.Addr().String()}})

	const total = 4000 // fewer than a peer's queue holds: none may be dropped
	got := make(chan error, 1)
	go func() { got <- receiveInOrder(ln, total) }()

	rng := rand.New(rand.NewSource(1))
	for seq := uint64(1); seq <= total; {
		var batch []*pb.Message
		for k := rng.Intn(4) + 1; k > 0 && seq <= total; k-- {
			size := rng.Intn(2 << 10)
			switch {
			case seq%1000 == 900:
				size = 300<<10 + rng.Intn(64<<10) // past the write buffer
			case rng.Intn(4) == 0:
				size = 32 << 10
			}
			commit, to, from := seq, uint64(2), uint64(1)
			batch = append(batch, &pb.Message{Type: pb.MsgApp.Enum(), To: &to, From: &from, Commit: &commit,
				Entries: []*pb.Entry{{Data: make([]byte, size)}}})
			seq++
		}
		tr.Send(batch)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the peer did not get every message within 30 s")
	}
}

// receiveInOrder accepts the transport's stream on ln, answers its hello
// and reads total raft messages, pausing now and then, checking that their
// commit fields count up from 1.
func receiveInOrder(ln net.Listener, total uint64) error {
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, _, err := frame.Read(r); err != nil {
		return err
	}
	ok, _ := json.Marshal(helloReply{OK: true, NodeID: 2})
	if err := frame.Write(c, frameHelloOK, ok); err != nil {
		return err
	}
	for want := uint64(1); want <= total; want++ {
		if want%200 == 0 {
			time.Sleep(50 * time.Millisecond) // let the sender's socket fill
		}
		typ, payload, err := frame.Read(r)
		if err != nil {
			return err
		}
		m := &pb.Message{}
		if typ != frameRaft {
			return fmt.Errorf("frame %d has type %d", want, typ)
		}
		if err := proto.Unmarshal(payload, m); err != nil {
			return err
		}
		if m.GetCommit() != want {
			return fmt.Errorf("got message %d where %d was due", m.GetCommit(), want)
		}
	}
	return nil
}

// TestCloseDuringHandshake closes a transport while its stream to a peer
// that accepted the connection but never answers is in its handshake:
// Close must not wait for the handshake's 10 s deadline.
func TestCloseDuringHandshake(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c // held open, never answered
		}
	}()
	tr, err := NewTCPTransport(TransportConfig{Self: 1, Listen: "127.0.0.1:0", ClusterName: "c"})
	if err != nil {
		t.Fatal(err)
	}
	tr.SetMembers([]Member{{ID: 2, PeerAddr: ln.Addr().String()}})
	to, from := uint64(2), uint64(1)
	tr.Send([]*pb.Message{{Type: pb.MsgHeartbeat.Enum(), To: &to, From: &from}})
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the transport did not dial its peer")
	}
	start := time.Now()
	tr.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v while a handshake hung", d)
	}
}

// TestPeerPortBounded connects to a transport's peer port as a stranger
// and as a peer that knows the cluster: a hello past helloMax, or a
// request past requestMax after the hello, closes the connection at once
// (nothing of it is read), and the refusals are logged, but not one line
// each.
func TestPeerPortBounded(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	tr, err := NewTCPTransport(TransportConfig{Self: 1, Listen: "127.0.0.1:0", ClusterName: "c",
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	closedAtOnce := func(what string, c net.Conn) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			if _, err := c.Read(make([]byte, 512)); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("%s: the connection was not closed", what)
				}
				return
			}
		}
	}
	announce := func(c net.Conn, typ byte, n uint32) {
		t.Helper()
		hdr := binary.BigEndian.AppendUint32(nil, n)
		if _, err := c.Write(append(append(hdr, typ), "0123456789"...)); err != nil {
			t.Fatal(err)
		}
	}
	const strangers = 20
	for range strangers {
		c, err := net.Dial("tcp", tr.Addr())
		if err != nil {
			t.Fatal(err)
		}
		announce(c, frameHello, frame.MaxSize)
		closedAtOnce("a hello announcing 1 GiB", c)
		c.Close()
	}
	c, err := (&peerAuth{cluster: "c", self: 2}).dial(t.Context(), tr.Addr(), 0)
	if err != nil {
		t.Fatal(err)
	}
	announce(c, frameJoin, requestMax+1)
	closedAtOnce("a join request past requestMax", c)
	c.Close()

	mu.Lock()
	lines := strings.Count(logged.String(), "refused peer connection")
	mu.Unlock()
	if lines == 0 || lines > 2 {
		t.Fatalf("%d refused connections logged %d lines, want 1 or 2 (one a second):\n%s", strangers, lines, logged.String())
	}
}

func TestReadPeerFrameLimits(t *testing.T) {
	for _, tc := range []struct {
		typ    byte
		size   int
		member bool
		ok     bool
	}{
		{frameRaft, requestMax + 100, true, true},
		{frameRaft, requestMax + 1, false, false}, // not a member's
		{frameJoin, requestMax, false, true},
		{frameJoin, requestMax + 1, false, false},
		{frameStateTransfer, requestMax + 1, true, false},
		{frameReadIndex, requestMax + 1, true, false},
	} {
		data := frame.Append(nil, tc.typ, make([]byte, tc.size-1))
		typ, payload, err := readPeerFrame(bufio.NewReader(bytes.NewReader(data)), tc.member)
		if tc.ok != (err == nil) || tc.ok && (typ != tc.typ || len(payload) != tc.size-1) {
			t.Errorf("type %d, %d bytes: read type %d, %d bytes, err %v", tc.typ, tc.size, typ, len(payload), err)
		}
		if !tc.ok && !errors.Is(err, frame.ErrTooLarge) {
			t.Errorf("type %d, %d bytes: err %v, want frame.ErrTooLarge", tc.typ, tc.size, err)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
