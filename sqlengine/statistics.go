package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/internal/comstatistics"
	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
)

// statistics is the answer to COM_STATISTICS (answered by the connection
// filter, trackConn.filterRead), from the global status variables.
func statistics() string {
	get := func(name string) int64 {
		if _, v, ok := sql.StatusVariables.GetGlobal(name); ok {
			if n, ok := sqlvalue.AsInt(v); ok {
				return n
			}
		}
		return 0
	}
	return comstatistics.Line(comstatistics.Counts{
		Uptime: get("Uptime"), Threads: get("Threads_connected"), Questions: get("Questions"), SlowQueries: get("Slow_queries"),
		Opens: get("Opened_tables"), FlushTables: get("Flush_commands"), OpenTables: get("Open_tables"),
	})
}
