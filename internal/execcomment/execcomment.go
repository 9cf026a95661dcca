// Package execcomment decides which of MySQL's executable comments,
// /*! ... */ and /*!NNNNN ... */, a Certus server runs, so that the
// nodes, which execute them, and the proxy, which classifies statements
// before a node sees them, read the same text as SQL.
package execcomment

import "fmt"

// VersionID is the MySQL version Certus reports (8.0.31; the nodes' and
// the proxy's version strings say it), as executable comments compare it.
const VersionID = 80031

// VersionText is VersionID as a version string's dotted prefix ("8.0.31").
func VersionText() string {
	return fmt.Sprintf("%d.%d.%d", VersionID/10000, VersionID/100%100, VersionID%100)
}

// Version returns the version of an executable comment whose text after
// "/*!" is rest: its first five characters, when they are digits (the
// comment's SQL follows them).
func Version(rest string) (v int, ok bool) {
	if len(rest) < 5 {
		return 0, false
	}
	for i := 0; i < 5; i++ {
		c := rest[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// Runs reports whether an executable comment whose text after "/*!" is
// rest runs: it has no version, or its version is not above VersionID.
// (MariaDB's /*M! ... */ never runs on MySQL; that is the caller's to
// tell.)
func Runs(rest string) bool {
	v, ok := Version(rest)
	return !ok || v <= VersionID
}
