#!/usr/bin/env bash
# run.sh: the longer fuzz run (docs/testing.md): every target of tests/fuzz for SECONDS each
# (default 600), two at a time, in the sanitizer build of tests/run_tests.sh, on corpora kept in
# that build folder from run to run (seeded from tests/fuzz/corpus). Ends with the summary line.
# Usage: bash tests/fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-600}
SAN_BUILD=${SAN_BUILD:-build-san}
case $SAN_BUILD in /*) work=$SAN_BUILD/fuzz-corpus ;; *) work=$PWD/$SAN_BUILD/fuzz-corpus ;; esac
# No meson timeout (multiplier 0): the budget is libFuzzer's own -max_total_time.
FUZZ_SECONDS=$seconds FUZZ_WORK=$work SAN=only SAN_BUILD=$SAN_BUILD \
    exec bash tests/run_tests.sh --suite fuzz --timeout-multiplier 0
