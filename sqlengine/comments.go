package sqlengine

import (
	"strings"

	"github.com/certusdb/certus/internal/sqllex"
)

// versionComments turns the executable comments MySQL 8.0.31 would not
// execute into plain comments: /*!NNNNN ... */ with a version above
// execcomment.VersionID, and MariaDB's /*M!NNNNNN ... */, which MySQL
// never executes.
// go-mysql-server's parser runs every executable comment whatever its
// version, so the first line of a MariaDB dump ("/*M!999999\- enable the
// sandbox mode */") or a /*!99999 ... */ failed with 1064. skipped reports
// whether a comment was turned off. Quoted strings, quoted identifiers and
// line comments are left alone.
func versionComments(q string) (out string, skipped bool) {
	if !strings.Contains(q, "/*") {
		return q, false
	}
	var b []byte // copy of q, made at the first change
	off := func(i int) {
		if b == nil {
			b = []byte(q)
		}
		b[i] = ' '
		skipped = true
	}
	sqllex.BlockComments(q, func(start, _ int) {
		switch rest := q[start+2:]; {
		case strings.HasPrefix(rest, "M!"):
			off(start + 3)
		case strings.HasPrefix(rest, "!"): // one the nodes would not run
			off(start + 2)
		}
	})
	if b == nil {
		return q, skipped
	}
	return string(b), skipped
}
