package systest

import (
	"bytes"
	"crypto/tls"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/certusdb/certus/internal/frame"
	"github.com/certusdb/certus/internal/pki"
	"github.com/certusdb/certus/internal/testcluster"
)

// The peer protocol's frame types (replication/transport.go, peersec.go),
// as an attacker would learn them from the code.
const (
	peerHello         = 1
	peerHelloReply    = 2
	peerRaft          = 3
	peerStateTransfer = 6
	peerLeave         = 7
)

// peerCA makes a CA in a directory of its own and a certificate it signed
// for each name; certFlags gives a node's TLS flags.
type peerCA struct{ dir string }

func newPeerCA(t *testing.T, names ...string) peerCA {
	t.Helper()
	ca := peerCA{dir: t.TempDir()}
	c, err := pki.NewCA(ca.dir, "test CA")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := c.Issue(ca.cert(n), ca.key(n), n, nil); err != nil {
			t.Fatal(err)
		}
	}
	return ca
}

func (ca peerCA) cert(name string) string { return filepath.Join(ca.dir, name+"-cert.pem") }
func (ca peerCA) key(name string) string  { return filepath.Join(ca.dir, name+"-key.pem") }

func (ca peerCA) flags(name string, mode string) []string {
	return []string{"--peer-cert", ca.cert(name), "--peer-key", ca.key(name), "--peer-ca", filepath.Join(ca.dir, "ca.pem"), "--peer-tls", mode}
}

// tlsConfig is an attacker's client configuration with name's
// certificate; it trusts any listener.
func (ca peerCA) tlsConfig(t *testing.T, name string) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(ca.cert(name), ca.key(name))
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}
}

// peerAttack is a connection to a node's peer port that speaks the
// protocol as written in package replication.
type peerAttack struct {
	t *testing.T
	c net.Conn
}

// dialPeer connects to addr, over TLS when cfg is not nil.
func dialPeer(t *testing.T, addr string, cfg *tls.Config) *peerAttack {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if cfg != nil {
		c = tls.Client(c, cfg)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &peerAttack{t: t, c: c}
}

// hello sends a hello as member from and returns the node's answer: the
// reply's error, "" when it let the connection in; err when the
// connection failed.
func (a *peerAttack) hello(from uint64) (refusal string, err error) {
	h, _ := json.Marshal(map[string]any{"cluster": "certus", "from": from, "nonce": "0123"})
	if err := frame.Write(a.c, peerHello, h); err != nil {
		return "", err
	}
	typ, payload, err := frame.ReadMax(a.c, 1<<20)
	if err != nil {
		return "", err
	}
	var reply struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if typ != peerHelloReply || json.Unmarshal(payload, &reply) != nil {
		return fmt.Sprintf("frame %d: %s", typ, payload), nil
	}
	if !reply.OK {
		return reply.Error, nil
	}
	return "", nil
}

// send writes a frame; the node may have closed the connection already.
func (a *peerAttack) send(typ byte, payload []byte) {
	_ = frame.Write(a.c, typ, payload)
}

// rest reads what the node sends until it closes the connection or
// stops sending for a while.
func (a *peerAttack) rest() []byte {
	_ = a.c.SetReadDeadline(time.Now().Add(3 * time.Second))
	b, _ := io.ReadAll(a.c)
	return b
}

func nodeID(t *testing.T, n *testcluster.Node) uint64 {
	t.Helper()
	st, err := n.Status()
	if err != nil {
		t.Fatal(err)
	}
	id, err := strconv.ParseUint(fmt.Sprint(st["id"]), 16, 64)
	if err != nil {
		t.Fatalf("%s: id %v", n.Name, st["id"])
	}
	return id
}

func statusField(t *testing.T, n *testcluster.Node, field string) any {
	t.Helper()
	st, err := n.Status()
	if err != nil {
		t.Fatal(err)
	}
	return st[field]
}

func memberCount(t *testing.T, n *testcluster.Node) int {
	t.Helper()
	ms, _ := statusField(t, n, "members").([]any)
	return len(ms)
}

// startPeerCluster starts nodes n1..n3, each with flags(name); n1
// bootstraps, the others join it.
func startPeerCluster(t *testing.T, flags func(name string) []string) *testcluster.Cluster {
	t.Helper()
	c := &testcluster.Cluster{}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("n%d", i)
		n := testcluster.NewNode(t, name, flags(name)...)
		if i > 1 {
			n.Args = append(n.Args, "--join", c.Nodes[0].PeerAddr)
		}
		n.Start()
		c.Nodes = append(c.Nodes, n)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("%s log tail:\n%s", n.Name, n.LogTail(30))
			}
		}
	})
	return c
}

