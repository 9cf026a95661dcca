package comstatistics

import "testing"

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		c    Counts
		want string
	}{
		{Counts{}, "Uptime: 0  Threads: 0  Questions: 0  Slow queries: 0  Opens: 0  Flush tables: 0  Open tables: 0  Queries per second avg: 0.000"},
		{Counts{Uptime: 8, Threads: 2, Questions: 3, SlowQueries: 1, Opens: 4, FlushTables: 5, OpenTables: 6},
			"Uptime: 8  Threads: 2  Questions: 3  Slow queries: 1  Opens: 4  Flush tables: 5  Open tables: 6  Queries per second avg: 0.375"},
	} {
		if got := Line(tc.c); got != tc.want {
			t.Errorf("Line(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}
