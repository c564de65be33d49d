/* rows.cuh: what the row kernels (LayerNorm, RMSNorm: one warp per row) share: n of a lane's
 * elements of a row, 32 apart from channel c0, loaded before any is used, and stored after all
 * are made (PW_ROW_BATCH and PW_ROW_KEEP in launch.cuh say why). Inlined with a constant n, the
 * arrays stay in registers. C subset of CUDA: the emulated twins compile it on the host. */
#ifndef PW_ROWS_CUH
#define PW_ROWS_CUH

#include <stdint.h>

#include "bf16.cuh"
#include "warp.cuh"

/* v[u] = x[c], plus y[c] when y is not NULL, for c = c0 + 32 u < C; 0 past C */
static __device__ __forceinline__ void pw_row_load(float *v, const float *x, const float *y,
                                                   int c0, int C, int n)
{
    for (int u = 0; u < n; u++) {
        int c = c0 + u * PW_WARP;
        v[u] = c < C ? (y ? x[c] + y[c] : x[c]) : 0.0f;
    }
}

/* out[c] = v[u] and out16[c] = v[u] rounded to bfloat16, for c = c0 + 32 u < C; either row may
 * be NULL */
static __device__ __forceinline__ void pw_row_store(float *out, uint16_t *out16, const float *v,
                                                    int c0, int C, int n)
{
    for (int u = 0; u < n; u++) {
        int c = c0 + u * PW_WARP;
        if (c >= C) break;
        if (out) out[c] = v[u];
        if (out16) out16[c] = pw_bf16_bits(v[u]);
    }
}

#endif