// waitNodeLog waits until n's log has a line containing s.
func waitNodeLog(t *testing.T, n *testcluster.Node, s string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if strings.Contains(n.LogTail(500), s) {
			return
		}
	}
	t.Fatalf("%s did not log %q", n.Name, s)
}

// TestPeerSecurity attacks the peer ports of a cluster on mutual TLS: a
// stranger without a certificate, one with a certificate of another CA,
// and a holder of a certificate of the cluster's CA that is not a member
// (or is one member posing as another) get no rows, remove no member,
// join nothing and move no raft state; a captured connection replayed
// applies nothing.
func TestPeerSecurity(t *testing.T) {
	ca := newPeerCA(t, "n1", "n2", "n3", "intruder", "n5")
	other := newPeerCA(t, "n4")
	c := startPeerCluster(t, func(name string) []string { return ca.flags(name, "required") })
	n1, n2, n3 := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	for _, n := range c.Nodes {
		if got := statusField(t, n, "peer_security"); got != "tls" {
			t.Fatalf("%s: peer_security %v, want tls", n.Name, got)
		}
	}
	db := n1.DB("")
	const marker = "peersec-marker-7f3a"
	mustExec(t, db, "CREATE DATABASE bank")
	mustExec(t, db, "CREATE TABLE bank.acct (id INT PRIMARY KEY, balance INT, note VARCHAR(40))")
	mustExec(t, db, "INSERT INTO bank.acct VALUES (1, 0, ?)", marker)
	awaitApplied(t, c)
	id1, id2, id3 := nodeID(t, n1), nodeID(t, n2), nodeID(t, n3)
	noRows := func(what string, got []byte) {
		t.Helper()
		if bytes.Contains(got, []byte(marker)) {
			t.Fatalf("%s: a row crossed to the attacker", what)
		}
	}
	stillThree := func(what string) {
		t.Helper()
		time.Sleep(time.Second)
		for _, n := range c.Nodes {
			if k := memberCount(t, n); k != 3 {
				t.Fatalf("%s: %s lists %d members, want 3", what, n.Name, k)
			}
		}
	}

	t.Run("Plain", func(t *testing.T) {
		a := dialPeer(t, n2.PeerAddr, nil)
		refusal, err := a.hello(0xbad)
		if err == nil && !strings.Contains(refusal, "requires peer TLS") {
			t.Fatalf("a plain hello got %q", refusal)
		}
		a.send(peerStateTransfer, []byte("{}"))
		noRows("plain state transfer request", a.rest())
	})
	t.Run("OtherCA", func(t *testing.T) {
		a := dialPeer(t, n2.PeerAddr, other.tlsConfig(t, "n4"))
		if refusal, err := a.hello(id3); err == nil {
			t.Fatalf("a certificate of another CA got through the TLS handshake (reply %q)", refusal)
		}
		a.send(peerStateTransfer, []byte("{}"))
		noRows("state transfer request with another CA's certificate", a.rest())
	})
	t.Run("NonMemberStateTransfer", func(t *testing.T) {
		a := dialPeer(t, n2.PeerAddr, ca.tlsConfig(t, "intruder"))
		if refusal, err := a.hello(0xbad); err != nil || refusal != "" {
			t.Fatalf("hello: %q %v", refusal, err) // a would-be joiner is let in
		}
		a.send(peerStateTransfer, []byte(`{"joiner":"intruder"}`))
		noRows("a non-member's state transfer request", a.rest())
		waitNodeLog(t, n2, "refused a request from a peer that is not a member")
	})
	t.Run("ForgedLeave", func(t *testing.T) {
		// the intruder's certificate does not carry n3's name
		a := dialPeer(t, n1.PeerAddr, ca.tlsConfig(t, "intruder"))
		if refusal, err := a.hello(id3); err != nil || refusal != "" {
			t.Fatalf("hello: %q %v", refusal, err)
		}
		a.send(peerLeave, []byte("{}"))
		if got := a.rest(); len(got) > 0 {
			t.Fatalf("a forged leave was answered: %q", got)
		}
		stillThree("forged leave")
	})
	t.Run("WrongFrom", func(t *testing.T) {
		// n3's own credentials, sending a raft message as n1
		a := dialPeer(t, n2.PeerAddr, ca.tlsConfig(t, "n3"))
		if refusal, err := a.hello(id3); err != nil || refusal != "" {
			t.Fatalf("hello: %q %v", refusal, err)
		}
		term := uint64(1 << 40)
		msg, _ := proto.Marshal(&pb.Message{Type: pb.MsgHeartbeat.Enum(), From: &id1, To: &id2, Term: &term})
		a.send(peerRaft, msg)
		waitNodeLog(t, n2, "dropped a raft message whose sender is not the connection's peer")
		if got, _ := statusField(t, n2, "term").(float64); uint64(got) >= term {
			t.Fatalf("n2 took the forged message's term %v", got)
		}
	})
	t.Run("FakeJoin", func(t *testing.T) {
		for _, j := range []struct {
			name  string
			flags []string
		}{
			{"n4", other.flags("n4", "required")}, // another CA
			{"n6", nil},                           // no certificate
			{"n7", ca.flags("n5", "required")},    // a certificate for another name
		} {
			n := testcluster.NewNode(t, j.name, append(j.flags, "--join", n1.PeerAddr)...)
			if err := n.StartNoWait(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(60 * time.Second); n.Running(); time.Sleep(100 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s (%v) is still running: it should have been refused\n%s", j.name, j.flags, n.LogTail(20))
				}
			}
			t.Logf("%s refused: %s", j.name, n.LogTail(1))
		}
		stillThree("fake joins")
	})
	t.Run("Replay", func(t *testing.T) { replayCaptured(t, c, noRows) })
}

