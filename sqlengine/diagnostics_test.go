package sqlengine

import "testing"

func TestMySQLTruncatedText(t *testing.T) {
	for in, want := range map[string]string{
		"Incorrect datetime value: '%!s(float64=1000)'": "Incorrect datetime value: '1000'",
		"Incorrect datetime value: '%!s(int8=0)'":       "Incorrect datetime value: '0'",
		"Truncated incorrect double value: 838:59:59":   "Truncated incorrect DOUBLE value: '838:59:59'",
		"Truncated incorrect bigint value: 1e2":         "Truncated incorrect INTEGER value: '1e2'",
		"Truncated incorrect DECIMAL value: '1x'":       "Truncated incorrect DECIMAL value: '1x'",
		"Incorrect datetime value: '2024-02-30'":        "Incorrect datetime value: '2024-02-30'",
	} {
		if got := mysqlTruncatedText(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
