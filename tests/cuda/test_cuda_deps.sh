#!/usr/bin/env bash
# test_cuda_deps.sh: a CUDA build set up by launch/setup_build.sh knows which headers each .cu
# object includes (src/kernels/cuda/nvcc_deps.sh writes them for meson before 1.4): ninja's
# record of the sampler's object names sample_kernel.cuh, so editing it rebuilds the object.
# Skips (77) in a build without CUDA objects or set up without the wrapper. BUILD: the build.
set -uo pipefail
: "${BUILD:?BUILD must name a meson build folder (meson sets it)}"
obj=$(cd "$BUILD" && find . -path '*pw_kernels*' -name 'cuda_sample.cu.o' | head -1)
if [ -z "$obj" ]; then
    echo "test_cuda_deps: no CUDA objects in $BUILD (built without nvcc): skipped"
    exit 77
fi
if ! grep -q "nvcc_deps.sh" "$BUILD/build.ninja"; then
    echo "test_cuda_deps: $BUILD was not set up by launch/setup_build.sh: skipped"
    exit 77
fi
deps=$(ninja -C "$BUILD" -t deps "${obj#./}")
if ! grep -q "sample_kernel.cuh" <<< "$deps"; then
    echo "$deps"
    echo "FAIL: ninja records no header of ${obj#./}: editing a .cuh would rebuild nothing"
    exit 1
fi
echo "test_cuda_deps: ok ($(grep -c '\.cuh' <<< "$deps") headers of ${obj#./})"
