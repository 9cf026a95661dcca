package storage

import (
	"bytes"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/certusdb/certus/internal/codec"
)

// Log spans.
//
// The raft log and the certification records live in the same pebble
// database as the rows. A memtable holds all of them, so every flush wrote
// sstables spanning the whole keyspace, from the catalog through the log to
// the tables, and every compaction of such a table into the level below
// rewrote whatever lay in that range there: mostly the log, which is most
// of a small database (up to --gcache-size). Under sysbench's write-only
// load on one node that was 1.7 GB written into the bottom level in 35
// seconds for a 145 MB database, and compactions took 15% of the node's
// CPU.
//
// A log span's keys only grow and leave from the low end, by range. Kept
// in sstables of their own (pebble ends an output table where the span
// policy says), a flush's part of the log overlaps little below it, and a
// compaction of the rows below it no longer takes it along. Measured the
// same way, three alternating pairs: 1.8–2.0 GB → 1.4–1.6 GB written
// into the bottom level, 46–49 → 44–45 µs of server CPU per write-only
// query. The database is larger on disk (184 MB against 148 MB): a
// truncation now leaves more of the log's tables partly deleted until a
// compaction rewrites them.

// logSpans returns the span policy function that ends flush and
// compaction output tables at the start and the end of each prefix in
// spans.
func logSpans(spans [][]byte) pebble.SpanPolicyFunc {
	var bounds [][]byte // sorted: start and end of every span
	for _, p := range spans {
		bounds = append(bounds, bytes.Clone(p))
		if end := codec.PrefixEnd(p); end != nil {
			bounds = append(bounds, end)
		}
	}
	slices.SortFunc(bounds, bytes.Compare)
	bounds = slices.CompactFunc(bounds, bytes.Equal)
	return func(start []byte) (pebble.SpanPolicy, []byte, error) {
		i, found := slices.BinarySearchFunc(bounds, start, bytes.Compare)
		if found {
			i++
		}
		if i == len(bounds) {
			return pebble.SpanPolicy{}, nil, nil
		}
		return pebble.SpanPolicy{}, bounds[i], nil
	}
}
