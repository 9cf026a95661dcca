package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// KeyRange is the key range [Lo, Hi).
type KeyRange struct{ Lo, Hi []byte }

// StateRanges are the key ranges of the engine's replicated state: rows,
// index entries, catalog, AUTO_INCREMENT counters, the fragments of open
// streaming transactions, and the applied seqno and
// state digest they are at. A state transfer copies exactly these (plus the
// replication package's own); node-local metadata (node id, cluster name)
// stays.
func StateRanges() []KeyRange {
	rs := []KeyRange{
		{Lo: []byte{spaceAutoInc}, Hi: []byte{spaceAutoInc + 1}},
		{Lo: []byte{spaceCatalog}, Hi: []byte{spaceCatalog + 1}},
		{Lo: []byte{spaceStream}, Hi: []byte{spaceStream + 1}},
		{Lo: []byte{spaceTable}, Hi: []byte{spaceTable + 1}},
	}
	for _, name := range []string{metaApplied, metaDigest} {
		k := metaKey(name)
		rs = append(rs, KeyRange{Lo: k, Hi: append(append([]byte{}, k...), 0)})
	}
	return rs
}

// StoredState reads the applied seqno and state digest recorded in r (a
// pebble database or checkpoint holding an engine's keys).
func StoredState(r pebble.Reader) (uint64, Digest, error) {
	v, ok, err := getCopy(r, metaKey(metaApplied))
	if err != nil || !ok {
		return 0, Digest{}, err
	}
	if len(v) != 8 {
		return 0, Digest{}, ErrCorruptData
	}
	applied := binary.BigEndian.Uint64(v)
	dv, ok, err := getCopy(r, metaKey(metaDigest))
	if err != nil {
		return 0, Digest{}, err
	}
	var d Digest
	if ok {
		var good bool
		if d, good = digestFrom(dv); !good {
			return 0, Digest{}, ErrCorruptData
		}
	}
	return applied, d, nil
}

// Reload re-reads the catalog, AUTO_INCREMENT counters, applied seqno and
// digest from the database after a state transfer replaced them underneath
// the engine. Read views taken before keep reading the old state.
func (e *Engine) Reload() error {
	e.applyMu.Lock()
	defer e.applyMu.Unlock()
	e.pubMu.Lock()
	retired := e.retireSnapshot()
	defer func() {
		e.pubMu.Unlock()
		retired.release()
	}()
	if e.rows != nil {
		e.rows.clear()
	}
	e.autoMu.Lock()
	e.autoInc = map[uint64]uint64{}
	e.autoMu.Unlock()
	e.applied.Store(0)
	if err := e.load(); err != nil {
		return fmt.Errorf("storage: reload after state transfer: %w", err)
	}
	return nil
}
