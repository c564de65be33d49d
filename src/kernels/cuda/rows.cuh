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

/* The float4 forms (pw_cuda_set_ln_vec): a warp a row, blockDim.x / 32 rows a block */
static __device__ __forceinline__ int pw_row_vec_row(void)
{
    return (int)(blockIdx.x * (blockDim.x / PW_WARP) + threadIdx.x / PW_WARP);
}

/* v[u] = x[q], plus y[q] when y is not NULL, for float4
 * q = lane + 32 u < C4 of a row; zeros past it */
static __device__ __forceinline__ void pw_row_load4(float4 *v, const float4 *x, const float4 *y,
                                                    int lane, int C4, int n)
{
    for (int u = 0; u < n; u++) {
        int q = lane + u * PW_WARP;
        v[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (q < C4) {
            v[u] = x[q];
            if (y) {
                float4 t = y[q];
                v[u] = make_float4(v[u].x + t.x, v[u].y + t.y, v[u].z + t.z, v[u].w + t.w);
            }
        }
    }
}

/* float4 q of a row into out and, rounded, into out16 (8 bytes); either may be NULL */
static __device__ __forceinline__ void pw_row_store4(float *out, uint16_t *out16, float4 o, int q)
{
    if (out) ((float4 *)out)[q] = o;
    if (out16) {
        uint32_t *h = (uint32_t *)out16 + 2 * q;
        h[0] = (uint32_t)pw_bf16_bits(o.x) | (uint32_t)pw_bf16_bits(o.y) << 16;
        h[1] = (uint32_t)pw_bf16_bits(o.z) | (uint32_t)pw_bf16_bits(o.w) << 16;
    }
}

#endif