// replayCaptured moves c's n1 to another port, puts a relay on its old
// one (which the others still dial) that records what they send n1 while
// a balance goes up and down again, then replays each recorded connection
// at n1: nothing may cross back (noRows) and the balance must stay 0 on
// every node.
func replayCaptured(t *testing.T, c *testcluster.Cluster, noRows func(string, []byte)) {
	n1, n2 := c.Nodes[0], c.Nodes[1]
	n1.Stop()
	old := n1.PeerAddr
	n1.PeerAddr = testcluster.FreePort(t)
	r := startRelay(t, old, n1.PeerAddr)
	n1.Start()
	awaitApplied(t, c)
	db2 := n2.DB("bank")
	mustExec(t, db2, "UPDATE acct SET balance = balance + 100 WHERE id = 1")
	mustExec(t, db2, "UPDATE acct SET balance = balance - 100 WHERE id = 1")
	awaitApplied(t, c)
	captured := r.captured()
	if len(captured) == 0 {
		t.Fatal("the relay captured nothing")
	}
	for _, b := range captured {
		a := dialPeer(t, n1.PeerAddr, nil)
		_, _ = a.c.Write(b)
		noRows("replayed connection", a.rest())
	}
	awaitApplied(t, c)
	for _, n := range c.Nodes {
		if b := qInt(t, adhoc(n, "bank"), "SELECT balance FROM acct WHERE id = 1"); b != 0 {
			t.Fatalf("%s: balance %d after the replay, want 0", n.Name, b)
		}
	}
}

