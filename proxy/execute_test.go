package proxy

import (
	"bytes"
	"testing"
)

func TestRewriteExecute(t *testing.T) {
	types := []byte{8, 0, 253, 0}
	cases := []struct {
		name      string
		rest      []byte
		params    uint16
		remember  []byte
		wantBody  []byte
		wantTypes []byte
		wantErr   uint16
	}{
		{"no params", []byte{}, 0, nil, []byte{}, nil, 0},
		{"types sent", []byte{0, 1, 8, 0, 253, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1, 'a'}, 2, nil,
			[]byte{0, 1, 8, 0, 253, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1, 'a'}, types, 0},
		{"types remembered", []byte{0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1, 'a'}, 2, types,
			[]byte{0, 1, 8, 0, 253, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1, 'a'}, types, 0},
		{"no types known", []byte{0, 0, 1}, 2, nil, nil, nil, 1210},
		{"truncated types", []byte{0, 1, 8}, 2, nil, nil, nil, 1835},
		{"missing bound flag", []byte{0}, 2, nil, nil, nil, 1835},
		{"bad bound flag", []byte{0, 7}, 1, nil, nil, nil, 1835},
	}
	for _, tc := range cases {
		body, got, err := rewriteExecute(tc.rest, tc.params, tc.remember)
		if tc.wantErr != 0 {
			if err == nil || err.Code != tc.wantErr {
				t.Errorf("%s: err = %v, want %d", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !bytes.Equal(body, tc.wantBody) || !bytes.Equal(got, tc.wantTypes) {
			t.Errorf("%s: body %v types %v err %v", tc.name, body, got, err)
		}
	}
}

func TestGTIDSeqno(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{{"6f1c:42", 42, true}, {"6f1c:1-99", 99, true}, {"nope", 0, false}, {"u:x", 0, false}} {
		if got, ok := gtidSeqno(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("gtidSeqno(%q) = %d, %v", tc.in, got, ok)
		}
	}
}

// FuzzRewriteExecute: no COM_STMT_EXECUTE body makes the rewrite panic.
func FuzzRewriteExecute(f *testing.F) {
	f.Add([]byte{0, 1, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0}, uint16(1), []byte{})
	f.Add([]byte{0, 0}, uint16(9), []byte{1, 2})
	f.Fuzz(func(t *testing.T, rest []byte, n uint16, types []byte) {
		_, _, _ = rewriteExecute(rest, n, types)
	})
}
