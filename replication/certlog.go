package replication

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// Certification records. Every certified write-set leaves a record in the
// same batch as its effects: its verdict and the write-set without its row
// images (id, LastSeen, tables and keys). Replaying the records of the last
// Window seqnos rebuilds the certification index exactly as it was, so the
// index survives a restart, travels with a state transfer, and does not tie
// the raft log's retention to the certification window. Records older than
// the window are deleted as the log is compacted.
//
//	'r' 'v' seqno(8) -> verdict byte | write-set encoding without ops

var certPrefix = []byte{storage.SpaceReplication, 'v'}

func certKey(seqno uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte{}, certPrefix...), seqno)
}

// Verdict is what became of a write-set in the total order.
type Verdict byte

// Verdicts, as stored in certification records.
const (
	VerdictFailed    Verdict = 0 // lost certification (or a duplicate copy)
	VerdictCommitted Verdict = 1 // certified and applied
	VerdictRejected  Verdict = 2 // certified, then refused alike by every node at apply
)

// certRecordKV is the record of ws decided at seqno.
func certRecordKV(seqno uint64, ws *writeset.WriteSet, v Verdict) storage.KV {
	rec := *ws
	rec.Ops = nil
	return storage.KV{Key: certKey(seqno), Value: rec.Encode([]byte{byte(v)})}
}

// replayCertRecords feeds the records of seqnos in [from, to] to fn in
// order.
func replayCertRecords(r pebble.Reader, from, to uint64, fn func(seqno uint64, ws *writeset.WriteSet, ok bool)) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: certKey(from), UpperBound: certKey(to + 1)})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != len(certPrefix)+8 || len(v) < 1 {
			return fmt.Errorf("replication: corrupt certification record %x", k)
		}
		seqno := binary.BigEndian.Uint64(k[len(certPrefix):])
		ws, err := writeset.Decode(v[1:])
		if err != nil {
			return fmt.Errorf("replication: certification record %d: %w", seqno, err)
		}
		fn(seqno, ws, Verdict(v[0]) != VerdictFailed)
	}
	return it.Error()
}

// pruneCertRecords deletes the records of seqnos below floor.
func pruneCertRecords(b *pebble.Batch, floor uint64) error {
	return b.DeleteRange(certKey(0), certKey(floor), nil)
}

// Decided returns the seqno and verdict of the write-set id, if it was
// decided within the certification window.
func (c *Core) Decided(id writeset.ID) (uint64, Verdict, bool) {
	seqno, ok := c.cert.DecidedAt(id)
	if !ok {
		return 0, 0, false
	}
	v, ok, err := get(c.eng.DB(), certKey(seqno))
	if err != nil || !ok || len(v) == 0 {
		return 0, 0, false
	}
	return seqno, Verdict(v[0]), true
}