// TestPeerSecret attacks a cluster whose members share a secret (from
// --cluster-secret-file) and no certificates: a stranger's hello and
// state transfer request get no rows, and captured connections replayed
// (the hello, the write-sets) apply nothing: the listener challenges each
// connection with a fresh nonce and every record carries a MAC of that
// connection's keys. (A node with another secret: TestAdminToken.)
func TestPeerSecret(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret-of-the-cluster\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startPeerCluster(t, func(string) []string { return []string{"--cluster-secret-file", secret} })
	n1, n2 := c.Nodes[0], c.Nodes[1]
	for _, n := range c.Nodes {
		if got := statusField(t, n, "peer_security"); got != "secret" {
			t.Fatalf("%s: peer_security %v, want secret", n.Name, got)
		}
	}
	const marker = "peersecret-marker-51c2"
	db := n1.DB("")
	mustExec(t, db, "CREATE DATABASE bank")
	mustExec(t, db, "CREATE TABLE bank.acct (id INT PRIMARY KEY, balance INT, note VARCHAR(40))")
	mustExec(t, db, "INSERT INTO bank.acct VALUES (1, 0, ?)", marker)
	awaitApplied(t, c)
	noRows := func(what string, got []byte) {
		t.Helper()
		if bytes.Contains(got, []byte(marker)) {
			t.Fatalf("%s: a row crossed to the attacker", what)
		}
	}
	t.Run("ForgedHello", func(t *testing.T) {
		a := dialPeer(t, n2.PeerAddr, nil)
		_, _ = a.hello(nodeID(t, n1))
		a.send(peerStateTransfer, []byte("{}"))
		noRows("state transfer request after a forged hello", a.rest())
	})
	t.Run("Replay", func(t *testing.T) { replayCaptured(t, c, noRows) })
}

// relay forwards connections from its address to target and keeps what
// each client sent.
type relay struct {
	mu   sync.Mutex
	sent []*bytes.Buffer
}

func startRelay(t *testing.T, addr, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r := &relay{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.forward(c, target)
		}
	}()
	return r
}

func (r *relay) forward(c net.Conn, target string) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	buf := &bytes.Buffer{}
	r.mu.Lock()
	r.sent = append(r.sent, buf)
	r.mu.Unlock()
	go func() {
		_, _ = io.Copy(c, up)
		c.Close()
	}()
	_, _ = io.Copy(io.MultiWriter(up, &lockedBuffer{&r.mu, buf}), c)
}

// captured returns a copy of what each connection's client sent so far.
func (r *relay) captured() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]byte
	for _, b := range r.sent {
		if b.Len() > 0 {
			out = append(out, bytes.Clone(b.Bytes()))
		}
	}
	return out
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestPeerOpenLoopbackOnly: a node with neither a secret nor certificates
// refuses a peer address beyond loopback, and says what to set.
func TestPeerOpenLoopbackOnly(t *testing.T) {
	out, err := testcluster.Command(t, "node", "--data-dir", t.TempDir(), "--peer-addr", "0.0.0.0:0",
		"--sql-addr", testcluster.FreePort(t), "--http-addr", testcluster.FreePort(t))
	if err == nil || !strings.Contains(out, "--peer-cert") || !strings.Contains(out, "--insecure") {
		t.Fatalf("an open node on 0.0.0.0 started or said something else: %v\n%s", err, out)
	}
}

