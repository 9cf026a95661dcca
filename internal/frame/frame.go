// Package frame is the framing of Certus's peer protocol: every message
// between members (raft traffic, joins, state transfer) is one frame
//
//	length uint32 (of type+payload) | type byte | payload | crc32c uint32
//
// so a corrupt or truncated message is detected and never acted on.
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// MaxSize bounds the type+payload length of a frame.
const MaxSize = 1 << 30

// ErrChecksum is returned by Read and ReadMax for a frame whose checksum does not match
// its contents.
var ErrChecksum = errors.New("frame: checksum mismatch")

// ErrTooLarge is returned by ReadMax for a frame that announces more than
// its limit.
var ErrTooLarge = errors.New("frame: too large")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Append appends the frame of typ and payload to dst.
func Append(dst []byte, typ byte, payload []byte) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(1+len(payload)))
	dst = append(dst, typ)
	dst = append(dst, payload...)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start+4:], castagnoli))
}

// Write writes one frame to w. A payload over a few KiB is written as it
// is, not copied into the frame first (a raft message may carry a write-set
// of a hundred megabytes); give w a buffer to keep the writes few.
func Write(w io.Writer, typ byte, payload []byte) error {
	if len(payload) <= 4<<10 {
		_, err := w.Write(Append(make([]byte, 0, 9+len(payload)), typ, payload))
		return err
	}
	var hdr [5]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(1+len(payload)))
	hdr[4] = typ
	crc := crc32.Update(crc32.Checksum(hdr[4:], castagnoli), castagnoli, payload)
	var trailer [4]byte
	binary.BigEndian.PutUint32(trailer[:], crc)
	for _, b := range [][]byte{hdr[:], payload, trailer[:]} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// Read reads one frame of up to MaxSize from r: for the streams of an
// authenticated peer, which may carry a write-set of a hundred megabytes.
func Read(r io.Reader) (byte, []byte, error) { return ReadMax(r, MaxSize) }

// readStep is the buffer a frame's body is first read into; it doubles as
// the data arrives.
const readStep = 64 << 10

// ReadMax reads one frame from r whose type and payload take at most max
// bytes (ErrTooLarge otherwise), and returns its type and payload. The
// limit is a plain argument, not a per-type table: the reader knows what
// it expects at each point of its protocol (a hello before a peer is
// authenticated, answers to its own requests), and a frame's length comes
// before its type. Its buffer grows in steps as the data arrives, never
// ahead of it by more than what arrived, so a peer that announces a
// gigabyte and sends ten bytes costs readStep, not the gigabyte.
func ReadMax(r io.Reader, max int) (byte, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n, limit := binary.BigEndian.Uint32(hdr[:]), min(max, MaxSize)
	switch {
	case n == 0:
		return 0, nil, errors.New("frame: empty frame")
	case int64(n) > int64(limit):
		return 0, nil, fmt.Errorf("%w: %d bytes announced, at most %d taken", ErrTooLarge, n, limit)
	}
	size := int(n) + 4 // with the checksum
	body := make([]byte, min(size, readStep))
	for have := 0; ; {
		k, err := io.ReadFull(r, body[have:])
		have += k
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return 0, nil, err
		}
		if have == size {
			break
		}
		grown := make([]byte, min(size, 2*have))
		copy(grown, body)
		body = grown
	}
	data, sum := body[:n], body[n:]
	if crc32.Checksum(data, castagnoli) != binary.BigEndian.Uint32(sum) {
		return 0, nil, ErrChecksum
	}
	return data[0], data[1:], nil
}
