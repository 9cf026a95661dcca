package mysqlexpr

import "testing"

func TestDecimalMicros(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1.5", 1_500_000, true},
		{"-1.5", -1_500_000, true},
		{"+0.25", 250_000, true},
		{".5", 500_000, true},
		{"2.", 2_000_000, true},
		{"0.000001", 1, true},
		{"0.0000009", 0, true}, // past the sixth digit: dropped, as MariaDB does
		{"123456789012.999999", 123456789012_999999, true},
		{"1234567890123.5", 0, false}, // too many digits
		{"1", 0, false},               // whole: go-mysql-server's own answer is right
		{".", 0, false},
		{"1.5e3", 0, false},
		{"1:30", 0, false},
		{"", 0, false},
		{"--1.5", 0, false},
	} {
		got, ok := decimalMicros(c.in)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("decimalMicros(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
