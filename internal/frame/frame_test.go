package frame

import (
	"bytes"
	"errors"
	"testing"
)

func TestWriteReadRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 4 << 10, 4<<10 + 1, 3 << 20} {
		payload := bytes.Repeat([]byte{byte(n)}, n)
		var buf bytes.Buffer
		if err := Write(&buf, 7, payload); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), Append(nil, 7, payload)) {
			t.Fatalf("%d bytes: Write and Append frame differently", n)
		}
		typ, got, err := Read(&buf)
		if err != nil || typ != 7 || !bytes.Equal(got, payload) {
			t.Fatalf("%d bytes: read type %d, %d bytes, err %v", n, typ, len(got), err)
		}
	}
}

func TestReadDetectsCorruption(t *testing.T) {
	for _, n := range []int{10, 1 << 20} {
		data := Append(nil, 3, bytes.Repeat([]byte("x"), n))
		data[len(data)/2] ^= 0x40
		if _, _, err := Read(bytes.NewReader(data)); !errors.Is(err, ErrChecksum) {
			t.Fatalf("%d bytes: flipped bit read with err %v, want ErrChecksum", n, err)
		}
	}
}
