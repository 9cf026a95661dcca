#!/usr/bin/env bash
# Long fault test with real processes: kill -9, SIGSTOP and partitions under
# bank and causal-read load on a 3-node cluster (systest TestFaultsUnderLoad).
# Usage: bash bench/faults.sh [DURATION] [SEED]     e.g. bash bench/faults.sh 10m
set -euo pipefail
cd "$(dirname "$0")/.."
export CERTUS_FAULT_DURATION="${1:-10m}"
[ -n "${2:-}" ] && export CERTUS_FAULT_SEED="$2"
exec go test ./systest/ -run 'TestFaultsUnderLoad$' -count=1 -v -timeout 0
