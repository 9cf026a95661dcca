package systest

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/frame"
)

// TestPeerPortFlood attacks a node's peer port the way issue #48 found it
// fall over: connections that announce 1 GiB frames and send ten bytes of
// them, as strangers (in the hello) and as a peer that knows the cluster
// (a raft message after the hello), in waves, and 500 sockets that send
// nothing. The node's peak resident memory must stay far below one such
// frame, SQL clients must be served and the node Synced throughout, and
// the silent sockets must be closed by the hello's deadline.
func TestPeerPortFlood(t *testing.T) {
	n, db := startNode(t, "flood1", "f")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	served := 0
	serve := func() {
		t.Helper()
		served++
		xexec(t, db, "INSERT INTO t VALUES (?, ?)", served, served)
		if got := qInt(t, db, "SELECT v FROM t WHERE id = ?", served); got != int64(served) {
			t.Fatalf("read %d after writing %d", got, served)
		}
		if h := n.Health(); h != 200 {
			t.Fatalf("/health answers %d during the attack, want 200 (Synced)", h)
		}
	}

	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", n.PeerAddr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	announce := func(c net.Conn, typ byte) {
		t.Helper()
		b := binary.BigEndian.AppendUint32(nil, frame.MaxSize)
		if _, err := c.Write(append(append(b, typ), "0123456789"...)); err != nil {
			t.Fatal(err)
		}
	}
	// a peer that knows the cluster's name (and its secret: none here)
	// gets past the hello; 1 and 3 are the hello's and a raft message's
	// frame types
	hello := func(c net.Conn) {
		t.Helper()
		h, _ := json.Marshal(map[string]any{"cluster": "certus", "from": 0xbad, "nonce": "1"})
		if err := frame.Write(c, 1, h); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, reply, err := frame.Read(c); err != nil || !strings.Contains(string(reply), `"ok":true`) {
			t.Fatalf("hello: %s, %v", reply, err)
		}
	}
	for wave := 0; wave < 3; wave++ {
		var conns []net.Conn
		for i := 0; i < 4; i++ {
			stranger, peer := dial(), dial()
			announce(stranger, 1)
			hello(peer)
			announce(peer, 3)
			conns = append(conns, stranger, peer)
		}
		time.Sleep(500 * time.Millisecond)
		serve()
		for _, c := range conns {
			c.Close()
		}
		time.Sleep(500 * time.Millisecond)
	}

	const idle = 500
	silent := make([]net.Conn, idle)
	for i := range silent {
		silent[i] = dial()
	}
	opened := time.Now()
	for time.Since(opened) < 3*time.Second {
		serve()
		time.Sleep(100 * time.Millisecond)
	}
	hwm := vmHWM(t, n.PID())
	t.Logf("peak resident memory %d MiB after the attack (%d statements served during it)", hwm>>20, served)
	if hwm > 400<<20 {
		t.Fatalf("peak resident memory %d MiB, want under 400 MiB", hwm>>20)
	}

	// every silent socket is closed by the node within the hello's 10 s
	var wg sync.WaitGroup
	var mu sync.Mutex
	held := 0
	for _, c := range silent {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			_ = c.SetReadDeadline(opened.Add(20 * time.Second))
			_, err := c.Read(make([]byte, 1))
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				mu.Lock()
				held++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if held > 0 {
		t.Fatalf("%d of %d silent sockets still open 20 s after they connected", held, idle)
	}
	serve()
	if log := n.LogTail(2000); !strings.Contains(log, "refused peer connection") {
		t.Fatalf("no refused peer connection logged:\n%s", log)
	}
}
