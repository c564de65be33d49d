/* colsum_kernels.cuh: the deterministic column sum's two stages (launched by colsum.cu): row
 * chunks into partials in parallel, then the partials in chunk order. Written in the C subset of
 * CUDA, so that tests/cuda/test_gpt2_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h. */
#ifndef PW_COLSUM_KERNELS_CUH
#define PW_COLSUM_KERNELS_CUH

#include <stddef.h>
#include <stdint.h>

#include "bf16.cuh"
#include "launch.cuh"

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

/* The bfloat16 partials 8 columns a thread (pw_cuda_set_colsum_vec; colsum.cu takes it where C
 * and ld are multiples of 8 and src is 16-byte aligned), grid (pw_colsum_vec_grid_x, nchunks) of
 * pw_colsum_vec_threads: group q = columns 8q .. 8q + 7, read as one 16-byte load a row,
 * PW_COLSUM_UNROLL rows loaded before any is added. Each column's sum is the scalar kernel's:
 * float32, its chunk's rows in order from 0.0f, so the same bits. The scalar kernel's thread
 * reads 2 bytes a row, one row at a time: a warp's load is 64 bytes, and a row's sum waits for
 * each load in turn. */
__global__ void colsum_partial_bf16_vec_kernel(float *partial, const uint16_t *src, int N, int C,
                                               int ld, int rows)
{
    int c0 = 8 * (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (c0 >= C) return;
    int r0 = blockIdx.y * rows;
    int r1 = r0 + rows < N ? r0 + rows : N;
    float s[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = r0; i < r1; i += PW_COLSUM_UNROLL) {
        uint4 v[PW_COLSUM_UNROLL];
        PW_UNROLL
        for (int u = 0; u < PW_COLSUM_UNROLL; u++)
            v[u] = i + u < r1 ? *(const uint4 *)(src + (size_t)(i + u) * ld + c0)
                              : make_uint4(0u, 0u, 0u, 0u);
        PW_UNROLL
        for (int u = 0; u < PW_COLSUM_UNROLL; u++) {
            if (i + u >= r1) break;
            uint32_t w[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
            PW_UNROLL
            for (int k = 0; k < 4; k++) {
                s[2 * k] += pw_bf16_float(w[k] & 0xffffu);
                s[2 * k + 1] += pw_bf16_float(w[k] >> 16);
            }
        }
    }
    float *out = partial + (size_t)blockIdx.y * C + c0;
    PW_UNROLL
    for (int k = 0; k < 8; k++) out[k] = s[k];
}

/* one thread per column adds the nchunks partials in chunk order, PW_COLSUM_UNROLL of them
 * loaded before any is added (the adds keep their order: the same bits as one at a time, where
 * each add waited for its own load: at GPT-2's 16384 rows, 256 round trips to L2 in a row) */
__global__ void colsum_finish_kernel(float *dst, const float *partial, int nchunks, int C)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0.0f;
    for (int y = 0; y < nchunks; y += PW_COLSUM_UNROLL) {
        float v[PW_COLSUM_UNROLL];
        PW_UNROLL
        for (int u = 0; u < PW_COLSUM_UNROLL; u++)
            v[u] = y + u < nchunks ? partial[(size_t)(y + u) * C + c] : 0.0f;
        PW_UNROLL
        for (int u = 0; u < PW_COLSUM_UNROLL; u++)
            if (y + u < nchunks) s += v[u];
    }
    dst[c] += s;
}

#endif
