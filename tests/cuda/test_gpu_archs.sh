#!/usr/bin/env bash
# test_gpu_archs.sh: the GPUs a build can be made for (docs/cuda.md, Build: the architectures).
# 1. meson's gpu_arch option: a value that is not a list of compute capabilities, one below 8.0,
#    or one this nvcc does not build for stops `meson setup` with its own message (not thousands
#    of ptxas errors later); a list ("90,80") gives machine code for each, sm_90a for 90, PTX for
#    the highest, and the list to the C code (PW_GPU_ARCHS).
# 2. Every .cu file compiles for sm_80 (A100: the floor, where nothing of Hopper's may be left
#    unguarded), device code only; and the .cu files that include wgmma.cuh, where sm_90a's
#    warpgroup products are, for sm_100 (Blackwell: past Hopper, where they do not exist; the
#    other files' only guard, pdl.cuh's, holds from 9.0 up). Needs nvcc, no GPU; skips (77)
#    without nvcc.
# SRC: the repository's root (default: this script's).
set -uo pipefail
root=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v nvcc > /dev/null || { echo "no nvcc: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# setup VALUE EXPECT: `meson setup -Dgpu_arch=VALUE` must stop with EXPECT (a fixed string) in
# its error, or with EXPECT "ok" must succeed (the folder in $made)
made=
setup() {
    local dir=$work/b$RANDOM rc=0
    meson setup "$dir" "$root" -Dcuda=enabled -Dgpu_arch="$1" > "$work/log" 2>&1 || rc=$?
    if [ "$2" = ok ]; then
        [ $rc = 0 ] || { tail -5 "$work/log"; fail "gpu_arch '$1' refused"; }
        made=$dir
        return
    fi
    if [ $rc = 0 ]; then
        fail "gpu_arch '$1' accepted"
    elif ! grep -qF -- "$2" "$work/log"; then
        grep ERROR "$work/log"
        fail "gpu_arch '$1': no \"$2\" in meson's error"
    else
        echo "gpu_arch '$1': refused: $(grep -o 'ERROR: .*' "$work/log" | cut -c1-140)"
    fi
    rm -rf "$dir"
}

setup 8.0 "gpu_arch '8.0': expected compute capabilities as whole numbers"
setup 90,sm_90 "gpu_arch '90,sm_90': expected compute capabilities"
setup 86,70 "gpu_arch '86,70': compute capability 7.0 is below 8.0"
setup 990 "does not build for sm_990; it builds for: "
setup " 90a, 80,90" ok
dir=$made
if [ -f "$dir/build.ninja" ]; then
    for want in "arch=compute_90a,code=sm_90a" "arch=compute_80,code=sm_80" \
                "arch=compute_90,code=compute_90" "PW_GPU_ARCHS=\"90,80\""; do
        grep -qF -- "$want" "$dir/build.ninja" || fail "gpu_arch ' 90a, 80,90': no $want"
    done
    grep -qF -- "arch=compute_80,code=compute_80" "$dir/build.ninja" &&
        fail "gpu_arch '90,80': PTX for 80 as well as for the highest"
    echo "gpu_arch ' 90a, 80,90': machine code for 90a and 80, PTX for 90"
fi

# device code only, two files at a time (CI has two cores), unoptimised: an instruction the
# architecture lacks stops ptxas at any level (a wgmma left unguarded is refused at -O0 for sm_80
# and sm_100 alike), and -O0 takes a third of the time of -O3
for arch in 80 100; do
    if [ $arch = 80 ]; then
        files=$(ls "$root"/src/kernels/cuda/*.cu)
    else
        files=$(grep -l 'include "wgmma.cuh"' "$root"/src/kernels/cuda/*.cu)
    fi
    [ -n "$files" ] || fail "sm_$arch: no .cu file found"
    printf '%s\n' $files | xargs -P 2 -I{} sh -c '
        f={}; out="$1/$(basename "$f").$2"
        nvcc -cubin -arch=sm_$2 -Xcicc -O0 -Xptxas -O0 --use_fast_math -DPW_HAVE_CUDA=1 \
             -I"$3/include" -I"$3/src/kernels" -o "$out.cubin" "$f" > "$out.log" 2>&1 ||
            echo "$f" >> "$1/failed.$2"
    ' _ "$work" "$arch" "$root"
    n=$(ls "$work"/*."$arch".cubin 2> /dev/null | wc -l)
    if [ -f "$work/failed.$arch" ]; then
        for f in $(cat "$work/failed.$arch"); do
            head -5 "$work/$(basename "$f").$arch.log"
            fail "sm_$arch: $f does not compile"
        done
    else
        echo "sm_$arch: $n files compile"
    fi
done

[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
echo "gpu archs: ok"
