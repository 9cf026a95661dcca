package comrefresh

import "testing"

func TestStatement(t *testing.T) {
	for _, tc := range []struct {
		flags byte
		want  string
	}{
		{0, "FLUSH LOGS"},
		{Log, "FLUSH LOGS"},
		{Threads, "FLUSH LOGS"},
		{Tables | Replica | Source, "FLUSH LOGS"},
		{Grant, "FLUSH PRIVILEGES"},
		// mysqladmin refresh
		{Grant | Log | Tables | Hosts | Status | Threads, "FLUSH PRIVILEGES, LOGS, HOSTS, STATUS"},
	} {
		if got := Statement(tc.flags); got != tc.want {
			t.Errorf("Statement(%#x) = %q, want %q", tc.flags, got, tc.want)
		}
	}
}
