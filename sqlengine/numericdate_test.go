package sqlengine

import "testing"

func TestNumberAsDate(t *testing.T) {
	for in, want := range map[string]string{
		"0":              "0000-00-00",
		"20240105":       "2024-01-05",
		"240105":         "2024-01-05",
		"700105":         "1970-01-05",
		"691231":         "2069-12-31",
		"20240105103001": "2024-01-05 10:30:01",
		"240105103001":   "2024-01-05 10:30:01",
		"20241301":       "",
		"20240100":       "",
		"20240105246000": "",
		"12345":          "",
		"1":              "",
	} {
		got, ok := numberAsDate(in)
		if ok != (want != "") || got != want {
			t.Errorf("numberAsDate(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
