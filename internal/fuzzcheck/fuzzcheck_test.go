// Package fuzzcheck runs the module's fuzz targets briefly as part of
// `go test ./...`, so that CI fuzzes every change a little; bench/fuzz.sh
// runs them for longer.
package fuzzcheck

import (
	"os"
	"os/exec"
	"testing"
)

// TestFuzzTargets runs each fuzz target for 10 s with one worker, one
// after the other (bench/fuzz.sh), and fails on a crasher: 14 targets in
// 2m40s on two cores with the build cache warm. It leaves out sqlengine,
// whose instrumented test binary alone took 3 minutes to build from a cold
// cache (its seeds still run in `go test ./sqlengine`). -short or
// CERTUS_FUZZ=0 skips it.
func TestFuzzTargets(t *testing.T) {
	if testing.Short() || os.Getenv("CERTUS_FUZZ") == "0" {
		t.Skip("fuzzing skipped (-short or CERTUS_FUZZ=0)")
	}
	cmd := exec.Command("bash", "bench/fuzz.sh", "10s")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "FUZZ_PARALLEL=1", "FUZZ_SKIP=./sqlengine")
	out, err := cmd.CombinedOutput()
	t.Logf("bench/fuzz.sh 10s:\n%s", out)
	if err != nil {
		t.Fatalf("a fuzz target failed: %v", err)
	}
}
