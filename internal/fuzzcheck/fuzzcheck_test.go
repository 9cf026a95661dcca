// Package fuzzcheck runs the module's fuzz targets briefly as part of
// `go test ./...`, so that CI fuzzes every change a little; bench/fuzz.sh
// runs them for longer.
package fuzzcheck

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// TestFuzzTargets runs each fuzz target for 10 s with one worker, one
// after the other (bench/fuzz.sh), and fails on a crasher. Each target
// needs its own instrumented build, so with a cold cache, or next to the
// system tests on two cores, the targets can outlast the test binary's
// timeout: none starts within 2 minutes of it (they are reported as
// skipped). It leaves out sqlengine, whose instrumented test binary alone
// took 3 minutes to build from a cold cache (its seeds still run in `go
// test ./sqlengine`). -short or CERTUS_FUZZ=0 skips it.
func TestFuzzTargets(t *testing.T) {
	if testing.Short() || os.Getenv("CERTUS_FUZZ") == "0" {
		t.Skip("fuzzing skipped (-short or CERTUS_FUZZ=0)")
	}
	testcluster.NoteSources() // the targets are built from the module's sources
	cmd := exec.Command("bash", "bench/fuzz.sh", "10s")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "FUZZ_PARALLEL=1", "FUZZ_SKIP=./sqlengine")
	if d, ok := t.Deadline(); ok {
		// a target takes 10 s, its build up to a minute
		cmd.Env = append(cmd.Env, "FUZZ_DEADLINE="+strconv.FormatInt(d.Add(-2*time.Minute).Unix(), 10))
	}
	out, err := cmd.CombinedOutput()
	t.Logf("bench/fuzz.sh 10s:\n%s", out)
	if err != nil {
		t.Fatalf("a fuzz target failed: %v", err)
	}
}
