package mysqlproto

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
)

func TestLenEnc(t *testing.T) {
	for _, v := range []uint64{0, 1, 250, 251, 0xffff, 0x10000, 0xffffff, 0x1000000, 1 << 40} {
		b := AppendLenEnc(nil, v)
		got, null, next, ok := ReadLenEnc(b, 0)
		if !ok || null || got != v || next != len(b) {
			t.Errorf("%d: encoded %x, read %d null=%v next=%d ok=%v", v, b, got, null, next, ok)
		}
		if len(b) > 1 {
			if _, _, _, ok := ReadLenEnc(b[:len(b)-1], 0); ok {
				t.Errorf("%d: truncated encoding %x accepted", v, b[:len(b)-1])
			}
		}
	}
	if _, null, _, ok := ReadLenEnc([]byte{0xfb}, 0); !ok || !null {
		t.Error("0xfb is not read as NULL")
	}
	if _, _, _, ok := ReadLenEnc([]byte{0xff}, 0); ok {
		t.Error("0xff accepted as a length")
	}
}

func TestOKRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		ok   OK
		caps uint32
	}{
		{"plain", OK{AffectedRows: 3, LastInsertID: 7, Status: StatusAutocommit, Warnings: 1, Info: "Rows matched: 3"}, 0},
		{"session track", OK{AffectedRows: 1, Status: StatusInTrans | StatusSessionStateChanged, Info: "x", SessionState: []byte{3, 4, 0, 2, 'a', 'b'}}, CapSessionTrack},
		{"large ids", OK{AffectedRows: 1 << 33, LastInsertID: 70000}, CapSessionTrack},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, hdr := range []byte{HeaderOK, HeaderEOF} {
				p := AppendOK(nil, hdr, tc.ok, tc.caps)
				got, err := ParseOK(p, tc.caps)
				if err != nil {
					t.Fatal(err)
				}
				if got.AffectedRows != tc.ok.AffectedRows || got.LastInsertID != tc.ok.LastInsertID || got.Status != tc.ok.Status ||
					got.Warnings != tc.ok.Warnings || got.Info != tc.ok.Info || !bytes.Equal(got.SessionState, tc.ok.SessionState) {
					t.Fatalf("round trip: %+v -> %x -> %+v", tc.ok, p, got)
				}
			}
		})
	}
	// a client without session tracking gets no state-changed flag
	p := AppendOK(nil, HeaderOK, OK{Status: StatusSessionStateChanged, SessionState: []byte{1}}, 0)
	if got, _ := ParseOK(p, 0); got.Status&StatusSessionStateChanged != 0 {
		t.Fatal("state-changed flag sent to a client without CLIENT_SESSION_TRACK")
	}
}

func TestErrAndEOF(t *testing.T) {
	e := &Error{Code: 1213, State: "40001", Message: "Deadlock found"}
	got, err := ParseErr(AppendErr(nil, e))
	if err != nil || *got != *e {
		t.Fatalf("ERR round trip: %+v %v", got, err)
	}
	eof := AppendEOF(nil, 2, StatusMoreResults)
	if !IsEOF(eof) || !IsResultEnd(eof, 0) {
		t.Fatal("EOF not recognised")
	}
	end, err := ParseResultEnd(eof, 0)
	if err != nil || end.Warnings != 2 || end.Status != StatusMoreResults {
		t.Fatalf("EOF parse: %+v %v", end, err)
	}
	ok := AppendResultEnd(nil, OK{Status: StatusAutocommit}, CapDeprecateEOF)
	if ok[0] != HeaderEOF || !IsResultEnd(ok, CapDeprecateEOF) {
		t.Fatalf("result end under DEPRECATE_EOF: %x", ok)
	}
}

func TestGTIDFromSessionState(t *testing.T) {
	gtid := "c0ffee:42"
	entry := AppendLenEncString([]byte{0}, []byte(gtid)) // encoding spec 0, then the GTID set
	state := append([]byte{SessionTrackSchema}, AppendLenEncString(nil, AppendLenEncString(nil, []byte("db")))...)
	state = append(state, SessionTrackGTIDs)
	state = AppendLenEncString(state, entry)
	if got := GTIDFromSessionState(state); got != gtid {
		t.Fatalf("GTID = %q, want %q", got, gtid)
	}
	if got := GTIDFromSessionState([]byte{SessionTrackGTIDs, 200}); got != "" {
		t.Fatalf("truncated state gave %q", got)
	}
}

func TestHandshake(t *testing.T) {
	salt, err := NewSalt()
	if err != nil {
		t.Fatal(err)
	}
	g := Greeting{ServerVersion: "8.0.31", ConnectionID: 9, Salt: salt, Capabilities: CapProtocol41 | CapSecureConnection | CapPluginAuth | CapDeprecateEOF, Charset: 45, Status: StatusAutocommit, AuthPlugin: NativePassword}
	got, err := ParseGreeting(AppendGreeting(nil, g))
	if err != nil {
		t.Fatal(err)
	}
	if got.ServerVersion != g.ServerVersion || got.ConnectionID != 9 || !bytes.Equal(got.Salt, salt) || got.Capabilities != g.Capabilities || got.AuthPlugin != NativePassword {
		t.Fatalf("greeting round trip: %+v", got)
	}
	for _, caps := range []uint32{CapProtocol41 | CapSecureConnection | CapPluginAuth | CapConnectWithDB, CapProtocol41 | CapPluginAuthLenenc | CapPluginAuth | CapConnectWithDB} {
		h := HandshakeResponse{Capabilities: caps, MaxPacket: 1 << 24, Charset: 45, User: "app", AuthResponse: ScrambleNative(salt, "secret"), Database: "shop", AuthPlugin: NativePassword}
		hr, err := ParseHandshakeResponse(AppendHandshakeResponse(nil, h))
		if err != nil {
			t.Fatal(err)
		}
		if hr.User != "app" || hr.Database != "shop" || hr.AuthPlugin != NativePassword || !CheckNative(salt, hr.AuthResponse, "secret") {
			t.Fatalf("handshake response round trip: %+v", hr)
		}
		if CheckNative(salt, hr.AuthResponse, "wrong") {
			t.Fatal("wrong password accepted")
		}
	}
	if !CheckNative(salt, nil, "") || CheckNative(salt, []byte{1}, "") {
		t.Fatal("empty password check")
	}
}

