// Package compat measures Certus's MySQL compatibility with
// go-mysql-server's own engine tests (package enginetest): its test
// harness builds go-mysql-server engines over single-node Certus clusters,
// whose sessions, transactions, replication and storage are Certus's, and
// runs the suites the way go-mysql-server runs them on its memory harness.
//
//	go test ./compat                        # the short suites on Certus
//	CERTUS_COMPAT=full go test ./compat     # every suite
//	bash bench/compat.sh                    # every suite, Certus next to the memory harness
//
// The tests that do not run on Certus, and why, are in skips_test.go; the
// bugs the suites found are reduced to scripts in regressions_test.go. See
// docs/COMPAT.md.
package compat
