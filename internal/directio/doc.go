// Package directio does the I/O of TCP connections that one goroutine
// serves request by request (a server's client, a proxy's client and its
// backends, a follower's read link to the leader) blocked in
// read(2)/write(2) outside Go's network poller while few are open: waking
// a goroutine parked on the poller costs more than the request for a
// single busy session (see directio_linux.go for the measurements).
// Elsewhere than on Linux, connections keep the poller.
package directio
