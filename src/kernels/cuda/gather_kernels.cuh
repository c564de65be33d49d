/* gather_kernels.cuh: copy chosen rows into a dense matrix: a grid-stride loop (launched by
 * gather.cu; the CPU twin is cpu/gather.c). Written in the C subset of CUDA, so that
 * tests/cuda/test_gpt2_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_GATHER_KERNELS_CUH
#define PW_GATHER_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "warp.cuh"

__global__ void gather_rows_kernel(float *dst, const float *src, const int *rows, int n, int C)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    size_t total = (size_t)n * C;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t i = e / C, c = e % C;
        dst[e] = src[(size_t)rows[i] * C + c];
    }
}

#endif
