package sqlengine

import "testing"

func TestNumberIn(t *testing.T) {
	for _, tc := range []struct {
		in       string
		num      string
		trailing bool
		ok       bool
	}{
		{"", "", false, false},
		{"   ", "", false, false},
		{"abc", "", false, false},
		{"-", "", false, false},
		{".", "", false, false},
		{"42", "42", false, true},
		{" \t-42 \n", "-42", false, true},
		{"+3.5", "+3.5", false, true},
		{".5", ".5", false, true},
		{"5.", "5.", false, true},
		{"2e3", "2e3", false, true},
		{"2E-3 ", "2E-3", false, true},
		{"1e", "1", true, true},
		{"1e+", "1", true, true},
		{"3x", "3", true, true},
		{"0x1F", "0", true, true},
		{"7 apples", "7", true, true},
		{"1.2.3", "1.2", true, true},
	} {
		start, end, trailing, ok := numberIn(tc.in)
		if got := tc.in[start:end]; got != tc.num || trailing != tc.trailing || ok != tc.ok {
			t.Errorf("numberIn(%q) = %q, trailing %v, ok %v; want %q, %v, %v", tc.in, got, trailing, ok, tc.num, tc.trailing, tc.ok)
		}
	}
}
