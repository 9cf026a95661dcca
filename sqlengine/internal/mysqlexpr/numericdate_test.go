package mysqlexpr

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

func TestPastMonthEnd(t *testing.T) {
	for in, want := range map[string]string{
		"2024-02-30":          "2024-03-01",
		"2024-02-31 23:59:59": "2024-03-01",
		"2023-02-29":          "2023-03-01",
		"2024-04-31":          "2024-05-01",
		"2024-12-32":          "", // no such day in any month: left alone
		"2024-02-29":          "", // exists
		"2024-12-31":          "",
		"2024-13-01":          "",
		"2024-2-30":           "",
		"2024-02-30x":         "",
		"hello":               "",
	} {
		got, ok := pastMonthEnd(in)
		if got != want || ok != (want != "") {
			t.Errorf("pastMonthEnd(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
