package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"testing/iotest"
)

// FuzzRead reads data as a frame stream and frames data as a payload.
// Properties: a frame read is within the limit and exactly the bytes it
// was read from (framing it again gives them back); a payload framed and
// read a byte at a time comes back whole, and a byte changed after the
// length is refused as a checksum mismatch.
func FuzzRead(f *testing.F) {
	f.Add(Append(nil, 1, []byte(`{"cluster":"certus","from":12345,"nonce":"1732870000000000000","auth":"3f1c"}`)))
	f.Add(Append(nil, 2, []byte(`{"ok":true,"node_id":6789}`)))
	f.Add(Append(nil, 11, make([]byte, 24)))
	f.Add(Append(Append(nil, 10, make([]byte, 8)), 10, make([]byte, 8)))
	f.Add(binary.BigEndian.AppendUint32(nil, MaxSize))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 4 << 10
		typ, payload, err := ReadMax(bytes.NewReader(data), limit)
		if err == nil {
			if n := 1 + len(payload); n > limit {
				t.Fatalf("read a frame of %d bytes under a limit of %d", n, limit)
			}
			if again := Append(nil, typ, payload); !bytes.HasPrefix(data, again) {
				t.Fatalf("frame read as type %d, payload %x is not the input's prefix", typ, payload)
			}
		}

		var typIn byte
		if len(data) > 0 {
			typIn = data[0]
		}
		var buf bytes.Buffer
		if err := Write(&buf, typIn, data); err != nil {
			t.Fatal(err)
		}
		framed := bytes.Clone(buf.Bytes())
		typ, payload, err = Read(iotest.OneByteReader(&buf))
		if err != nil || typ != typIn || !bytes.Equal(payload, data) {
			t.Fatalf("round trip of %d bytes: type %d, %d bytes, err %v", len(data), typ, len(payload), err)
		}
		i := 4 + len(data)%(len(framed)-4)
		framed[i] ^= 1 + byte(len(data))%255
		if _, _, err := Read(bytes.NewReader(framed)); !errors.Is(err, ErrChecksum) {
			t.Fatalf("byte %d of %d flipped: err %v, want ErrChecksum", i, len(framed), err)
		}
	})
}
