package sqlengine

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/certusdb/certus/internal/comrefresh"
	"github.com/certusdb/certus/internal/comstatistics"
)

// TestFilterReadStatistics feeds a client's bytes to trackConn's read
// filter chunk by chunk: a COM_STATISTICS packet that arrives whole with
// nothing before it is answered and removed, everything else passes
// unchanged, including bytes that look like it inside a larger packet, a
// header split over two reads, and the command after an earlier one in the
// same read (its answer would come before the earlier command's).
func TestFilterReadStatistics(t *testing.T) {
	stats := []byte{1, 0, 0, 0, comstatistics.Command}
	ping := []byte{1, 0, 0, 0, 0x0e}
	query := append([]byte{9, 0, 0, 0, 0x03}, "SELECT 1"...)
	// a COM_QUERY whose text holds the bytes of a COM_STATISTICS packet
	tricky := append([]byte{7, 0, 0, 0, 0x03, 'x'}, stats...)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name    string
		chunks  [][]byte
		pass    []byte
		answers int
	}{
		{"alone", [][]byte{stats}, nil, 1},
		{"then a ping", [][]byte{cat(stats, ping)}, ping, 1},
		{"twice, one read each", [][]byte{stats, stats}, nil, 2},
		{"after a query in the same read", [][]byte{cat(query, stats)}, cat(query, stats), 0},
		{"after a query, next read", [][]byte{query, stats}, query, 1},
		{"inside a query", [][]byte{tricky, stats}, tricky, 1},
		{"query split inside its header", [][]byte{query[:2], query[2:], stats}, query, 1},
		{"query split in its text", [][]byte{query[:7], query[7:], stats}, query, 1},
		{"split over two reads", [][]byte{stats[:3], stats[3:]}, stats, 0},
		{"empty packet then the command", [][]byte{{0, 0, 0, 0}, stats}, []byte{0, 0, 0, 0}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &trackConn{stats: func() string { return "Uptime: 1" }}
			var passed []byte
			for _, ch := range tc.chunks {
				passed = append(passed, c.filterRead(append([]byte(nil), ch...))...)
			}
			if !bytes.Equal(passed, tc.pass) {
				t.Fatalf("passed %v, want %v", passed, tc.pass)
			}
			answer := append([]byte{9, 0, 0, 1}, "Uptime: 1"...)
			if want := bytes.Repeat(answer, tc.answers); !bytes.Equal(c.wbuf, want) {
				t.Fatalf("answered %q, want %q", c.wbuf, want)
			}
		})
	}
}

// TestFilterReadRefresh: a COM_REFRESH (mysqladmin refresh, mysqldump
// --flush-logs) reaches the server as the COM_QUERY of its FLUSH
// statement, followed by what came after it; one that is not alone at the
// start of a read passes unchanged.
func TestFilterReadRefresh(t *testing.T) {
	refresh := []byte{2, 0, 0, 0, comrefresh.Command, comrefresh.Log}
	flushLogs := append([]byte{11, 0, 0, 0, mysql.ComQuery}, "FLUSH LOGS"...)
	ping := []byte{1, 0, 0, 0, 0x0e}
	for _, tc := range []struct {
		name   string
		chunks [][]byte
		pass   []byte
	}{
		{"alone", [][]byte{refresh}, flushLogs},
		{"then a ping", [][]byte{append(append([]byte(nil), refresh...), ping...)}, append(append([]byte(nil), flushLogs...), ping...)},
		{"after a ping", [][]byte{append(append([]byte(nil), ping...), refresh...)}, append(append([]byte(nil), ping...), refresh...)},
		{"split", [][]byte{refresh[:4], refresh[4:]}, refresh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &trackConn{}
			var passed []byte
			for _, ch := range tc.chunks {
				passed = append(passed, c.filterRead(append([]byte(nil), ch...))...)
			}
			if !bytes.Equal(passed, tc.pass) {
				t.Fatalf("passed %q, want %q", passed, tc.pass)
			}
		})
	}
}

// pipeIO is a connection for trackConn in tests: reads come from r,
// writes go to w.
type pipeIO struct {
	net.Conn // nil: only reads, writes and Close are used
	r        io.Reader
	w        bytes.Buffer
}

func (p *pipeIO) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipeIO) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeIO) Close() error                { return nil }

// TestReadRefreshSmallBuffer reads a COM_REFRESH through trackConn.Read
// into a buffer shorter than the COM_QUERY it becomes: that arrives whole
// over several reads, and a COM_STATISTICS before it is answered, not
// read.
func TestReadRefreshSmallBuffer(t *testing.T) {
	// one command per read, as a client sends them
	in := io.MultiReader(bytes.NewReader([]byte{1, 0, 0, 0, comstatistics.Command}),
		bytes.NewReader([]byte{2, 0, 0, 0, comrefresh.Command, comrefresh.Grant | comrefresh.Status}))
	want := append([]byte{25, 0, 0, 0, mysql.ComQuery}, "FLUSH PRIVILEGES, STATUS"...)
	pio := &pipeIO{r: in}
	c := &trackConn{Conn: pio, respSeen: true, stats: func() string { return "x" }}
	var got []byte
	buf := make([]byte, 16)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %q, want %q", got, want)
	}
	if a := pio.w.Bytes(); !bytes.Equal(a, []byte{1, 0, 0, 1, 'x'}) {
		t.Fatalf("answered %q", a)
	}
}
