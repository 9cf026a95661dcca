package sqlengine

import (
	"bytes"
	"testing"
)

// TestFilterReadStatistics feeds a client's bytes to trackConn's read
// filter chunk by chunk: a COM_STATISTICS packet that arrives whole with
// nothing before it is answered and removed, everything else passes
// unchanged, including bytes that look like it inside a larger packet, a
// header split over two reads, and the command after an earlier one in the
// same read (its answer would come before the earlier command's).
func TestFilterReadStatistics(t *testing.T) {
	stats := []byte{1, 0, 0, 0, comStatistics}
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
				b := append([]byte(nil), ch...)
				n := c.filterRead(b)
				passed = append(passed, b[:n]...)
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
