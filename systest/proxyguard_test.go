package systest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
	"github.com/certusdb/certus/proxy/mysqlproto"
)

// processOf returns the node and the thread id of the statement whose text
// contains marker, waiting until one of the nodes runs it.
func processOf(t *testing.T, c *testcluster.Cluster, marker string) (*testcluster.Node, int64) {
	t.Helper()
	for deadline := time.Now().Add(opTimeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, n := range c.Nodes {
			if id := threadRunning(t, n, marker); id != 0 {
				return n, id
			}
		}
	}
	t.Fatalf("no node runs the statement %s", marker)
	return nil, 0
}

// threadRunning returns the id of n's thread running a statement that
// contains marker, or 0.
func threadRunning(t *testing.T, n *testcluster.Node, marker string) int64 {
	t.Helper()
	ids := qInts(t, n.DB(""), "SELECT id FROM information_schema.processlist WHERE info LIKE ? AND info NOT LIKE '%processlist%'", "%"+marker+"%")
	if len(ids) == 0 {
		return 0
	}
	return ids[0]
}

// testProxyNotRetried: a statement whose node connection breaks while the
// node runs it (KILL CONNECTION of the proxy's connection there, as when
// the node crashed on the statement) gets 2013 and is not run again on
// another node, which a statement that crashes nodes would crash too; the
// proxy logs that. Idle pooled connections that a node closed do not
// fail the next statement: it was never delivered, and the pool drops
// them before use.
func testProxyNotRetried(t *testing.T, c *testcluster.Cluster) {
	p := startProxy(t, c, "")
	db := p.DB("", "")
	const marker = "proxy_not_retried"
	node := killDuring(t, c, db, marker)
	for _, n := range c.Nodes {
		if n != node && threadRunning(t, n, marker) != 0 {
			t.Errorf("%s runs the statement after its connection on %s was killed", n.Name, node.Name)
		}
	}
	waitLog(t, p, "not retried on another node", node.Name)
	nodes := map[string]bool{}
	for range 30 {
		nodes[qStr(t, db, "SELECT @@wsrep_node_name")] = true
	}
	if len(nodes) != len(c.Nodes) {
		t.Errorf("reads after the lost statement reached %v, want all %d nodes", nodes, len(c.Nodes))
	}

	// in a transaction the client is closed after the 2013: its next
	// statements would run outside the transaction it believes open
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS px.pooled (id INT PRIMARY KEY)")
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO px.pooled VALUES (100)"); err != nil {
		t.Fatal(err)
	}
	killDuring(t, c, tx, "proxy_txn_lost")
	if _, err := tx.Exec("INSERT INTO px.pooled VALUES (101)"); err == nil {
		t.Error("the session went on after its transaction was lost")
	}
	_ = tx.Rollback()
	if n := qInts(t, db, "SELECT COUNT(*) FROM px.pooled WHERE id >= 100"); n[0] != 0 {
		t.Errorf("%d rows of the lost transaction, or after it, were committed", n[0])
	}

	// the writer closes the proxy's idle connections: the next write runs
	writer := p.writer(t)
	for _, n := range c.Nodes {
		if n.Name != writer {
			continue
		}
		admin := n.DB("")
		own := qInts(t, admin, "SELECT CONNECTION_ID()")[0]
		idle := qInts(t, admin, "SELECT id FROM information_schema.processlist WHERE command = 'Sleep' AND id <> ?", own)
		if len(idle) == 0 {
			t.Fatalf("the proxy holds no idle connection to the writer %s", writer)
		}
		for _, id := range idle {
			_ = tryExec(admin, fmt.Sprintf("KILL CONNECTION %d", id))
		}
	}
	for i := range 5 {
		if _, err := db.Exec("INSERT INTO px.pooled VALUES (?)", i); err != nil {
			t.Fatalf("write after the writer closed the proxy's idle connections: %s", errDesc(err))
		}
	}
}

