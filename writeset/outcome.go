package writeset

import "errors"

// Outcome is what replication reports for a write-set: the transaction
// layer (txn) waits for it, replication (and the simulator) produce it.
type Outcome struct {
	// Seqno is the write-set's position in the total order.
	Seqno uint64
	// Committed is true when the write-set passed certification and was
	// applied locally.
	Committed bool
	// Reason explains a certification failure.
	Reason string
	// Rejected is a deterministic refusal at apply (e.g. a duplicate found
	// while building a unique index).
	Rejected error
}

// ErrNotPrimary is returned by replication when its node is not part of a
// primary component: it cannot reach a quorum (MySQL/Galera 1047).
var ErrNotPrimary = errors.New("WSREP has not yet prepared node for application use")

// ErrOutcomeUnknown is returned by replication when it gave up on learning a
// write-set's fate: it may or may not commit (MySQL 1180 "error during
// COMMIT"; a client must not blindly retry it).
var ErrOutcomeUnknown = errors.New("Got error during COMMIT: its outcome is unknown (the cluster may still apply it)")
