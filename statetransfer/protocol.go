// Package statetransfer moves a node's whole replicated state from a donor
// to a joiner: Certus's SST. The donor serves a pebble checkpoint (a
// consistent, hard-linked copy of its database at one applied seqno), so it
// keeps serving reads and writes while the joiner copies; the joiner writes
// the stream into its own database and records how far it got in the same
// batches, so a transfer interrupted by a dropped connection or a restart of
// either side resumes where it stopped. Every frame is checksummed, and the
// whole transfer is checked end to end against the donor's digest of what
// it sent and against the state digest stored with the data.
//
// See DESIGN.md in this directory for why it is built this way.
package statetransfer

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/certusdb/certus/storage"
)

// Frame types of a state transfer stream, after the peer handshake and
// the request (which the transport carries in its own frame).
const (
	frameHeader byte = 1 // JSON header: the checkpoint and its totals
	frameChunk  byte = 2 // key/value pairs in key order
	frameEnd    byte = 3 // JSON end: the stream is complete
	frameError  byte = 4 // JSON error
)

// headerMax bounds the first frame of a stream (a header or an error),
// read before the joiner knows what it talks to; chunks are read as they
// arrive, up to frame.MaxSize (a chunk holds at least one pair, which may
// be a large row).
const headerMax = 1 << 20

// Request asks a donor for its state.
type Request struct {
	// Joiner names the asking node, for the donor's log.
	Joiner string `json:"joiner"`
	// MinSeqno is the lowest applied seqno the state may be at.
	MinSeqno uint64 `json:"min_seqno"`
	// Checkpoint resumes the transfer of this checkpoint, when the donor
	// still has it.
	Checkpoint string `json:"checkpoint,omitempty"`
	// After resumes after this key.
	After []byte `json:"after,omitempty"`
}

// Meta describes the state in a checkpoint. The replication layer fills
// Term and ConfState (the raft position of Seqno); StateDigest is the digest
// stored with the data.
type Meta struct {
	Seqno       uint64         `json:"seqno"`
	Term        uint64         `json:"term"`
	ConfState   []byte         `json:"conf_state"`
	StateDigest storage.Digest `json:"state_digest"`
}

// summary is what the donor counted in a checkpoint: the pairs it sends,
// their bytes and the digest of all of them.
type summary struct {
	Pairs  uint64         `json:"pairs"`
	Bytes  uint64         `json:"bytes"`
	Digest storage.Digest `json:"digest"`
}

// header starts a stream. Total is exact when the donor counted the
// checkpoint already, else an estimate of its bytes (for progress only).
type header struct {
	Checkpoint string  `json:"checkpoint"`
	Meta       Meta    `json:"meta"`
	Total      summary `json:"total"`
	Resumed    bool    `json:"resumed"`
}

// end closes a stream with the exact count of the whole checkpoint, which
// the joiner checks what it received against.
type end struct {
	Total summary `json:"total"`
}

// streamError is a donor's refusal.
type streamError struct {
	Error string `json:"error"`
	// Retry says another attempt (possibly at another donor) may succeed.
	Retry bool `json:"retry"`
}

// ErrCorruptStream is returned for a stream that breaks the protocol: keys
// out of order or outside the state ranges, or totals that do not match.
var ErrCorruptStream = errors.New("statetransfer: corrupt stream")

func appendPair(dst, k, v []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(k)))
	dst = append(dst, k...)
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	return append(dst, v...)
}

// decodePairs calls fn for every pair of a chunk.
func decodePairs(buf []byte, fn func(k, v []byte) error) error {
	for len(buf) > 0 {
		k, rest, ok := takeBytes(buf)
		if !ok {
			return fmt.Errorf("%w: truncated key", ErrCorruptStream)
		}
		v, rest, ok := takeBytes(rest)
		if !ok {
			return fmt.Errorf("%w: truncated value", ErrCorruptStream)
		}
		buf = rest
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

// takeBytes splits a length-prefixed byte string off buf.
func takeBytes(buf []byte) (b, rest []byte, ok bool) {
	n, w := binary.Uvarint(buf)
	if w <= 0 || n > uint64(len(buf)-w) {
		return nil, nil, false
	}
	buf = buf[w:]
	return buf[:n:n], buf[n:], true
}

// inRanges reports whether k lies in one of rs.
func inRanges(rs []storage.KeyRange, k []byte) bool {
	for _, r := range rs {
		if string(k) >= string(r.Lo) && string(k) < string(r.Hi) {
			return true
		}
	}
	return false
}