// TestPeerRollingTLS rolls an open cluster to peer TLS one node at a time
// under writes: each node restarts with certificates and --peer-tls
// optional, then each again with required. No commit fails (a statement
// refused with 1047 while a stopping leader hands over, before it ran, is
// run again), and the nodes end with the same data, on TLS.
func TestPeerRollingTLS(t *testing.T) {
	ca := newPeerCA(t, "n1", "n2", "n3")
	c := startPeerCluster(t, func(string) []string { return nil })
	for _, n := range c.Nodes {
		if got := statusField(t, n, "peer_security"); got != "open" {
			t.Fatalf("%s: peer_security %v, want open", n.Name, got)
		}
	}
	mustExec(t, c.Nodes[0].DB(""), "CREATE DATABASE roll")
	mustExec(t, c.Nodes[0].DB("roll"), "CREATE TABLE t (id INT PRIMARY KEY, node INT)")
	awaitApplied(t, c)

	// the writer commits on every node but the one restarting: it holds
	// gate while a statement runs, the restart takes it to change avoid
	var gate sync.RWMutex
	avoid := -1
	pools := make([]*sql.DB, len(c.Nodes))
	for i, n := range c.Nodes {
		pools[i] = adhoc(n, "roll")
	}
	var committed, failed, refused atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for id := 1; ; id++ {
			select {
			case <-stop:
				return
			default:
			}
			gate.RLock()
			i := id % len(pools)
			if i == avoid {
				i = (i + 1) % len(pools)
			}
			_, err := pools[i].Exec("INSERT INTO t VALUES (?, ?)", id, i)
			for try := 0; err != nil && try < 50; try++ {
				// 1047: the node knew no leader for a moment (a stopping
				// leader hands over) and refused the statement before it
				// ran; an INSERT that did commit fails again with 1062
				if code, _ := mysqlErr(err); code != 1047 {
					break
				}
				refused.Add(1)
				time.Sleep(20 * time.Millisecond)
				_, err = pools[i].Exec("INSERT INTO t VALUES (?, ?)", id, i)
			}
			gate.RUnlock()
			if err != nil {
				failed.Add(1)
				t.Errorf("commit %d on %s failed: %v", id, c.Nodes[i].Name, err)
			} else {
				committed.Add(1)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	restart := func(i int, mode string) {
		t.Helper()
		gate.Lock()
		avoid = i
		gate.Unlock()
		n := c.Nodes[i]
		n.Stop()
		n.Args = append(ca.flags(n.Name, mode), n.Args[len(n.Args)-joinArgs(n):]...)
		n.Start()
		before := committed.Load()
		for deadline := time.Now().Add(30 * time.Second); committed.Load() < before+20; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no commits after %s restarted", n.Name)
			}
		}
		gate.Lock()
		pools[i] = adhoc(n, "roll")
		avoid = -1
		gate.Unlock()
	}
	for _, mode := range []string{"optional", "required"} {
		for i := range c.Nodes {
			restart(i, mode)
		}
	}
	close(stop)
	<-done
	if failed.Load() > 0 {
		t.Fatalf("%d commits failed", failed.Load())
	}
	awaitApplied(t, c)
	var addrs []string
	for _, n := range c.Nodes {
		if got := statusField(t, n, "peer_security"); got != "tls" {
			t.Fatalf("%s: peer_security %v, want tls", n.Name, got)
		}
		if k := qInt(t, adhoc(n, "roll"), "SELECT COUNT(*) FROM t"); k != committed.Load() {
			t.Fatalf("%s has %d rows, %d commits succeeded", n.Name, k, committed.Load())
		}
		addrs = append(addrs, n.SQLAddr)
	}
	if out, err := testcluster.Command(t, "checksum", "--sql-addr", strings.Join(addrs, ",")); err != nil {
		t.Fatalf("checksums differ: %v\n%s", err, out)
	}
	t.Logf("%d commits during the roll; %d statements refused with 1047 during a leader handover and run again", committed.Load(), refused.Load())
	a := dialPeer(t, c.Nodes[1].PeerAddr, nil)
	if refusal, err := a.hello(0xbad); err == nil && !strings.Contains(refusal, "requires peer TLS") {
		t.Fatalf("a plain hello after the roll got %q", refusal)
	}
}

// joinArgs is how many of n's trailing arguments are its --join.
func joinArgs(n *testcluster.Node) int {
	if k := len(n.Args); k >= 2 && n.Args[k-2] == "--join" {
		return 2
	}
	return 0
}
