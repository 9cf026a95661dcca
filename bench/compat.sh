#!/usr/bin/env bash
# MySQL compatibility: go-mysql-server's engine test suites on Certus next to
# the same suites on go-mysql-server's memory harness, in one run. Prints, per
# suite, the leaf tests passed, failed and skipped on each, and Certus's passes
# as a share of the memory harness's (docs/COMPAT.md).
# Usage: bash bench/compat.sh [OUT.json]     (the raw go test -json goes to OUT)
# CERTUS_COMPAT=short runs only the suites of the default go test.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-$(mktemp -t certus-compat.XXXXXX.json)}"
CERTUS_COMPAT="${CERTUS_COMPAT:-full}" CERTUS_COMPAT_MEMORY=1 go test -json -count=1 -timeout 60m \
	-run '^Test(Certus|Memory)$' ./compat/ >"$out"
status=$?
go run ./compat/report <"$out"
echo
echo "raw results: $out"
exit $status
