package sqlengine

import (
	"context"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/certusdb/certus/storage"
)

// catchUpSchema is asked about a statement that failed, before it changed
// anything, for naming a table, column, database or routine this node
// does not have; seen is the node's schema when the statement started. A
// DDL statement that returned on another node a moment ago may not have
// been applied here yet: whatever wsrep_sync_wait says, the node then
// waits as a causal read would and reports whether its schema is another
// than seen, so that the statement is worth running once more. A DDL
// statement that returned anywhere is thus usable everywhere, and only
// statements that fail pay for the wait.
func (h *Handler) catchUpSchema(ctx context.Context, s *Session, seen *storage.Catalog, err error) bool {
	if h.cluster == nil || s == nil || !namesMissingObject(err) || wantsDatabase(err) {
		return false
	}
	if h.cluster.StartSyncWait()(ctx) != nil {
		return false
	}
	return s.p.mgr.Engine().Catalog() != seen
}

// catalogOf is the node's schema now, for catchUpSchema (nil without a
// session).
func catalogOf(s *Session) *storage.Catalog {
	if s == nil {
		return nil
	}
	return s.p.mgr.Engine().Catalog()
}

// namesMissingObject reports whether err is MySQL's answer to a name the
// schema does not hold.
func namesMissingObject(err error) bool {
	if err == nil {
		return false
	}
	switch ToSQLError(err).Number() {
	case mysql.ERNoSuchTable, mysql.ERBadTable, mysql.ERBadDb, mysql.ERBadFieldError, mysql.ERSPDoesNotExist:
		return true
	}
	return false
}
