package systest

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/certusdb/certus/bench/difftest"
)

// diffBaseline is, per class and kind, how many of the recorded cases of
// bench/difftest/testdata/seed1.json Certus answers otherwise than
// MariaDB did (certus bench diff --record; the differences are listed by
// certus bench diff --seed 1 --cases 200). It only goes down: a fix
// lowers it, and a count above it is a regression, except where a fix
// moves a case to a later kind (a case counts under its first
// difference: one that no longer errs may still differ in its type).
var diffBaseline = map[string]map[string]int{
	"expr":   {"error": 14, "value": 17, "type": 116, "warning": 15, "warning text": 6},
	"values": {"error": 51, "error code": 9, "value": 4, "warning": 10, "warning text": 15},
}

// TestDiffRecorded replays the differential tester's recorded cases on a
// node and compares its answers with MariaDB's.
func TestDiffRecorded(t *testing.T) {
	data, err := os.ReadFile("../bench/difftest/testdata/seed1.json")
	if err != nil {
		t.Fatal(err)
	}
	var recs []difftest.Recorded
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	n, root := startNode(t, "diff1", "")
	xexec(t, root, "CREATE DATABASE difftest")
	reports, err := difftest.Replay(context.Background(), n.DB("difftest"), recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		t.Logf("%s: %d cases, %d alike, unexplained %v, known %v", r.Class, r.Cases, r.Same, r.ByKind, r.Known)
		for _, k := range difftest.Kinds {
			got, limit := r.ByKind[k], diffBaseline[r.Class][k]
			switch {
			case got > limit:
				for _, d := range r.Samples {
					if d.Kind == k {
						t.Logf("case %d: %q: certus %+v, mariadb %+v", d.Index, d.Case.Stmts[d.Stmt], d.Certus, d.Ref)
					}
				}
				t.Errorf("%s: %d differences of kind %q, at most %d before", r.Class, got, k, limit)
			case got < limit:
				t.Logf("%s: %d differences of kind %q, %d before: lower diffBaseline", r.Class, got, k, limit)
			}
		}
	}
}
