#!/usr/bin/env bash
# run_tests.sh: install what is missing, build, run every meson test suite, then run the
# unit-level suites, the roles tests of suite san and the fuzz targets again in a clang build
# under AddressSanitizer and UndefinedBehaviorSanitizer (docs/testing.md; the tests of suite san
# run in that build only, when there is one), and end with the plain summary line
# "N passed, N failed, N skipped" over both builds.
#   bash tests/run_tests.sh                    both builds
#   bash tests/run_tests.sh --suite kernels    the plain build only; arguments go to `meson test`
#   SAN=0 bash tests/run_tests.sh              the plain build only
#   SAN=only bash tests/run_tests.sh [ARGS]    the sanitizer build only (ARGS: its `meson test`'s)
# BUILD names the plain build folder (default: build), SAN_BUILD the sanitizer one (build-san).
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/install_deps.sh --test
BUILD=${BUILD:-build}
SAN_BUILD=${SAN_BUILD:-build-san}
# Arguments choose tests of the plain build; the sanitizer pass runs its own selection.
if [ $# -gt 0 ]; then SAN=${SAN:-0}; else SAN=${SAN:-1}; fi
have_clang=0
if command -v clang >/dev/null; then have_clang=1; fi
# The tests of suite san run in the sanitizer pass when there is one (the MPI ones, hostile
# inputs under mpirun and a PPO step per family, take a minute of CI): the plain pass leaves
# them to it.
plain=()
if [ $# -eq 0 ] && [ "$SAN" = 1 ] && [ $have_clang = 1 ]; then plain=(--no-suite san); fi
logs=()
skips=()
rc=0

# Each pass's minutes go to the log, for the CI budget (docs/testing.md, Time).
took() { printf 'run_tests: %s took %dm%02ds\n' "$1" $((SECONDS / 60)) $((SECONDS % 60)); }

if [ "$SAN" != only ]; then
    SECONDS=0
    if [ ! -f "$BUILD/build.ninja" ]; then
        bash launch/setup_build.sh "$BUILD"
    fi
    meson compile -C "$BUILD"
    rm -f "$BUILD/meson-logs/testlog.json"
    meson test -C "$BUILD" --print-errorlogs --num-processes 2 ${plain[@]+"${plain[@]}"} "$@" ||
        rc=1
    logs+=("$BUILD/meson-logs/testlog.json")
    took "the plain pass"
fi

if [ "$SAN" != 0 ]; then
    if [ $have_clang = 0 ]; then
        echo "run_tests: clang not found: the sanitizer build and the fuzz targets are skipped"
        skips+=("sanitizer build")
    else
        SECONDS=0
        if [ ! -f "$SAN_BUILD/build.ninja" ]; then
            # Open MPI's C wrapper flags and pkg-config files do not depend on the compiler, so
            # the same dependencies serve clang. The CUDA backend is left out: nvcc does not
            # take the sanitizer flags, and there is no GPU in this pass.
            # b_lundef=false: meson's advice for clang's sanitizers.
            CC=clang meson setup "$SAN_BUILD" -Db_sanitize=address,undefined -Db_lundef=false \
                -Dcuda=disabled
        fi
        meson compile -C "$SAN_BUILD"
        rm -f "$SAN_BUILD/meson-logs/testlog-san.json" # meson names it after the setup
        # The unit-level suites, the roles tests tagged san (one PPO step per family, bad
        # inputs under mpirun, the sft and rm modes) and the fuzz targets. The long PPO runs
        # (the rest of roles, e2e) and the placement dry runs (one MPI job each) stay in the
        # plain build.
        if [ "$SAN" = only ] && [ $# -gt 0 ]; then
            set -- --setup san "$@"
        else
            set -- --setup san --suite common --suite kernels --suite algo --suite model \
                --suite data --suite runtime --suite report --suite san --suite fuzz \
                --no-suite placement --no-suite emu
        fi
        meson test -C "$SAN_BUILD" --print-errorlogs --num-processes 2 "$@" || rc=1
        logs+=("$SAN_BUILD/meson-logs/testlog-san.json")
        took "the sanitizer pass"
    fi
fi

set +e
python3 tests/summary.py "${logs[@]}" "${skips[@]/#/--skipped=}"
src=$?
[ $rc -eq 0 ] && [ $src -eq 0 ]
