package difftest

// knownDiffs are the intended differences: where Certus answers as MySQL
// 8.0 does and MariaDB 10.11, the reference here, answers otherwise. Each
// says why; a difference one of them matches is counted under its reason,
// not as a bug.
var knownDiffs = []struct {
	reason string
	match  func(*Diff) bool
}{}

// known returns the reason d is intended, or "".
func known(d *Diff) string {
	for _, k := range knownDiffs {
		if k.match(d) {
			return k.reason
		}
	}
	return ""
}
