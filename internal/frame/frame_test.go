package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
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

func TestReadMaxRefusesLargerFrames(t *testing.T) {
	data := Append(nil, 1, bytes.Repeat([]byte("x"), 100))
	if _, _, err := ReadMax(bytes.NewReader(data), 100); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("101-byte frame under a limit of 100: err %v, want ErrTooLarge", err)
	}
	if _, got, err := ReadMax(bytes.NewReader(data), 101); err != nil || len(got) != 100 {
		t.Fatalf("101-byte frame under a limit of 101: %d bytes, err %v", len(got), err)
	}
	huge := binary.BigEndian.AppendUint32(nil, MaxSize+1)
	if _, _, err := Read(bytes.NewReader(huge)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("frame past MaxSize: err %v, want ErrTooLarge", err)
	}
}

// TestReadAllocatesAsDataArrives announces a frame of MaxSize and sends a
// few bytes: reading it must cost about one read step, not the gigabyte.
func TestReadAllocatesAsDataArrives(t *testing.T) {
	data := binary.BigEndian.AppendUint32(nil, MaxSize)
	data = append(data, "0123456789"...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := Read(bytes.NewReader(data))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated frame: err %v, want io.ErrUnexpectedEOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*readStep {
		t.Fatalf("a frame announcing %d bytes with 10 sent allocated %d bytes", MaxSize, got)
	}
}

// TestReadGrowsAcrossSteps reads frames around the read step's multiples,
// a byte per read, so every growth of the buffer is taken.
func TestReadGrowsAcrossSteps(t *testing.T) {
	for _, n := range []int{readStep - 5, readStep - 4, readStep - 3, 2*readStep - 4, 5*readStep + 17} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		typ, got, err := Read(iotest.OneByteReader(bytes.NewReader(Append(nil, 9, payload))))
		if err != nil || typ != 9 || !bytes.Equal(got, payload) {
			t.Fatalf("%d bytes: read type %d, %d bytes, err %v", n, typ, len(got), err)
		}
	}
}
