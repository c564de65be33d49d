#!/usr/bin/env bash
# fuzz_one.sh: run one libFuzzer target for a time budget on a working copy of its committed
# corpus; fail on any crash, sanitizer report, leak, timeout (10 s for one input) or out-of-memory.
# Usage: fuzz_one.sh TARGET CORPUS SECONDS ARTIFACTS   (ARTIFACTS: where a failing input is kept)
# Environment (tests/fuzz/run.sh sets them): FUZZ_SECONDS replaces SECONDS; FUZZ_WORK is a folder
# whose CORPUS-named subfolder keeps the corpus from run to run. Without FUZZ_WORK the copy is
# fresh and removed afterwards, so that a test depends on the committed inputs alone.
set -u
exe=$1 corpus=$2 seconds=${FUZZ_SECONDS:-$3} artifacts=$4
mkdir -p "$artifacts" || exit 2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/pw_fuzz_run_XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
work=$scratch/corpus
if [ -n "${FUZZ_WORK:-}" ]; then
    work=$FUZZ_WORK/$(basename "$corpus")
fi
mkdir -p "$work" || exit 2
cp -n "$corpus"/* "$work"/ 2>/dev/null
# Findings stop the run at once and say where; the targets compute on one thread. TMPDIR keeps
# the targets' own scratch files inside this run's folder. ASan's options are set here, not
# taken from the test setup: its slow unwinder, there for Open MPI's stacks, would cost the
# fuzzer most of its inputs per second, and no target starts MPI.
export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 TMPDIR=$scratch
# libFuzzer's own exit status for a finding is 77, meson's skip: every finding exits 1 instead.
"$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -error_exitcode=1 \
    -timeout_exitcode=1 -print_final_stats=1 -artifact_prefix="$artifacts/" "$work"
rc=$?
if [ $rc -ne 0 ]; then
    echo "FAIL $(basename "$exe"): exit status $rc; the input that failed is in $artifacts/"
    echo "replay it with: $exe $artifacts/<file>"
    exit 1
fi