// killDuring runs a 20-second statement marked with marker on q, kills
// its node connection on the node that runs it, and checks that the
// client gets 2013 for it (retried, it would have answered 0, 20 seconds
// later, from another node). It returns that node.
func killDuring(t *testing.T, c *testcluster.Cluster, q queryer, marker string) *testcluster.Node {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		var v int
		done <- q.QueryRowContext(context.Background(), "SELECT /* "+marker+" */ SLEEP(20)").Scan(&v)
	}()
	node, id := processOf(t, c, marker)
	mustExec(t, node.DB(""), fmt.Sprintf("KILL CONNECTION %d", id))
	select {
	case err := <-done:
		checkErr(t, err, 2013, "HY000", "the statement whose node connection was killed")
	case <-time.After(opTimeout):
		t.Fatal("the statement whose node connection was killed never finished")
	}
	return node
}

// waitLog waits until a line of the proxy's log holds every one of words.
func waitLog(t *testing.T, p *proxyProc, words ...string) {
	t.Helper()
	for deadline := time.Now().Add(opTimeout); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(p.LogPath)
		for _, line := range strings.Split(string(b), "\n") {
			found := true
			for _, w := range words {
				found = found && strings.Contains(line, w)
			}
			if found {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line of the proxy's log holds %q", words)
		}
	}
}

// vmHWM returns the peak resident memory of process pid, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// greeted opens a connection to the proxy and reads its greeting.
func greeted(t *testing.T, addr string) (net.Conn, *mysqlproto.Conn) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := mysqlproto.NewConn(nc)
	c.SetDeadlineIn(opTimeout)
	p, err := c.ReadPacket()
	if err != nil || len(p) == 0 || p[0] != 10 {
		t.Fatalf("no greeting: %x, %v", p, err)
	}
	return nc, c
}

// waitClosed waits until the proxy closes nc, reading whatever it sends.
func waitClosed(nc net.Conn) error {
	_ = nc.SetReadDeadline(time.Now().Add(opTimeout))
	buf := make([]byte, 4096)
	for {
		if _, err := nc.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return err
			}
			return nil
		}
	}
}

// testProxyLoginFlood: 200 connections that never log in, each
// announcing a 16 MiB packet (as its handshake response, or as its answer
// to an authentication switch) and sending megabytes of it, and more that
// send nothing or trickle a login: the proxy's memory stays small, a
// normal client logs in and queries meanwhile, and every one of them is
// closed (the large ones at once, the others by connect_timeout).
func testProxyLoginFlood(t *testing.T, c *testcluster.Cluster) {
	p := startProxy(t, c, `{"max_connections": 1000, "connect_timeout": "5s"}`)
	before := vmHWM(t, p.cmd.Process.Pid)
	const large, quiet = 200, 50
	var wg sync.WaitGroup
	closed := make(chan error, large+2*quiet)
	body := bytes.Repeat([]byte{'x'}, 4<<20)
	for i := range large {
		nc, conn := greeted(t, p.Addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 1 {
				// a login asking for another plugin: the proxy asks it
				// to switch, and the answer is the large packet
				caps := mysqlproto.CapProtocol41 | mysqlproto.CapSecureConnection | mysqlproto.CapPluginAuth
				_ = conn.WritePacket(mysqlproto.AppendHandshakeResponse(nil, mysqlproto.HandshakeResponse{Capabilities: caps,
					User: "root", AuthResponse: []byte{1}, AuthPlugin: mysqlproto.CachingSha2, Charset: 45}))
				_ = conn.Flush()
				if _, err := conn.ReadPacket(); err != nil {
					closed <- fmt.Errorf("no authentication switch: %v", err)
					return
				}
			}
			_, _ = nc.Write([]byte{0xff, 0xff, 0xff, byte(1 + 2*(i%2))})
			_, _ = nc.Write(body)
			closed <- waitClosed(nc)
		}()
	}
	for i := range 2 * quiet {
		nc, _ := greeted(t, p.Addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 1 {
				// a 1000-byte handshake response, a byte every 100 ms
				_, _ = nc.Write([]byte{0xe8, 0x03, 0, 1})
				for {
					time.Sleep(100 * time.Millisecond)
					if _, err := nc.Write([]byte{0}); err != nil {
						break
					}
				}
			}
			closed <- waitClosed(nc)
		}()
	}
	db := p.DB("", "")
	if got := qStr(t, db, "SELECT 'logged in'"); got != "logged in" {
		t.Fatalf("a normal client during the flood got %q", got)
	}
	wg.Wait()
	close(closed)
	for err := range closed {
		if err != nil {
			t.Fatalf("a connection that never logged in: %v", err)
		}
	}
	after := vmHWM(t, p.cmd.Process.Pid)
	t.Logf("proxy's peak RSS: %d MiB before the flood, %d MiB after", before>>20, after>>20)
	if after > 300<<20 {
		t.Errorf("the proxy's peak RSS reached %d MiB under the flood", after>>20)
	}
	if got := qStr(t, db, "SELECT 'still serving'"); got != "still serving" {
		t.Fatalf("after the flood: %q", got)
	}
}

