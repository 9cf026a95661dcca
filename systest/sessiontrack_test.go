package systest

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// protoClient is a minimal MySQL client speaking the protocol by hand, to see
// what go-sql-driver does not expose: the session-state block of OK packets.
type protoClient struct {
	c   net.Conn
	r   *bufio.Reader
	seq byte
}

const (
	capLongPassword   = 1
	capProtocol41     = 1 << 9
	capTransactions   = 1 << 13
	capSecureConn     = 1 << 15
	capPluginAuth     = 1 << 19
	capSessionTrack   = 1 << 23
	capDeprecateEOF   = 1 << 24
	serverStateChange = 0x4000
)

func (rc *protoClient) readPacket() ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(rc.r, h[:]); err != nil {
		return nil, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	rc.seq = h[3] + 1
	p := make([]byte, n)
	_, err := io.ReadFull(rc.r, p)
	return p, err
}

func (rc *protoClient) writePacket(p []byte) error {
	h := []byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), rc.seq}
	_, err := rc.c.Write(append(h, p...))
	return err
}

func dialProto(t *testing.T, addr string, caps uint32) (*protoClient, uint32) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	rc := &protoClient{c: c, r: bufio.NewReader(c)}
	greet, err := rc.readPacket()
	if err != nil {
		t.Fatal(err)
	}
	// read the server's capabilities from the greeting
	i := 1 + strings.IndexByte(string(greet[1:]), 0) + 1 + 4 + 8 + 1
	server := uint32(binary.LittleEndian.Uint16(greet[i:]))
	server |= uint32(binary.LittleEndian.Uint16(greet[i+5:])) << 16
	resp := binary.LittleEndian.AppendUint32(nil, caps)
	resp = binary.LittleEndian.AppendUint32(resp, 1<<24)
	resp = append(resp, 33) // utf8
	resp = append(resp, make([]byte, 23)...)
	resp = append(resp, "root"...)
	resp = append(resp, 0, 0) // user NUL, empty auth response
	resp = append(resp, "mysql_native_password"...)
	resp = append(resp, 0)
	if err := rc.writePacket(resp); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := rc.readPacket()
		if err != nil {
			t.Fatal(err)
		}
		switch p[0] {
		case 0x00:
			return rc, server
		case 0xff:
			t.Fatalf("auth failed: %s", p[9:])
		case 0xfe: // auth switch: answer with an empty password
			if err := rc.writePacket(nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// query sends COM_QUERY and returns the OK packet (failing on errors or
// result sets).
func (rc *protoClient) query(t *testing.T, q string) []byte {
	t.Helper()
	rc.seq = 0
	if err := rc.writePacket(append([]byte{0x03}, q...)); err != nil {
		t.Fatal(err)
	}
	p, err := rc.readPacket()
	if err != nil {
		t.Fatal(err)
	}
	if p[0] == 0xff {
		t.Fatalf("%s: %s", q, p[9:])
	}
	if p[0] != 0x00 {
		t.Fatalf("%s: not an OK packet: %x", q, p)
	}
	return p
}

func protoLenEnc(p []byte) (uint64, int) {
	switch p[0] {
	case 0xfc:
		return uint64(binary.LittleEndian.Uint16(p[1:])), 3
	case 0xfd:
		return uint64(p[1]) | uint64(p[2])<<8 | uint64(p[3])<<16, 4
	case 0xfe:
		return binary.LittleEndian.Uint64(p[1:]), 9
	}
	return uint64(p[0]), 1
}

// sessionGTID parses an OK packet of a session-tracking connection and
// returns the GTID in its session state, or "".
func sessionGTID(t *testing.T, ok []byte) string {
	i := 1
	for k := 0; k < 2; k++ {
		_, n := protoLenEnc(ok[i:])
		i += n
	}
	status := binary.LittleEndian.Uint16(ok[i:])
	i += 4
	if status&serverStateChange == 0 {
		return ""
	}
	infoLen, n := protoLenEnc(ok[i:])
	i += n + int(infoLen)
	stateLen, n := protoLenEnc(ok[i:])
	i += n
	state := ok[i : i+int(stateLen)]
	for j := 0; j < len(state); {
		typ := state[j]
		l, n := protoLenEnc(state[j+1:])
		data := state[j+1+n : j+1+n+int(l)]
		j += 1 + n + int(l)
		if typ == 0x03 {
			gl, gn := protoLenEnc(data[1:])
			return string(data[1+gn : 1+gn+int(gl)])
		}
	}
	return ""
}

// TestOKPacketCarriesGTID checks that with session_track_gtids=OWN_GTID the
// OK packet of a commit carries the GTID that WSREP_LAST_WRITTEN_GTID()
// reports, and that clients without session tracking are unaffected.
func TestOKPacketCarriesGTID(t *testing.T) {
	n := testcluster.NewNode(t, "n1")
	n.Start()
	mustExec(t, n.DB(""), "CREATE DATABASE g")
	mustExec(t, n.DB(""), "CREATE TABLE g.t (id INT PRIMARY KEY, v INT)")

	rc, server := dialProto(t, n.SQLAddr, capLongPassword|capProtocol41|capTransactions|capSecureConn|capPluginAuth|capSessionTrack)
	defer rc.c.Close()
	if server&capSessionTrack == 0 {
		t.Fatal("server does not advertise CLIENT_SESSION_TRACK")
	}
	rc.query(t, "SET SESSION session_track_gtids = 'OWN_GTID'")
	ok := rc.query(t, "INSERT INTO g.t VALUES (1, 1)")
	gtid := sessionGTID(t, ok)
	if gtid == "" {
		t.Fatalf("no GTID in the OK packet of a commit: %x", ok)
	}
	var want string
	db := n.DB("")
	if err := db.QueryRow("SELECT CONCAT(@@wsrep_cluster_name, '')").Scan(new(string)); err != nil {
		t.Fatal(err)
	}
	// the GTID names this node's last write; the next write's GTID is larger
	ok2 := rc.query(t, "UPDATE g.t SET v = 2 WHERE id = 1")
	gtid2 := sessionGTID(t, ok2)
	if gtid2 == "" || gtid2 == gtid {
		t.Fatalf("second commit's GTID %q (first %q)", gtid2, gtid)
	}
	if !strings.Contains(gtid, ":") {
		t.Fatalf("GTID %q is not uuid:seqno", gtid)
	}
	// a read-only statement carries no GTID
	if g := sessionGTID(t, rc.query(t, "SET @x = 1")); g != "" {
		t.Fatalf("SET carried GTID %q", g)
	}
	// the same GTID through the SQL function, on a go-sql-driver session
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "INSERT INTO g.t VALUES (2, 2)"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(t.Context(), "SELECT WSREP_LAST_WRITTEN_GTID()").Scan(&want); err != nil {
		t.Fatal(err)
	}
	if want == "" || strings.Split(want, ":")[0] != strings.Split(gtid, ":")[0] {
		t.Fatalf("WSREP_LAST_WRITTEN_GTID() = %q, OK packet GTID %q: different clusters", want, gtid)
	}
	// without CLIENT_SESSION_TRACK the OK packet is plain
	plain, _ := dialProto(t, n.SQLAddr, capLongPassword|capProtocol41|capTransactions|capSecureConn|capPluginAuth)
	defer plain.c.Close()
	plain.query(t, "SET SESSION session_track_gtids = 'OWN_GTID'")
	okp := plain.query(t, "INSERT INTO g.t VALUES (3, 3)")
	i := 1
	for k := 0; k < 2; k++ {
		_, n := protoLenEnc(okp[i:])
		i += n
	}
	if binary.LittleEndian.Uint16(okp[i:])&serverStateChange != 0 {
		t.Fatalf("session state sent to a client that did not ask for it: %x", okp)
	}

}
