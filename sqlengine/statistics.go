package sqlengine

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
)

// comStatistics is COM_STATISTICS, the command of `mysqladmin status`. The
// protocol library has no handler for it, so the connection filter
// answers it (trackConn.filterRead).
const comStatistics byte = 0x09

// statistics is the answer to COM_STATISTICS: the one line MySQL sends,
// from the global status variables.
func statistics() string {
	get := func(name string) int64 {
		if _, v, ok := sql.StatusVariables.GetGlobal(name); ok {
			if n, ok := asInt(v); ok {
				return n
			}
		}
		return 0
	}
	uptime, questions := get("Uptime"), get("Questions")
	qps := 0.0
	if uptime > 0 {
		qps = float64(questions) / float64(uptime)
	}
	return fmt.Sprintf("Uptime: %d  Threads: %d  Questions: %d  Slow queries: %d  Opens: %d  Flush tables: %d  Open tables: %d  Queries per second avg: %.3f",
		uptime, get("Threads_connected"), questions, get("Slow_queries"), get("Opened_tables"), get("Flush_commands"), get("Open_tables"), qps)
}