// testProxyMaxConnections: past max_connections, counting connections that
// have not logged in, a client gets 1040 in place of the greeting; once
// one closes, the next gets in.
func testProxyMaxConnections(t *testing.T, c *testcluster.Cluster) {
	p := startProxy(t, c, `{"max_connections": 5}`)
	db := p.DB("", "")
	db.SetMaxIdleConns(1)
	if got := qStr(t, db, "SELECT 'one'"); got != "one" {
		t.Fatalf("got %q", got)
	}
	var open []net.Conn
	for range 4 {
		nc, _ := greeted(t, p.Addr)
		open = append(open, nc)
	}
	nc, err := net.DialTimeout("tcp", p.Addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	conn := mysqlproto.NewConn(nc)
	conn.SetDeadlineIn(opTimeout)
	pkt, err := conn.ReadPacket()
	if err != nil {
		t.Fatalf("the sixth connection: %v", err)
	}
	if e, err := mysqlproto.ParseErr(pkt); err != nil || e.Code != 1040 || e.State != "08004" {
		t.Fatalf("the sixth connection got %x, want error 1040 (08004)", pkt)
	}
	if _, err := conn.ReadPacket(); err == nil {
		t.Fatal("the sixth connection stayed open after 1040")
	}
	checkErr(t, p.DB("", "").Ping(), 1040, "08004", "a sixth connection through the driver")
	open[0].Close()
	for deadline := time.Now().Add(opTimeout); ; time.Sleep(50 * time.Millisecond) {
		nc, err := net.DialTimeout("tcp", p.Addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conn := mysqlproto.NewConn(nc)
		conn.SetDeadlineIn(opTimeout)
		pkt, err := conn.ReadPacket()
		nc.Close()
		if err == nil && len(pkt) > 0 && pkt[0] == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection let in after one of the five closed: %x %v", pkt, err)
		}
	}
}

// testProxyMaxAllowedPacket: a packet whose length, its continuations
// added up, passes max_allowed_packet gets 1153 (08S01) as soon as its
// header says so, and the connection is closed; a large packet within the
// limit runs, and the proxy keeps serving.
func testProxyMaxAllowedPacket(t *testing.T, c *testcluster.Cluster) {
	p := startProxy(t, c, `{"max_allowed_packet": 20971520}`)
	db := p.DB("", "")
	big := strings.Repeat("x", 17<<20) // two wire packets
	if n := qInts(t, db, "SELECT LENGTH('"+big+"')"); len(n) != 1 || n[0] != int64(len(big)) {
		t.Fatalf("a 17 MiB statement within max_allowed_packet: %v", n)
	}
	// a prepared statement's long data past the limit fails its execution
	// (1105, as in MySQL), and the session goes on
	s := dialRaw(t, p.Addr)
	s.c.SetDeadlineIn(opTimeout)
	pok, err := mysqlproto.ParsePrepareOK(s.command(t, append([]byte{mysqlproto.ComStmtPrepare}, "SELECT LENGTH(?)"...)))
	if err != nil || pok.NumParams != 1 {
		t.Fatalf("prepare: %+v %v", pok, err)
	}
	for range int(pok.NumParams) + int(pok.NumColumns) {
		if _, err := s.c.ReadPacket(); err != nil {
			t.Fatal(err)
		}
	}
	id := []byte{byte(pok.StmtID), byte(pok.StmtID >> 8), byte(pok.StmtID >> 16), byte(pok.StmtID >> 24)}
	chunk := append(append(append([]byte{mysqlproto.ComStmtSendLongData}, id...), 0, 0), bytes.Repeat([]byte{'x'}, 1<<20)...)
	for range 21 {
		s.c.ResetSeq()
		if err := s.c.WritePacket(chunk); err != nil {
			t.Fatal(err)
		}
	}
	exec := append(append([]byte{mysqlproto.ComStmtExecute}, id...), 0, 1, 0, 0, 0, 0, 1, 0xfc, 0) // one BLOB parameter, from the long data
	if e, err := mysqlproto.ParseErr(s.command(t, exec)); err != nil || e.Code != 1105 || !strings.Contains(e.Message, "max_allowed_packet") {
		t.Fatalf("execution with 21 MiB of long data: %+v %v, want error 1105 naming max_allowed_packet", e, err)
	}
	if pkt := s.command(t, append([]byte{mysqlproto.ComQuery}, "SELECT 1"...)); pkt[0] != 1 {
		t.Fatalf("the session after the refused execution: %x", pkt)
	}

	s = dialRaw(t, p.Addr)
	s.c.SetDeadlineIn(opTimeout)
	// a full wire packet (so a continuation follows), then the header of
	// a continuation of 5 MiB, and none of its bytes
	stream := make([]byte, 4+1<<24-1, 4+1<<24-1+4)
	copy(stream, []byte{0xff, 0xff, 0xff, 0, mysqlproto.ComQuery})
	stream = append(stream, 0, 0, 0x50, 1)
	if _, err := s.c.Write(stream); err != nil {
		t.Fatal(err)
	}
	pkt, err := s.c.ReadPacket()
	if err != nil {
		t.Fatalf("no answer to a packet over max_allowed_packet: %v", err)
	}
	if e, err := mysqlproto.ParseErr(pkt); err != nil || e.Code != 1153 || e.State != "08S01" {
		t.Fatalf("a packet over max_allowed_packet got %x, want error 1153 (08S01)", pkt)
	}
	if _, err := s.c.ReadPacket(); err == nil {
		t.Fatal("the connection stayed open after 1153")
	}
	if !p.running() {
		t.Fatal("the proxy died")
	}
	if got := qStr(t, db, "SELECT 'still serving'"); got != "still serving" {
		t.Fatalf("after the oversized packet: %q", got)
	}
}

// testProxyWaitTimeout: a logged-in client that sends nothing for
// wait_timeout is told why (4031, as MySQL 8.0 says it) and disconnected.
func testProxyWaitTimeout(t *testing.T, c *testcluster.Cluster) {
	p := startProxy(t, c, `{"wait_timeout": "2s"}`)
	s := dialRaw(t, p.Addr)
	s.c.SetDeadlineIn(opTimeout)
	pkt, err := s.c.ReadPacket()
	if err != nil {
		t.Fatalf("an idle client got no goodbye: %v", err)
	}
	if e, err := mysqlproto.ParseErr(pkt); err != nil || e.Code != 4031 {
		t.Fatalf("an idle client got %x, want error 4031", pkt)
	}
	if _, err := s.c.ReadPacket(); err == nil {
		t.Fatal("the connection stayed open after 4031")
	}
}
