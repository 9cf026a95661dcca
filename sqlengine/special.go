package sqlengine

import (
	"context"

	"github.com/dolthub/vitess/go/mysql"
)

// A special is what one class of statements needs from the handler beyond
// the checks every statement gets (see run). inspect gives each statement
// its class's, from the table below; each step is optional and runs at its
// own point of the statement:
type special struct {
	name string
	// start runs once the statement passed the checks, before it runs; it
	// may refuse it, and what it returns (if anything) runs when the
	// statement ended, whatever its outcome.
	start func(h *Handler, c *mysql.Conn, s *Session, query string) (end func(), err error)
	// attempt runs before each of go-mysql-server's attempts at the
	// statement: it returns the text to run in place of the first
	// statement, and what runs after the attempt (or nil).
	attempt func(h *Handler, ctx context.Context, s *Session, first string) (string, func())
	// result runs for each result go-mysql-server returns.
	result func(s *Session)
	// succeeded runs once the statement ran without an error, and may fail
	// it; began is the causal wait a BEGIN started (see before).
	succeeded func(ctx context.Context, s *Session, began *func(context.Context) error) error
	// failed maps the statement's error before its message is made
	// MySQL's.
	failed func(se *mysql.SQLError) *mysql.SQLError
}

// The specials, each with the file that holds what it does.
var (
	// CREATE, ALTER, RENAME, TRUNCATE
	specialDDL = &special{name: "ddl", start: forgetPrepared, result: dropFalseDuplicateIndexWarnings}
	// DROP: also a missing table is 1051, not 1146
	specialDrop = &special{name: "drop", start: forgetPrepared, result: dropFalseDuplicateIndexWarnings, failed: unknownTable}
	// SET: it may change wait_timeout and the AUTO_INCREMENT variables
	specialSet = &special{name: "set", start: func(h *Handler, c *mysql.Conn, s *Session, _ string) (func(), error) {
		return func() { h.afterSet(c, s) }, nil
	}}
	// SET GLOBAL (or PERSIST): also wsrep_reject_queries = ALL_KILL, and
	// the global AUTO_INCREMENT variables; the statement guard checks the
	// privilege on the parsed statement (stmtguard.go)
	specialSetGlobal = &special{name: "set-global", start: func(h *Handler, c *mysql.Conn, s *Session, _ string) (func(), error) {
		return func() {
			if killClients.CompareAndSwap(true, false) {
				h.closeClients() // vars.go
			}
			h.afterSet(c, s)
			autoIncrementGlobal.Store(0) // autoinc.go
		}, nil
	}}
	// START TRANSACTION WITH CONSISTENT SNAPSHOT: the snapshot is taken at
	// once (handler.go)
	specialSnapshot = &special{name: "snapshot", succeeded: takeSnapshot}
	// EXECUTE name: a prepared statement that may not run itself again
	// (recursion.go)
	specialExecute = &special{name: "execute", start: func(_ *Handler, _ *mysql.Conn, s *Session, query string) (func(), error) {
		if s == nil {
			return nil, nil
		}
		return s.recursion.beginExecute(executeName(query))
	}}
	// SHOW GRANTS: a user's own grants (privileges.go)
	specialShowGrants = &special{name: "show-grants", attempt: func(h *Handler, ctx context.Context, s *Session, first string) (string, func()) {
		return first, h.ownGrants(ctx, s, first)
	}}
	// SHOW [FULL] PROCESSLIST alone: a user's own threads (privileges.go)
	specialProcessList = &special{name: "process-list", attempt: func(h *Handler, ctx context.Context, s *Session, first string) (string, func()) {
		return h.ownProcessList(ctx, s, first), nil
	}}
)

// forgetPrepared drops the session's prepared fast path plans before a
// DDL: a temporary table may now hide a table a statement named.
func forgetPrepared(_ *Handler, _ *mysql.Conn, s *Session, _ string) (func(), error) {
	if s != nil {
		s.prepared = nil
	}
	return nil, nil
}

// unknownTable makes a DROP's missing table MySQL's 1051.
func unknownTable(se *mysql.SQLError) *mysql.SQLError {
	if se.Number() == mysql.ERNoSuchTable {
		return mysql.NewSQLError(mysql.ERBadTable, "42S02", "%s", se.Message)
	}
	return se
}

// afterSet learns what a SET may have changed: the session's wait_timeout
// (limits.go) and AUTO_INCREMENT variables (autoinc.go).
func (h *Handler) afterSet(c *mysql.Conn, s *Session) {
	if s == nil {
		return
	}
	h.idleTimeoutChanged(c, s)
	s.autoIncStride = 0
}
