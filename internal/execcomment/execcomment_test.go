package execcomment

import "testing"

func TestRuns(t *testing.T) {
	for _, tc := range []struct {
		rest string
		want bool
	}{
		{" SET NAMES utf8mb4 */", true},
		{"40101 SET NAMES utf8mb4 */", true},
		{"80031 x */", true},
		{"80032 x */", false},
		{"99999 x */", false},
		{"5 x */", true},
		{"4010", true},
		{"", true},
		{"800310 x */", true}, // the version is five digits: 80031, then SQL
	} {
		if got := Runs(tc.rest); got != tc.want {
			t.Errorf("Runs(%q) = %v, want %v", tc.rest, got, tc.want)
		}
	}
}

func TestVersionText(t *testing.T) {
	if got := VersionText(); got != "8.0.31" {
		t.Errorf("VersionText() = %q, want 8.0.31", got)
	}
}
