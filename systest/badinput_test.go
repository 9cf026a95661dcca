package systest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"net"
	"strings"
	"testing"
	"time"
)

// expectation is what a bad statement must produce.
type expectation int

const (
	wantCode    expectation = iota // the given MySQL error code (and SQLSTATE if set)
	wantAnyErr                     // some MySQL error (code != 0)
	wantAnswer                     // MySQL may accept it; the server must answer either way
	wantSuccess                    // valid after all (control case)
)

// TestBadInput feeds malformed SQL, bad variable values and an oversized
// packet to a node; each must fail with a MySQL error (or be answered), and
// the node must keep working.
func TestBadInput(t *testing.T) {
	n, db := startNode(t, "bad1", "b")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10))")
	xexec(t, db, "INSERT INTO t VALUES (1, 'a')")

	long := func(k int) string { return strings.Repeat("x", k) }
	rnd := rand.New(rand.NewSource(42))
	garbage := make([]byte, 4096)
	rnd.Read(garbage)
	garbage[0] = 0x01

	cases := []struct {
		name  string
		query string
		want  expectation
		code  uint16
		state string
	}{
		{"MisspelledKeyword", "SELEC 1", wantCode, 1064, "42000"},
		{"UnterminatedSingleQuote", "SELECT 'unterminated", wantCode, 1064, "42000"},
		{"UnterminatedDoubleQuote", `SELECT "unterminated`, wantCode, 1064, "42000"},
		{"UnterminatedBacktick", "SELECT `unterminated FROM t", wantCode, 1064, "42000"},
		{"UnterminatedComment", "SELECT 1 /* no end", wantCode, 1064, "42000"},
		{"DanglingOr", "SELECT * FROM t WHERE id = 1 OR", wantCode, 1064, "42000"},
		{"UnbalancedParens", "SELECT ((((1)", wantCode, 1064, "42000"},
		{"CloseParenOnly", "SELECT )", wantCode, 1064, "42000"},
		{"IncompleteInsert", "INSERT INTO t VALUES (", wantCode, 1064, "42000"},
		{"BareCreateTable", "CREATE TABLE", wantCode, 1064, "42000"},
		{"BareDrop", "DROP", wantCode, 1064, "42000"},
		{"DanglingUnion", "SELECT 1 FROM t UNION", wantCode, 1064, "42000"},
		{"NegativeLimit", "SELECT * FROM t LIMIT -1", wantCode, 1064, "42000"},
		{"EmptyQuery", "", wantCode, 1065, "42000"},
		{"WhitespaceQuery", "   \n\t ", wantCode, 1065, "42000"},
		// go-sql-driver does not set CLIENT_MULTI_STATEMENTS here, so MySQL
		// rejects a second statement as a syntax error.
		{"MultiStatementWithoutFlag", "SELECT 1; SELECT 2", wantCode, 1064, "42000"},
		{"HugeIntoIntColumn", "INSERT INTO t (id) VALUES (99999999999999999999999999999)", wantCode, 1264, "22003"},
		{"HugeNegativeIntoIntColumn", "INSERT INTO t (id) VALUES (-99999999999999999999999999999)", wantCode, 1264, "22003"},
		{"DoubleOverflowLiteral", "SELECT 1e999999", wantAnyErr, 0, ""},
		{"HugeLimit", "SELECT * FROM t LIMIT 99999999999999999999999999", wantAnswer, 0, ""},
		{"HugeLiteralSelect", "SELECT " + strings.Repeat("9", 200), wantAnswer, 0, ""},
		{"HugeLiteralCompare", "SELECT * FROM t WHERE id = " + strings.Repeat("9", 200), wantAnswer, 0, ""},
		{"BinaryGarbage", string(garbage), wantAnyErr, 0, ""},
		{"NULBytes", "SELECT \x00\x00\x00 1", wantAnyErr, 0, ""},
		{"HighBytesPrefix", "\xff\xfe\xfd SELECT 1", wantAnyErr, 0, ""},
		{"InvalidUTF8InString", "SELECT '\xff\xfe\xc3\x28'", wantAnswer, 0, ""},
		{"IdentifierOf64Chars", "CREATE TABLE " + long(64) + " (id INT PRIMARY KEY)", wantSuccess, 0, ""},
		{"TableNameTooLong", "CREATE TABLE " + long(65) + " (id INT PRIMARY KEY)", wantCode, 1059, "42000"},
		{"ColumnNameTooLong", "CREATE TABLE tl (" + long(65) + " INT PRIMARY KEY)", wantCode, 1059, "42000"},
		{"DatabaseNameTooLong", "CREATE DATABASE " + long(65), wantCode, 1059, "42000"},
		{"HugeIdentifierSelect", "SELECT * FROM " + long(100000), wantAnyErr, 0, ""},
		{"HugeQuotedIdentifier", "SELECT `" + long(100000) + "` FROM t", wantAnyErr, 0, ""},
		{"DeepNesting", "SELECT " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000), wantAnswer, 0, ""},
		{"ManyTokens", "SELECT 1" + strings.Repeat(" +", 100000), wantAnyErr, 0, ""},
	}
	t.Run("MalformedSQL", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c := conn(t, db)
				err := tryExec(c, tc.query)
				code, state := mysqlErr(err)
				switch tc.want {
				case wantCode:
					if tc.state != "" {
						wantErr(t, err, tc.code, tc.state)
					} else if code != tc.code {
						t.Fatalf("want error %d, got %s", tc.code, errDesc(err))
					}
				case wantAnyErr:
					if err == nil {
						t.Fatalf("succeeded, want an error")
					}
					if code == 0 {
						t.Fatalf("want a MySQL error, got a non-MySQL error (connection dropped?): %v", err)
					}
					t.Logf("observed %d (%s)", code, state)
				case wantAnswer:
					if err != nil && code == 0 {
						t.Fatalf("want a result or a MySQL error, got a non-MySQL error (connection dropped?): %v", err)
					}
					t.Logf("observed %s", errDesc(err))
				case wantSuccess:
					if err != nil {
						t.Fatalf("want success, got %s", errDesc(err))
					}
				}
				// A bad statement must not cost the client its connection.
				if v := qInt(t, c, "SELECT 1"); v != 1 {
					t.Fatalf("SELECT 1 on the same connection = %d", v)
				}
			})
		}
	})

	t.Run("BadVariableValues", func(t *testing.T) {
		// Integer system variables out of range: MySQL clamps them with
		// warning 1292 instead of failing; an error is accepted too, but
		// the variable must never hold the out-of-range value.
		type varCase struct {
			set      string
			variable string
			codes    []uint16 // acceptable error codes
			clampOK  bool     // success with a clamped value is acceptable
			lo, hi   int64    // valid range of a clamped value
		}
		wrongValue := []uint16{1231, 1232}
		vcs := []varCase{
			{"SET SESSION wsrep_sync_wait = 'abc'", "wsrep_sync_wait", wrongValue, false, 0, 0},
			{"SET SESSION wsrep_sync_wait = 99", "wsrep_sync_wait", wrongValue, true, 0, 15},
			{"SET SESSION wsrep_sync_wait = -1", "wsrep_sync_wait", wrongValue, true, 0, 15},
			{"SET innodb_lock_wait_timeout = -5", "innodb_lock_wait_timeout", wrongValue, true, 1, 1073741824},
			{"SET SESSION innodb_lock_wait_timeout = 'soon'", "innodb_lock_wait_timeout", wrongValue, false, 0, 0},
			{"SET @@nonexistent_var = 1", "", []uint16{1193}, false, 0, 0},
			{"SET SESSION nonexistent_var = 1", "", []uint16{1193}, false, 0, 0},
			{"SET autocommit = 'maybe'", "autocommit", wrongValue, false, 0, 0},
			{"SET SESSION transaction_isolation = 'SOMETIMES'", "transaction_isolation", wrongValue, false, 0, 0},
			{"SET SESSION wsrep_trx_fragment_unit = 'parsecs'", "wsrep_trx_fragment_unit", wrongValue, false, 0, 0},
			{"SELECT @@nonexistent_var", "", []uint16{1193}, false, 0, 0},
		}
		for _, vc := range vcs {
			t.Run(vc.set, func(t *testing.T) {
				c := conn(t, db)
				var before string
				if vc.variable != "" {
					before = qStr(t, c, "SELECT @@SESSION."+vc.variable)
				}
				err := tryExec(c, vc.set)
				code, state := mysqlErr(err)
				t.Logf("observed %s", errDesc(err))
				switch {
				case err == nil && !vc.clampOK:
					t.Errorf("succeeded, want an error %v", vc.codes)
				case err == nil:
					v := qInt(t, c, "SELECT @@SESSION."+vc.variable)
					if v < vc.lo || v > vc.hi {
						t.Errorf("accepted and stored %s = %d, outside its range [%d, %d]", vc.variable, v, vc.lo, vc.hi)
					}
					t.Logf("accepted and clamped to %d", v)
				case code == 0:
					t.Errorf("want a MySQL error, got a non-MySQL error (connection dropped?): %v", err)
				default:
					ok := false
					for _, w := range vc.codes {
						ok = ok || code == w
					}
					if !ok {
						t.Errorf("got error %d (%s), want one of %v (MySQL's specific code, not the generic 1105)", code, state, vc.codes)
					}
					if vc.variable != "" {
						if after := qStr(t, c, "SELECT @@SESSION."+vc.variable); after != before {
							t.Errorf("a rejected SET changed %s from %q to %q", vc.variable, before, after)
						}
					}
				}
				if v := qInt(t, c, "SELECT 1"); v != 1 {
					t.Fatalf("SELECT 1 on the same connection = %d", v)
				}
			})
		}
	})

	t.Run("ProtocolGarbage", func(t *testing.T) {
		// Garbage instead of a handshake response: the server may close
		// the connection, and must go on serving others.
		for i := 0; i < 3; i++ {
			nc, err := net.DialTimeout("tcp", n.SQLAddr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 4096)
			if _, err := nc.Read(buf); err != nil { // server greeting
				t.Fatalf("reading the server greeting: %v", err)
			}
			junk := make([]byte, 1<<16)
			rnd.Read(junk)
			if i == 1 {
				// a packet header announcing a 16 MB payload that never comes
				junk = []byte{0xff, 0xff, 0xff, 0x01}
			}
			_, _ = nc.Write(junk)
			_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, _ = nc.Read(buf)
			nc.Close()
		}
		if v := qInt(t, conn(t, db), "SELECT COUNT(*) FROM t"); v != 1 {
			t.Fatalf("COUNT(*) = %d after protocol garbage, want 1", v)
		}
	})

	t.Run("PacketLargerThanMaxAllowedPacket", func(t *testing.T) {
		const size = 80 << 20
		maxPkt := qInt(t, db, "SELECT @@GLOBAL.max_allowed_packet")
		t.Logf("@@GLOBAL.max_allowed_packet = %d", maxPkt)
		if maxPkt >= size {
			// MySQL's default is 64 MB; set it so the 80 MB query exceeds it.
			if err := tryExec(db, "SET GLOBAL max_allowed_packet = 67108864"); err != nil {
				t.Fatalf("SET GLOBAL max_allowed_packet = 64MB: %s", errDesc(err))
			}
			defer func() { _ = tryExec(db, fmt.Sprintf("SET GLOBAL max_allowed_packet = %d", maxPkt)) }()
		}
		// The driver refuses to send more than its own maxAllowedPacket
		// (64 MB by default); raise it so the query really reaches the server.
		big, err := sql.Open("mysql", n.DSN("b")+"&maxAllowedPacket=268435456")
		if err != nil {
			t.Fatal(err)
		}
		defer big.Close()
		c := conn(t, big)
		if v := qInt(t, c, "SELECT @@SESSION.max_allowed_packet"); v >= size {
			t.Fatalf("session max_allowed_packet = %d on a new connection, not below the %d byte query", v, size)
		}
		q := "SELECT LENGTH('" + strings.Repeat("a", size) + "')"
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		var got int64
		err = c.QueryRowContext(ctx, q).Scan(&got)
		cancel()
		q = ""
		code, state := mysqlErr(err)
		t.Logf("80 MB query: %s", errDesc(err))
		if err == nil {
			t.Errorf("an %d byte query above max_allowed_packet was executed (LENGTH = %d); want error 1153 (08S01) or a closed connection", size, got)
		} else if code != 0 && code != 1153 {
			t.Errorf("got error %d (%s), want 1153 (08S01) ER_NET_PACKET_TOO_LARGE", code, state)
		}
		if !n.Running() {
			t.Fatalf("node died after the oversized packet:\n%s", n.LogTail(30))
		}
		if v := qInt(t, conn(t, db), "SELECT COUNT(*) FROM t"); v != 1 {
			t.Fatalf("COUNT(*) = %d on a new connection after the oversized packet, want 1", v)
		}
	})

	// After all of that the node still serves a new connection.
	fresh, err := sql.Open("mysql", n.DSN("b"))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if v := qInt(t, fresh, "SELECT 1"); v != 1 {
		t.Fatalf("SELECT 1 = %d", v)
	}
	if got := qInts(t, fresh, "SELECT id FROM t"); !equalInts(got, []int64{1}) {
		t.Fatalf("table t ids = %v after the bad input, want [1]", got)
	}
	if !n.Running() {
		t.Fatalf("node process is not running")
	}
	if h := n.Health(); h != 200 {
		t.Fatalf("/health = %d, want 200", h)
	}
}
