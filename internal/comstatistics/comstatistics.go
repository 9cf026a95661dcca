// Package comstatistics answers COM_STATISTICS, the protocol command of
// `mysqladmin status`, the mysql client's \s and PHP's mysqli::stat(),
// for the node and the proxy, whose protocol libraries have no handler
// for it.
package comstatistics

import "fmt"

// Command is COM_STATISTICS's command byte.
const Command byte = 0x09

// Counts are the figures MySQL's answer reports.
type Counts struct {
	Uptime      int64 // seconds
	Threads     int64 // connected clients
	Questions   int64 // statements run
	SlowQueries int64
	Opens       int64 // tables opened
	FlushTables int64 // flush commands
	OpenTables  int64
}

// Line returns the answer: MySQL's one line, with the average of
// questions per second over the uptime.
func Line(c Counts) string {
	qps := 0.0
	if c.Uptime > 0 {
		qps = float64(c.Questions) / float64(c.Uptime)
	}
	return fmt.Sprintf("Uptime: %d  Threads: %d  Questions: %d  Slow queries: %d  Opens: %d  Flush tables: %d  Open tables: %d  Queries per second avg: %.3f",
		c.Uptime, c.Threads, c.Questions, c.SlowQueries, c.Opens, c.FlushTables, c.OpenTables, qps)
}
