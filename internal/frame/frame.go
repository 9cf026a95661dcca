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

// ErrChecksum is returned by Read for a frame whose checksum does not match
// its contents.
var ErrChecksum = errors.New("frame: checksum mismatch")

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

// Read reads one frame from r and returns its type and payload.
func Read(r io.Reader) (byte, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > MaxSize {
		return 0, nil, fmt.Errorf("frame: length %d out of range", n)
	}
	body := make([]byte, n+4)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	if crc32.Checksum(body[:n], castagnoli) != binary.BigEndian.Uint32(body[n:]) {
		return 0, nil, ErrChecksum
	}
	return body[0], body[1:n], nil
}
