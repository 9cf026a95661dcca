package sqlengine

import (
	"strings"

	"github.com/certusdb/certus/internal/execcomment"
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
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '\'' || c == '"' || c == '`':
			for i++; i < len(q) && q[i] != c; i++ {
				if q[i] == '\\' && c != '`' {
					i++
				}
			}
		case c == '#' || c == '-' && strings.HasPrefix(q[i:], "-- "):
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			rest := q[i+2:]
			switch {
			case strings.HasPrefix(rest, "M!"):
				off(i + 3)
			case strings.HasPrefix(rest, "!") && !execcomment.Runs(rest[1:]):
				off(i + 2)
			case strings.HasPrefix(rest, "!"):
				// executed: its text is SQL, which may hold quotes and
				// further comments
				i += 2
				continue
			}
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				i = len(q)
			} else {
				i += 2 + end + 1
			}
		}
	}
	if b == nil {
		return q, skipped
	}
	return string(b), skipped
}
