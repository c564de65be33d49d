#!/usr/bin/env bash
# setup_build.sh: `meson setup BUILD [ARGS]` as the project's scripts make a build folder. Where
# nvcc is on the PATH, the .cu files compile through src/kernels/cuda/nvcc_deps.sh, which
# writes the header dependencies meson before 1.4 does not ask nvcc for (without them, editing a
# .cuh rebuilt nothing); the native file that says so lives in the build folder.
#   bash launch/setup_build.sh BUILD [ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1
shift
if command -v nvcc > /dev/null && [ ! -f "$build/build.ninja" ]; then
    mkdir -p "$build"
    native=$(cd "$build" && pwd)/nvcc.ini
    printf "[binaries]\ncuda = '%s'\n" "$PWD/src/kernels/cuda/nvcc_deps.sh" > "$native"
    exec meson setup "$build" --native-file "$native" "$@"
fi
exec meson setup "$build" "$@"
