#!/usr/bin/env bash
# Runs every fuzz target of the module (Go native fuzzing) for DURATION
# each, one after the other, and prints per target the executions, the new
# inputs that widened coverage, the seconds it took (with compiling) and
# whether it found a crasher (written to the package's
# testdata/fuzz/<Target>/, where `go test` replays it).
# Exits non-zero when one did.
#
# Usage: bash bench/fuzz.sh [DURATION] [PACKAGE...]   e.g. bash bench/fuzz.sh 10m
#                                                         bash bench/fuzz.sh 30s ./writeset
# FUZZ_PARALLEL sets the workers per target (default: every core), FUZZ_SKIP
# packages to leave out (e.g. "./sqlengine"), FUZZ_WRAP a prefix of each run
# (e.g. "flock /tmp/heavy.lock"), FUZZ_DEADLINE (Unix seconds) a time after
# which no target starts: those left are reported as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-10m}"
shift || true
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)

out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=0
printf '%-22s %-26s %12s %6s %5s  %s\n' package target execs new secs result
for dir in $(go list -f '{{.Dir}}' "${pkgs[@]}"); do
  pkg=./$(realpath --relative-to=. "$dir")
  [[ " ${FUZZ_SKIP:-} " == *" $pkg "* ]] && continue
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    result=ok start=$SECONDS
    if [ -n "${FUZZ_DEADLINE:-}" ] && [ "$(date +%s)" -ge "$FUZZ_DEADLINE" ]; then
      printf '%-22s %-26s %12s %6s %5s  %s\n' "$pkg" "$target" - - 0 "skipped (out of time)"
      continue
    fi
    # Go minimizes each new input for up to a minute by default: a slow
    # target (FuzzJoinerStream) ran 6,341 inputs in 3 minutes that way,
    # 253,023 with 5 s
    # shellcheck disable=SC2086
    if ${FUZZ_WRAP:-} go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$duration" -fuzzminimizetime 5s \
        -parallel "${FUZZ_PARALLEL:-$(nproc)}" >"$out" 2>&1; then
      :
    elif grep -q '^ *context deadline exceeded$' "$out" && ! grep -q -E 'Failing input|seed corpus entry' "$out"; then
      # Go's coordinator can fail a run as -fuzztime ends without any
      # crasher (go.dev/issue/75804, fixed in Go 1.27)
      result="ok (deadline race at the end)"
    else
      # the crasher written, or the seed that failed
      result="FAILED $(grep -o -E 'testdata/fuzz/[^ ]+|seed corpus entry: [^ ]+' "$out" | tail -1 || true)"
      failed=1
    fi
    last=$(grep 'execs:' "$out" | tail -1 || true)
    execs=$(sed -n 's/.*execs: \([0-9]*\).*/\1/p' <<<"$last")
    new=$(sed -n 's/.*new interesting: \([0-9]*\).*/\1/p' <<<"$last")
    printf '%-22s %-26s %12s %6s %5s  %s\n' "$pkg" "$target" "${execs:-0}" "${new:-0}" $((SECONDS - start)) "$result"
    if [[ $result == FAILED* ]]; then sed 's/^/    /' "$out" | tail -30; fi
  done
done
exit $failed
