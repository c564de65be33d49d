/* colsum_kernels.cuh: the deterministic column sum's two stages (launched by colsum.cu): row
 * chunks into partials in parallel, then the partials in chunk order. Written in the C subset of
 * CUDA, so that tests/cuda/test_gpt2_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h. */
#ifndef PW_COLSUM_KERNELS_CUH
#define PW_COLSUM_KERNELS_CUH

#include <stddef.h>
#include <stdint.h>

#include "bf16.cuh"

/* grid (ceil(C/256), nchunks): thread c of chunk y sums rows [y*rows, (y+1)*rows); a warp reads 32
 * consecutive columns of one row, so every load is coalesced. src holds float, or bfloat16 bits
 * when bf16 (the same for the whole launch: no divergence). */
__global__ void colsum_partial_kernel(float *partial, const void *src, int bf16, int N, int C,
                                      int ld, int rows)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    int r0 = blockIdx.y * rows;
    int r1 = r0 + rows < N ? r0 + rows : N;
    float s = 0.0f;
    if (bf16) {
        const uint16_t *h = (const uint16_t *)src;
        for (int i = r0; i < r1; i++) s += pw_bf16_float(h[(size_t)i * ld + c]);
    } else {
        const float *f = (const float *)src;
        for (int i = r0; i < r1; i++) s += f[(size_t)i * ld + c];
    }
    partial[(size_t)blockIdx.y * C + c] = s;
}

/* one thread per column adds the nchunks partials in chunk order */
__global__ void colsum_finish_kernel(float *dst, const float *partial, int nchunks, int C)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0.0f;
    for (int y = 0; y < nchunks; y++) s += partial[(size_t)y * C + c];
    dst[c] += s;
}

#endif
