package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/internal/sqllex"
	"github.com/certusdb/certus/txn"
)

// readMode decides how the statement reads tables. go-mysql-server passes
// no flag for DML or locking reads, so the statement text decides, as InnoDB
// would: UPDATE, DELETE and SELECT ... FOR UPDATE read the latest committed
// rows under exclusive locks; INSERT/REPLACE ... SELECT and SELECT ... FOR
// SHARE / LOCK IN SHARE MODE under shared locks; everything else reads the
// transaction's snapshot.
func readMode(ctx *sql.Context) txn.ReadMode {
	q := ctx.Query()
	if s, ok := ctx.Session.(*Session); ok {
		if s.modeQuery == q && len(q) > 0 {
			return s.mode
		}
		m := classify(q)
		s.modeQuery, s.mode = q, m
		return m
	}
	return classify(q)
}

// classify inspects a statement's leading keyword and locking clause.
func classify(q string) txn.ReadMode {
	lx := sqllex.NewScanner(q)
	first := lx.Word()
	switch first {
	case "UPDATE", "DELETE":
		return txn.CurrentExclusive
	case "INSERT", "REPLACE":
		return txn.CurrentShared
	case "SELECT", "WITH":
	default:
		return txn.Snapshot
	}
	mode := txn.Snapshot
	prev := ""
	for {
		w := lx.Word()
		if w == "" {
			return mode
		}
		switch {
		case prev == "FOR" && w == "UPDATE":
			return txn.CurrentExclusive
		case prev == "FOR" && w == "SHARE", prev == "SHARE" && w == "MODE":
			mode = txn.CurrentShared
		}
		prev = w
	}
}
