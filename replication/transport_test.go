package replication

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
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
