package replication

import (
	"slices"
	"testing"
)

func TestViewEncoding(t *testing.T) {
	good := encodeView([]uint64{1, 0x1b3cbfbb0edb6555, 1<<64 - 1})
	flipped := slices.Clone(good)
	flipped[6] ^= 1
	for _, tc := range []struct {
		name           string
		data           []byte
		ids            []uint64
		isView, intact bool
	}{
		{"view", good, []uint64{1, 0x1b3cbfbb0edb6555, 1<<64 - 1}, true, true},
		{"empty view", encodeView(nil), nil, true, true},
		{"write-set", []byte("CWS1\x01\x02"), nil, false, false},
		{"empty entry", nil, nil, false, false},
		{"flipped bit", flipped, nil, true, false},
		{"truncated", good[:len(good)-5], nil, true, false},
		{"magic only", viewMagic[:], nil, true, false},
		{"trailing byte", append(slices.Clone(good), 0), nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, isView, ok := decodeView(tc.data)
			if isView != tc.isView || ok != tc.intact || !slices.Equal(ids, tc.ids) {
				t.Fatalf("decodeView = %x, %v, %v; want %x, %v, %v", ids, isView, ok, tc.ids, tc.isView, tc.intact)
			}
		})
	}
}
