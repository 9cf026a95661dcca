package sqlengine

import (
	"strings"
	"testing"
)

func TestRollupRewrite(t *testing.T) {
	for _, tc := range []struct {
		q    string
		ok   bool
		want []string // parts of the rewrite
	}{
		{"SELECT a, b, SUM(x) FROM t GROUP BY a, b WITH ROLLUP", true,
			[]string{"`__rc0` AS `a`", "`__rc2` AS `SUM(x)`", "GROUP BY a, b UNION ALL", "GROUP BY a UNION ALL", "IF(FALSE, MIN(b), NULL) AS `__rc1`", "ORDER BY `__rr0`, `__rk0`, `__rr1`, `__rk1`"}},
		{"select region r, count(*) n from t where x > 1 group by r with rollup limit 3", true,
			[]string{"`__rc0` AS `r`", "`__rc1` AS `n`", "from t where x > 1 GROUP BY region", "ORDER BY `__rr0`, `__rk0` limit 3"}},
		{"SELECT `t`.`a`, SUM(x) FROM t GROUP BY 1 WITH ROLLUP ORDER BY a DESC", true,
			[]string{"`__rc0` AS `a`", "GROUP BY `t`.`a`", ") AS `__rollup` ORDER BY a DESC"}},
		{"SELECT CASE WHEN a > 1 THEN 'x' END, SUM(x) FROM t GROUP BY a WITH ROLLUP", true,
			[]string{"AS `CASE WHEN a > 1 THEN 'x' END`"}},
		{"SELECT a, SUM(x) FROM t GROUP BY a", false, nil},
		{"SELECT a, SUM(x) FROM t GROUP BY a WITH ROLLUP HAVING SUM(x) > 1", false, nil},
		{"SELECT DISTINCT a, SUM(x) FROM t GROUP BY a WITH ROLLUP", false, nil},
		{"SELECT * FROM (SELECT a, SUM(x) FROM t GROUP BY a WITH ROLLUP) d", false, nil},
		{"SELECT *, SUM(x) FROM t GROUP BY a WITH ROLLUP", false, nil},
		{"SELECT a, GROUPING(a) FROM t GROUP BY a WITH ROLLUP", false, nil},
		{"SELECT a, SUM(x) FROM t GROUP BY a WITH ROLLUP FOR UPDATE", false, nil},
		{"SELECT 'with rollup' FROM t", false, nil},
	} {
		got, ok := rollupRewrite(tc.q)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v (%s)", tc.q, ok, tc.ok, got)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s:\n%s\nlacks %s", tc.q, got, w)
			}
		}
	}
}
