package sqlengine

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/certusdb/certus/internal/sqllex"
)

// MySQL's max_execution_time: a SELECT that runs longer than the
// session's max_execution_time, or its MAX_EXECUTION_TIME(N) optimizer
// hint, in milliseconds (0: no limit), is interrupted with 3024. It
// applies to top-level read-only SELECTs, not to statements of stored
// programs. Scans check their context (rowIter.Next), so the statement
// stops within a few rows of its deadline.

// executionLimit returns ctx bounded by the statement's execution time
// limit, if query is a SELECT that has one.
func executionLimit(ctx context.Context, s *Session, query string) (context.Context, context.CancelFunc) {
	lx := sqllex.NewScanner(query)
	if w := lx.Word(); w != "SELECT" && w != "WITH" {
		return ctx, nil
	}
	ms, ok := maxExecutionTimeHint(query)
	if !ok {
		ms = sessionInt(s, "max_execution_time")
	}
	if ms <= 0 {
		return ctx, nil
	}
	return context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
}

// maxExecutionTimeHint reads MAX_EXECUTION_TIME(N) from the optimizer hint
// comment right after a statement's first SELECT.
func maxExecutionTimeHint(query string) (int64, bool) {
	i := sqllex.IndexFold(query, "select")
	if i < 0 {
		return 0, false
	}
	rest := strings.TrimLeft(query[i+len("select"):], " \t\r\n")
	if !strings.HasPrefix(rest, "/*+") {
		return 0, false
	}
	end := strings.Index(rest, "*/")
	if end < 0 {
		return 0, false
	}
	hints := rest[3:end]
	j := sqllex.IndexFold(hints, "max_execution_time")
	if j < 0 {
		return 0, false
	}
	arg := strings.TrimLeft(hints[j+len("max_execution_time"):], " \t\r\n")
	if !strings.HasPrefix(arg, "(") {
		return 0, false
	}
	arg, _, ok := strings.Cut(arg[1:], ")")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(arg), 10, 64)
	return n, err == nil
}