// TestConnFraming checks packet framing, including payloads that span
// several wire packets and the size limit.
func TestConnFraming(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ca, cb := NewConn(a), NewConn(b)
	big := bytes.Repeat([]byte{7}, maxChunk+10)
	payloads := [][]byte{{}, []byte("hello"), big, bytes.Repeat([]byte{1}, maxChunk)}
	go func() {
		for _, p := range payloads {
			_ = ca.WritePacket(p)
		}
		_ = ca.Flush()
	}()
	for i, want := range payloads {
		got, err := cb.ReadPacket()
		if err != nil {
			t.Fatalf("payload %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("payload %d: %d bytes, want %d", i, len(got), len(want))
		}
	}
	cb.MaxPayload = 100
	go func() {
		_ = ca.WritePacket(make([]byte, 200))
		_ = ca.Flush()
	}()
	if _, err := cb.ReadPacket(); !errors.Is(err, ErrPacketTooLarge) {
		t.Fatalf("oversized payload: %v", err)
	}
}

// streamConn is a connection whose reads come from r (writes are
// dropped).
type streamConn struct {
	net.Conn
	r io.Reader
}

func (s streamConn) Read(b []byte) (int, error)  { return s.r.Read(b) }
func (s streamConn) Write(b []byte) (int, error) { return len(b), nil }

// TestReadPacketAllocatesAsBytesArrive: a peer that announces a large
// payload (a whole 16 MiB wire packet, then a continuation) and sends a few
// bytes of it costs about those bytes, not the length it announced.
func TestReadPacketAllocatesAsBytesArrive(t *testing.T) {
	for _, announced := range [][]byte{{0xff, 0xff, 0xff, 0}, {0xff, 0xff, 0xfe, 0}} {
		stream := append(append([]byte{}, announced...), bytes.Repeat([]byte{1}, 1000)...)
		c := NewConn(streamConn{r: bytes.NewReader(stream)})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := c.ReadPacket(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated payload: %v", err)
		}
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Fatalf("reading 1000 bytes of an announced %d allocated %d bytes", int(announced[0])|int(announced[1])<<8|int(announced[2])<<16, grew)
		}
	}
}

// FuzzClientPackets feeds arbitrary bytes to the packet reader, as a
// connection's stream, and to every parser a client's packets reach: none
// may panic.
func FuzzClientPackets(f *testing.F) {
	f.Add([]byte{})
	f.Add(AppendHandshakeResponse(nil, HandshakeResponse{Capabilities: CapProtocol41 | CapPluginAuthLenenc | CapConnectWithDB | CapPluginAuth, User: "u", AuthResponse: []byte{1, 2}, Database: "d", AuthPlugin: NativePassword}))
	f.Add(AppendOK(nil, HeaderOK, OK{AffectedRows: 1, Status: StatusSessionStateChanged, SessionState: []byte{3, 1, 0}}, CapSessionTrack))
	f.Add([]byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1})
	f.Add([]byte{3, 0, 0, 0, 3, 'S', 'E', 0xff, 0xff, 0xff, 1, 1, 2})
	f.Fuzz(func(t *testing.T, p []byte) {
		// p as the byte stream of a connection: packets are framed and
		// joined, none longer than the limit
		c := NewConn(streamConn{r: bytes.NewReader(p)})
		c.MaxPayload = 100
		for {
			pkt, err := c.ReadPacket()
			if err != nil {
				break
			}
			if len(pkt) > c.MaxPayload {
				t.Fatalf("a %d-byte payload passed the %d-byte limit", len(pkt), c.MaxPayload)
			}
		}
		_, _ = ParseHandshakeResponse(p)
		_, _ = ParseGreeting(p)
		for _, caps := range []uint32{0, CapSessionTrack, CapDeprecateEOF | CapSessionTrack} {
			_, _ = ParseOK(p, caps)
			_, _ = ParseResultEnd(p, caps)
			_ = IsResultEnd(p, caps)
		}
		_, _ = ParseErr(p)
		_, _ = ParsePrepareOK(p)
		_, _, _ = ParseAuthSwitch(p)
		_ = GTIDFromSessionState(p)
		for pos := -1; pos <= len(p); pos++ {
			_, _, _, _ = ReadLenEnc(p, pos)
			_, _, _ = ReadLenEncString(p, pos)
		}
	})
}

// TestCheckSha2 checks caching_sha2_password's fast-path check against
// the scramble a client computes.
func TestCheckSha2(t *testing.T) {
	salt := []byte("0123456789abcdefghij")
	if !CheckSha2(salt, ScrambleSha2(salt, "pw"), "pw") {
		t.Error("the right scramble refused")
	}
	if CheckSha2(salt, ScrambleSha2(salt, "pw"), "other") || CheckSha2(salt, nil, "pw") {
		t.Error("a wrong scramble accepted")
	}
	if !CheckSha2(salt, nil, "") || CheckSha2(salt, []byte{1}, "") {
		t.Error("an empty password: only an empty answer")
	}
}
