package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"
)

// Digest is an order-independent 128-bit hash of a set of key/value
// pairs: the XOR of a hash of each pair. Apply keeps the digest of all
// replicated state (rows, index entries, catalog, AUTO_INCREMENT counters)
// up to date write by write, so two nodes at the same seqno can compare
// their whole state by comparing 16 bytes; RecomputeDigest rebuilds it from
// a snapshot to check the incremental one.
type Digest struct{ A, B uint64 }

func (d Digest) String() string { return fmt.Sprintf("%016x%016x", d.A, d.B) }

// PairDigest is the digest of the one pair k, v: a caller that keeps
// several digests over the same pairs hashes each pair once and Merges it.
func PairDigest(k, v []byte) Digest {
	var h xxhash.Digest
	var out Digest
	for i, seed := range [2]uint64{0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f} {
		h.ResetWithSeed(seed)
		var n [4]byte
		binary.LittleEndian.PutUint32(n[:], uint32(len(k)))
		_, _ = h.Write(n[:])
		_, _ = h.Write(k)
		_, _ = h.Write(v)
		if i == 0 {
			out.A = h.Sum64()
		} else {
			out.B = h.Sum64()
		}
	}
	return out
}

// Toggle adds the pair k, v to the digest, or removes it if it is in.
func (d *Digest) Toggle(k, v []byte) { d.toggle(k, v) }

func (d *Digest) toggle(k, v []byte) { d.Merge(PairDigest(k, v)) }

// Merge toggles the pairs of o in d: d becomes the digest of the pairs in
// exactly one of the two.
func (d *Digest) Merge(o Digest) {
	d.A ^= o.A
	d.B ^= o.B
}

func (d Digest) bytes() []byte {
	b := binary.BigEndian.AppendUint64(nil, d.A)
	return binary.BigEndian.AppendUint64(b, d.B)
}

func digestFrom(b []byte) (Digest, bool) {
	if len(b) != 16 {
		return Digest{}, false
	}
	return Digest{A: binary.BigEndian.Uint64(b), B: binary.BigEndian.Uint64(b[8:])}, true
}

// Replicated reports whether a key belongs to the replicated data the state
// digest covers (rows, index entries, catalog, AUTO_INCREMENT counters).
func Replicated(k []byte) bool { return replicated(k) }

func replicated(k []byte) bool {
	return len(k) > 0 && (k[0] == spaceTable || k[0] == spaceCatalog || k[0] == spaceAutoInc)
}

// digestRange toggles every pair in [lo, hi) of r out of (or into) d.
func digestRange(r pebble.Reader, d *Digest, lo, hi []byte) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		d.toggle(it.Key(), it.Value())
	}
	return it.Error()
}

// StateDigest returns the applied seqno and the digest of the state at it.
func (e *Engine) StateDigest() (uint64, Digest) {
	e.pubMu.RLock()
	defer e.pubMu.RUnlock()
	return e.applied.Load(), e.digest
}

// RecomputeDigest computes the digest of v's state from scratch.
func (e *Engine) RecomputeDigest(v *ReadView) (Digest, error) {
	var d Digest
	for _, space := range []byte{spaceTable, spaceCatalog, spaceAutoInc} {
		if err := digestRange(v.r, &d, []byte{space}, []byte{space + 1}); err != nil {
			return Digest{}, err
		}
	}
	return d, nil
}
