package replication

import (
	"encoding/binary"

	"github.com/certusdb/certus/writeset"
)

// depTracker computes, in log order, what a write-set's batch must wait
// for before it is built ahead of its turn (parallel apply): the last
// earlier entry that wrote any of its keys, or the last barrier, whichever
// is later. Building a batch reads only the old values of the write-set's
// own rows, so once that entry is applied nothing ordered before the
// write-set can change what the build reads. Entries that did not pass
// certification are counted too: waiting for them is harmless.
//
// A barrier is an entry whose effect the tracker does not follow (schema
// changes, keyless-row counts, a big write-set whose keys are not looked
// at, an entry that does not decode): everything after it waits for it.
type depTracker struct {
	last    map[string]uint64 // key → index of the last entry writing it
	barrier uint64
	noted   int // entries noted since the last forget
}

// depForgetAt is the number of tracked keys from which forget drops the
// applied ones.
const depForgetAt = 1 << 14

// note returns what the write-set at index must wait for and records its
// keys. A nil ws (not decoded) or one that cannot be prepared is a barrier.
func (d *depTracker) note(index uint64, ws *writeset.WriteSet, preparable bool) uint64 {
	need := d.barrier
	d.noted++
	if ws == nil || !preparable {
		d.barrier = max(d.barrier, index)
		return index - 1
	}
	if d.last == nil {
		d.last = map[string]uint64{}
	}
	var buf []byte
	touch := func(k []byte) {
		need = max(need, d.last[string(k)])
		d.last[string(k)] = index
	}
	for i := range ws.Keys {
		buf = append(append(buf[:0], 'k', byte(ws.Keys[i].Kind)), ws.Keys[i].Key...)
		touch(buf)
	}
	for i := range ws.Ops {
		op := &ws.Ops[i]
		buf = binary.BigEndian.AppendUint64(append(buf[:0], 'o'), op.TableID)
		touch(append(buf, op.Key...))
	}
	return min(need, index-1)
}

// barrierAt makes the entry at index a barrier.
func (d *depTracker) barrierAt(index uint64) { d.barrier = max(d.barrier, index) }

// forget drops keys whose last writer is applied, once many are tracked
// (and not more often than every depForgetAt entries).
func (d *depTracker) forget(applied uint64) {
	if len(d.last) < depForgetAt || d.noted < depForgetAt {
		return
	}
	d.noted = 0
	for k, idx := range d.last {
		if idx <= applied {
			delete(d.last, k)
		}
	}
}
