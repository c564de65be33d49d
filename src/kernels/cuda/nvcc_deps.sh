#!/bin/sh
# nvcc_deps.sh: nvcc, with the header dependencies that meson before 1.4 does not ask it for:
# a compile (-c, -o OUT) also writes OUT.d, the file ninja reads, so that editing a .cuh
# rebuilds every object that includes it (without it, only the .cu's own edits did, and a GPU
# run measured objects older than their headers). tests/run_tests.sh and launch/quickstart.sh
# compile through it (launch/setup_build.sh; docs/cuda.md, Building). PW_NVCC: the real nvcc.
out=""
compile=0
deps=0
prev=""
for a in "$@"; do
    [ "$prev" = "-o" ] && out=$a
    case $a in
    -c) compile=1 ;;
    -MF | -MD | -M) deps=1 ;; # a newer meson asks for them itself
    esac
    prev=$a
done
if [ $compile = 1 ] && [ $deps = 0 ] && [ -n "$out" ]; then
    exec "${PW_NVCC:-nvcc}" "$@" -MD -MF "$out.d"
fi
exec "${PW_NVCC:-nvcc}" "$@"
