/* rmsnorm_kernels.cuh: RMSNorm forward and backward: one warp per row, sums in double; the terms
 * of dweight for the column sum (launched by rmsnorm.cu, the twin of cpu/rmsnorm.c). Written in
 * the C subset of CUDA, so that tests/cuda/test_kernels_emu.c compiles this very file on the host
 * and runs it under tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_RMSNORM_KERNELS_CUH
#define PW_RMSNORM_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "bf16.cuh"
#include "launch.cuh"
#include "rows.cuh"
#include "warp.cuh"

/* A row of C <= PW_ROW_KEEP * 32 in the lane's registers: read once, written once (as
 * layernorm_row_kept; the same bits as the loops below) */
static __device__ void rmsnorm_row_kept(float *out, uint16_t *out16, float *rstd, float *res,
                                        const float *x, const float *inp2, const float *weight,
                                        int row, int C, float eps, int lane)
{
    size_t at = (size_t)row * C;
    float v[PW_ROW_KEEP];
    pw_row_load(v, x, inp2 ? inp2 + at : NULL, lane, C, PW_ROW_KEEP);
    double ss = 0.0;
    for (int u = 0; u < PW_ROW_KEEP; u++)
        if (lane + u * PW_WARP < C) {
            if (inp2) res[at + lane + u * PW_WARP] = v[u];
            ss += (double)v[u] * v[u];
        }
    float s = (float)(1.0 / sqrt(pw_warp_sum_d(ss) / C + (double)eps));
    for (int u = 0; u < PW_ROW_KEEP; u++) {
        int c = lane + u * PW_WARP;
        v[u] = c < C ? v[u] * s * weight[c] : 0.0f;
    }
    pw_row_store(out ? out + at : NULL, out16 ? out16 + at : NULL, v, lane, C, PW_ROW_KEEP);
    if (lane == 0 && rstd) rstd[row] = s;
}

/* out (float32) and out16 (the same values rounded to bfloat16): either may be NULL. With
 * inp2, the row normalised is inp + inp2, written to res first (the residual add fused: res may
 * be inp; each lane reads back only what it wrote). */
__global__ void rmsnorm_forward_kernel(float *out, uint16_t *out16, float *rstd, float *res,
                                       const float *inp, const float *inp2, const float *weight,
                                       int N, int C, float eps)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    int row = blockIdx.x * PW_ROW_WARPS + threadIdx.x / PW_WARP;
    int lane = threadIdx.x % PW_WARP;
    if (row >= N) return; /* a whole warp leaves together: the shuffles below stay full */
    size_t at = (size_t)row * C;
    const float *x = inp + at;
    if (C <= PW_ROW_KEEP * PW_WARP) {
        rmsnorm_row_kept(out, out16, rstd, res, x, inp2, weight, row, C, eps, lane);
        return;
    }
    double ss = 0.0;
    if (inp2) { /* PW_ROW_BATCH elements at a time: layernorm_kernels.cuh says why */
        for (int c0 = lane; c0 < C; c0 += PW_ROW_BATCH * PW_WARP) {
            float v[PW_ROW_BATCH];
            pw_row_load(v, x, inp2 + at, c0, C, PW_ROW_BATCH);
            for (int u = 0; u < PW_ROW_BATCH; u++)
                if (c0 + u * PW_WARP < C) {
                    res[at + c0 + u * PW_WARP] = v[u];
                    ss += (double)v[u] * v[u];
                }
        }
        x = res + at;
    } else {
        for (int c = lane; c < C; c += PW_WARP) ss += (double)x[c] * x[c];
    }
    float s = (float)(1.0 / sqrt(pw_warp_sum_d(ss) / C + (double)eps));
    for (int c0 = lane; c0 < C; c0 += PW_ROW_BATCH * PW_WARP) {
        float y[PW_ROW_BATCH];
        for (int u = 0; u < PW_ROW_BATCH; u++) {
            int c = c0 + u * PW_WARP;
            y[u] = c < C ? x[c] * s * weight[c] : 0.0f;
        }
        pw_row_store(out ? out + at : NULL, out16 ? out16 + at : NULL, y, c0, C, PW_ROW_BATCH);
    }
    if (lane == 0 && rstd) rstd[row] = s;
}

