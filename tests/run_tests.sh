#!/usr/bin/env bash
# run_tests.sh: install what is missing, build, run every meson test suite, and end with the
# plain summary line "N passed, N failed, N skipped". Extra arguments go to `meson test`
# (e.g. --suite kernels). BUILD names the build folder (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/install_deps.sh
BUILD=${BUILD:-build}
if [ ! -f "$BUILD/build.ninja" ]; then
    meson setup "$BUILD"
fi
meson compile -C "$BUILD"
set +e
meson test -C "$BUILD" --print-errorlogs --num-processes 2 "$@"
rc=$?
python3 tests/summary.py "$BUILD/meson-logs/testlog.json"
src=$?
[ $rc -eq 0 ] && [ $src -eq 0 ]
