package difftest

import (
	"regexp"
	"slices"
)

// knownDiffs are the intended differences: where Certus answers as MySQL
// 8.0 does and MariaDB 10.11, the reference here, answers otherwise. Each
// says why; a difference one of them matches is counted under its reason,
// not as a bug.
var knownDiffs = []struct {
	reason string
	match  func(*Diff) bool
}{
	{"MariaDB names a column `db`.`t`.`c` in its messages, MySQL 8.0 (and Certus) 'c'", func(d *Diff) bool {
		if d.Kind != KindWarnText {
			return false
		}
		w := slices.Clone(d.Ref.Warnings)
		for i := range w {
			w[i].Text = mariaColumnRe.ReplaceAllString(w[i].Text, "for column '$1'")
		}
		return slices.Equal(w, d.Certus.Warnings)
	}},
}

var mariaColumnRe = regexp.MustCompile("for column `[^`]*`\\.`[^`]*`\\.`([^`]*)`")

// known returns the reason d is intended, or "".
func known(d *Diff) string {
	for _, k := range knownDiffs {
		if k.match(d) {
			return k.reason
		}
	}
	return ""
}
