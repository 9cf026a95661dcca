package writeset

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func sample() *WriteSet {
	return &WriteSet{
		ID:       ID{Origin: 0xabc, Seq: 42},
		LastSeen: 1000,
		Flags:    FlagDDL,
		Tables:   []Table{{ID: 7, SchemaPos: 900, Flags: TableSchemaChange}},
		Keys: []Key{
			{Kind: KeyRow, Key: []byte("row-1"), Pos: 999},
			{Kind: KeyUnique, Key: []byte("uniq"), Pos: 1},
		},
		Ops: []Op{
			{Kind: OpPut, TableID: 7, Key: []byte("k1"), Value: bytes.Repeat([]byte("v"), 300)},
			{Kind: OpDelete, TableID: 7, Key: []byte("k2")},
			{Kind: OpDelta, TableID: 7, Key: []byte("k3"), Value: []byte("row"), Delta: -2},
			{Kind: OpSchema, Payload: []byte(`{"op":"create"}`)},
			{Kind: OpAutoIncrement, TableID: 7, Delta: 1 << 40},
		},
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	t.Run("plain", func(t *testing.T) { roundTrip(t, sample()) })
	t.Run("fragment", func(t *testing.T) {
		ws := sample()
		ws.Flags = FlagFragment
		ws.Stream = Stream{ID: ID{Origin: 0xdef, Seq: 7}, Node: 3, Frag: 12}
		roundTrip(t, ws)
	})
}

func roundTrip(t *testing.T, ws *WriteSet) {
	t.Helper()
	data := ws.Encode([]byte("prefix"))
	if !bytes.HasPrefix(data, []byte("prefix")) {
		t.Fatalf("Encode dropped dst's contents")
	}
	data = data[len("prefix"):]
	if n := ws.Size(); n < len(data) {
		t.Fatalf("size bound %d below the encoded size %d", n, len(data))
	}
	if !IsWriteSet(data) {
		t.Fatalf("IsWriteSet false for an encoded write-set")
	}
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ws) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, ws)
	}
}

func TestDecodeDetectsCorruption(t *testing.T) {
	data := sample().Encode(nil)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"truncated", data[:len(data)-1]},
		{"flipped bit", func() []byte { d := bytes.Clone(data); d[len(d)/2] ^= 1; return d }()},
		{"trailing garbage", append(bytes.Clone(data), 0)},
		{"bad magic", append([]byte("XXXX"), data[4:]...)},
		{"empty", nil},
	} {
		if _, err := Decode(tc.data); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Decode error %v, want ErrCorrupt", tc.name, err)
		}
	}
}
