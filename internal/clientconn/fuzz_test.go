package clientconn

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// FuzzServerPackets sends any bytes as a client to the node's protocol
// stack: this package's login handling and limits under the protocol
// library's server (the packet parser of the node: handshake response,
// commands, prepared statement parameters), with a handler that answers
// every statement with an empty result. Property: no panic, and the
// server closes the connection once the client has stopped sending.
func FuzzServerPackets(f *testing.F) {
	login := handshakeResponse("root", "app")
	f.Add(login)
	f.Add(append(append([]byte(nil), login...), command(0, 3, "SELECT 1")...))
	f.Add(append(append([]byte(nil), login...), command(0, 22, "SELECT ?")...))
	f.Add(append(append([]byte(nil), login...),
		command(0, 23, "\x01\x00\x00\x00\x00\x01\x00\x00\x00\x00\x01\x08\x00\x2a\x00\x00\x00\x00\x00\x00\x00")...))
	f.Add(append(append([]byte(nil), login...), command(0, 2, "app")...))
	f.Add(append(append([]byte(nil), login...), command(0, 4, "t\x00")...))
	f.Add(append(append([]byte(nil), login...), command(0, 14, "")...))
	f.Add(append(append([]byte(nil), login...), command(0, 1, "")...))
	f.Add(packet(1, []byte{0x00, 0x0a, 0x00, 0x00, 0, 0, 0, 1, 33}))

	addr := protocolServer(f)

	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			t.Fatalf("no greeting: %v", err)
		}
		if _, err := io.CopyN(io.Discard, c, int64(hdr[0])|int64(hdr[1])<<8|int64(hdr[2])<<16); err != nil {
			t.Fatalf("no greeting: %v", err)
		}
		// the server may close before it has read everything
		_, _ = c.Write(in)
		_ = c.(*net.TCPConn).CloseWrite()
		// a close with unread bytes is a reset, which is an error here too
		if _, err := io.Copy(io.Discard, c); isTimeout(err) {
			t.Fatalf("the server did not close the connection: %v", err)
		}
	})
}

// protocolServer serves the protocol library's server with
// emptyHandler over this package's listener on loopback, until tb ends.
func protocolServer(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	l := Listen(ln, limits(100, 5*time.Second, time.Minute, 1<<20), nil)
	srv, err := mysql.NewListenerWithConfig(mysql.ListenerConfig{
		Listener:   l,
		AuthServer: mysql.NewAuthServerNone(),
		Handler:    emptyHandler{},
	})
	if err != nil {
		tb.Fatal(err)
	}
	go srv.Accept()
	tb.Cleanup(srv.Close)
	return l.Addr().String()
}

// The fuzz target's login seed logs in and its statement is answered, so
// that the fuzzer starts from inputs that reach the command phase.
func TestServerPacketsSeed(t *testing.T) {
	c, err := net.Dial("tcp", protocolServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	readPacket(t, c)
	if _, err := c.Write(handshakeResponse("root", "app")); err != nil {
		t.Fatal(err)
	}
	if ok := readPacket(t, c); ok[0] != 0 {
		t.Fatalf("login answered %q", ok)
	}
	if _, err := c.Write(command(0, 3, "SELECT 1")); err != nil {
		t.Fatal(err)
	}
	if p := readPacket(t, c); p[0] != 0 {
		t.Fatalf("SELECT 1 answered %q, want the OK of an empty result", p)
	}
}

// handshakeResponse is a HandshakeResponse41 packet (sequence 1) that logs
// user in to db with an empty password.
func handshakeResponse(user, db string) []byte {
	caps := uint32(mysql.CapabilityClientProtocol41 | mysql.CapabilityClientSecureConnection |
		mysql.CapabilityClientPluginAuth | mysql.CapabilityClientConnectWithDB)
	p := binary.LittleEndian.AppendUint32(nil, caps)
	p = binary.LittleEndian.AppendUint32(p, 1<<24)
	p = append(p, 33)
	p = append(p, make([]byte, 23)...)
	p = append(append(p, user...), 0)
	p = append(p, 0) // empty auth response
	p = append(append(p, db...), 0)
	p = append(append(p, "mysql_native_password"...), 0)
	return packet(1, p)
}

// command is a command packet (sequence seq) of type cmd with arg.
func command(seq, cmd byte, arg string) []byte {
	return packet(seq, append([]byte{cmd}, arg...))
}

// emptyHandler answers every statement with an empty result.
type emptyHandler struct{}

func (emptyHandler) NewConnection(*mysql.Conn)                   {}
func (emptyHandler) ConnectionClosed(*mysql.Conn)                {}
func (emptyHandler) ConnectionAuthenticated(*mysql.Conn) error   { return nil }
func (emptyHandler) ConnectionAborted(*mysql.Conn, string) error { return nil }
func (emptyHandler) ComInitDB(*mysql.Conn, string) error         { return nil }
func (emptyHandler) WarningCount(*mysql.Conn) uint16             { return 0 }
func (emptyHandler) ComResetConnection(*mysql.Conn) error        { return nil }
func (emptyHandler) ComRegisterReplica(*mysql.Conn, string, uint16, string, string) error {
	return nil
}
func (emptyHandler) ParserOptionsForConnection(*mysql.Conn) (sqlparser.ParserOptions, error) {
	return sqlparser.ParserOptions{}, nil
}
func (emptyHandler) ComQuery(_ context.Context, _ *mysql.Conn, _ string, cb mysql.ResultSpoolFn) error {
	return cb(&sqltypes.Result{}, false)
}
func (emptyHandler) ComMultiQuery(_ context.Context, _ *mysql.Conn, _ string, cb mysql.ResultSpoolFn) (string, error) {
	return "", cb(&sqltypes.Result{}, false)
}
func (emptyHandler) ComPrepare(context.Context, *mysql.Conn, string, *mysql.PrepareData) ([]*querypb.Field, error) {
	return nil, nil
}
func (emptyHandler) ComStmtExecute(_ context.Context, _ *mysql.Conn, _ *mysql.PrepareData, cb func(*sqltypes.Result) error) error {
	return cb(&sqltypes.Result{})
}