/* The forward with a lane's elements 16 bytes at a time (pw_cuda_set_ln_vec, as
 * layernorm_forward_vec_kernel: rmsnorm.cu takes it where C is a multiple of 4 up to
 * PW_ROW_VEC * 128 and the rows are 16-byte aligned), the sum of squares in double as above, in
 * another order (each lane's four neighbours first): the results within rounding of it. */
__global__ void rmsnorm_forward_vec_kernel(float *out, uint16_t *out16, float *rstd, float *res,
                                           const float *inp, const float *inp2,
                                           const float *weight, int N, int C, float eps)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    int row = pw_row_vec_row(), lane = (int)(threadIdx.x % PW_WARP), C4 = C / 4;
    if (row >= N) return; /* a whole warp leaves together */
    size_t at = (size_t)row * C;
    float4 v[PW_ROW_VEC], wv[PW_ROW_VEC];
    pw_row_load4(v, (const float4 *)(inp + at), inp2 ? (const float4 *)(inp2 + at) : 0, lane, C4,
                 PW_ROW_VEC);
    pw_row_load4(wv, (const float4 *)weight, 0, lane, C4, PW_ROW_VEC);
    double ss = 0.0;
    PW_UNROLL
    for (int u = 0; u < PW_ROW_VEC; u++)
        if (lane + u * PW_WARP < C4) {
            if (res) ((float4 *)(res + at))[lane + u * PW_WARP] = v[u];
            ss += (double)v[u].x * v[u].x + (double)v[u].y * v[u].y + (double)v[u].z * v[u].z +
                  (double)v[u].w * v[u].w;
        }
    float s = (float)(1.0 / sqrt(pw_warp_sum_d(ss) / C + (double)eps));
    PW_UNROLL
    for (int u = 0; u < PW_ROW_VEC; u++) {
        int q = lane + u * PW_WARP;
        if (q >= C4) break;
        float4 o = make_float4(v[u].x * s * wv[u].x, v[u].y * s * wv[u].y, v[u].z * s * wv[u].z,
                               v[u].w * s * wv[u].w);
        pw_row_store4(out ? out + at : 0, out16 ? out16 + at : 0, o, q);
    }
    if (lane == 0 && rstd) rstd[row] = s;
}

/* dx = s (w dout - x s^2 mean(w dout x)); accumulated, and the sum also rounded to bfloat16
 * into dinp16 when it is not NULL (the next product's dout) */
__global__ void rmsnorm_dinp_kernel(float *dinp, uint16_t *dinp16, const float *dout,
                                    const float *inp, const float *weight, const float *rstd,
                                    int N, int C)
{
    int row = blockIdx.x * PW_ROW_WARPS + threadIdx.x / PW_WARP;
    int lane = threadIdx.x % PW_WARP;
    if (row >= N) return;
    const float *x = inp + (size_t)row * C, *d = dout + (size_t)row * C;
    float *g = dinp + (size_t)row * C;
    float s = rstd[row];
    double dot = 0.0;
    for (int c = lane; c < C; c += PW_WARP) dot += (double)weight[c] * d[c] * x[c];
    float k = (float)(pw_warp_sum_d(dot) / C) * s * s;
    for (int c0 = lane; c0 < C; c0 += PW_ROW_BATCH * PW_WARP) {
        float v[PW_ROW_BATCH];
        for (int u = 0; u < PW_ROW_BATCH; u++) {
            int c = c0 + u * PW_WARP;
            v[u] = c < C ? g[c] + s * (weight[c] * d[c] - x[c] * k) : 0.0f;
        }
        pw_row_store(g, dinp16 ? dinp16 + (size_t)row * C : NULL, v, c0, C, PW_ROW_BATCH);
    }
}

/* the terms of dweight, x s dout, laid out as the rows, for the column sum */
__global__ void rmsnorm_dw_terms_kernel(float *terms, const float *dout, const float *inp,
                                        const float *rstd, int C, size_t n)
{
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x)
        terms[e] = inp[e] * rstd[e / C] * dout[e];
}

#endif
