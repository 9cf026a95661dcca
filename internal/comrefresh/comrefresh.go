// Package comrefresh translates COM_REFRESH, the protocol command of
// mysqladmin's refresh and flush-threads and of mysqldump --flush-logs
// (mysql_refresh), into the FLUSH statement that does the same, for
// servers whose protocol library has no handler for the command.
package comrefresh

import "strings"

// Command is COM_REFRESH's command byte.
const Command byte = 0x07

// Flags of COM_REFRESH (mysql_com.h).
const (
	Grant   byte = 0x01 // FLUSH PRIVILEGES
	Log     byte = 0x02 // FLUSH LOGS
	Tables  byte = 0x04 // FLUSH TABLES
	Hosts   byte = 0x08 // FLUSH HOSTS
	Status  byte = 0x10 // FLUSH STATUS
	Threads byte = 0x20 // flush the thread cache
	Replica byte = 0x40 // RESET REPLICA
	Source  byte = 0x80 // RESET MASTER
)

// Statement returns the FLUSH statement for flags. Tables, threads and the
// replication flags have nothing to do without a table cache, a thread
// cache or a binary log; a refresh that asks only for them becomes FLUSH
// LOGS, which does nothing either but, like every refresh, needs the
// RELOAD privilege.
func Statement(flags byte) string {
	var opts []string
	for _, f := range []struct {
		flag byte
		opt  string
	}{{Grant, "PRIVILEGES"}, {Log, "LOGS"}, {Hosts, "HOSTS"}, {Status, "STATUS"}} {
		if flags&f.flag != 0 {
			opts = append(opts, f.opt)
		}
	}
	if len(opts) == 0 {
		opts = []string{"LOGS"}
	}
	return "FLUSH " + strings.Join(opts, ", ")
}
