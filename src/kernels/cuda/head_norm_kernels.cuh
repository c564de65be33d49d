/* head_norm_kernels.cuh: Qwen3's q/k norm, RMSNorm over each query and key head of a row in
 * place (the twin of pw_head_rmsnorm_* in cpu/rmsnorm.c): one warp per head of a row, sums in
 * double; the terms of the weights' gradients for the column sum. Written in the C subset of
 * CUDA, so that tests/cuda/test_kernels_emu.c compiles this very file on the host and runs it
 * under tests/cuda/emu.h against the CPU kernels. */
#ifndef PW_HEAD_NORM_KERNELS_CUH
#define PW_HEAD_NORM_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "launch.cuh"
#include "warp.cuh"

/* Head i of the N x (NH + NKV) normed heads: row n = i / H, head h = i % H; its floats start at
 * n * stride + h * hs of x. Each lane reads and writes only its own floats of the head, so the
 * norm goes in place. raw and rstd (NULL: a pass no backward follows) get the head as it was and
 * its statistic. */
__global__ void head_rmsnorm_forward_kernel(float *x, float *raw, float *rstd, const float *wq,
                                            const float *wk, int N, int NH, int NKV, int hs,
                                            int stride, float eps)
{
    const int H = NH + NKV;
    size_t i = (size_t)blockIdx.x * PW_ROW_WARPS + threadIdx.x / PW_WARP;
    int lane = threadIdx.x % PW_WARP;
    if (i >= (size_t)N * H) return; /* a whole warp leaves together */
    int n = (int)(i / H), h = (int)(i % H);
    float *v = x + (size_t)n * stride + (size_t)h * hs;
    const float *w = h < NH ? wq : wk;
    double ss = 0.0;
    for (int c = lane; c < hs; c += PW_WARP) {
        float a = v[c];
        if (raw) raw[i * hs + c] = a;
        ss += (double)a * a;
    }
    float s = (float)(1.0 / sqrt(pw_warp_sum_d(ss) / hs + (double)eps));
    for (int c = lane; c < hs; c += PW_WARP) v[c] = v[c] * s * w[c];
    if (lane == 0 && rstd) rstd[i] = s;
}

/* The weights' terms, raw x rstd x the normed head's gradient, as rows for the column sum: the
 * N NH query heads first (row n NH + h), then the N NKV key heads (row N NH + n NKV + h - NH).
 * Launched before head_rmsnorm_dinp_kernel, which replaces the gradient it reads. */
__global__ void head_rmsnorm_dw_terms_kernel(float *terms, const float *dx, const float *raw,
                                             const float *rstd, int N, int NH, int NKV, int hs,
                                             int stride)
{
    const int H = NH + NKV;
    const size_t total = (size_t)N * H * hs;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t i = e / hs;
        int c = (int)(e % hs), h = (int)(i % H);
        size_t n = i / H;
        size_t r = h < NH ? n * NH + h : (size_t)N * NH + n * NKV + (size_t)(h - NH);
        terms[r * hs + c] = raw[e] * rstd[i] * dx[n * stride + (size_t)h * hs + c];
    }
}

/* The raw head's gradient in place of the normed one's: s (w d - r s^2 mean(w d r)), the dot
 * product summed (each lane its own floats, then the warp) before any lane writes */
__global__ void head_rmsnorm_dinp_kernel(float *dx, const float *raw, const float *rstd,
                                         const float *wq, const float *wk, int N, int NH,
                                         int NKV, int hs, int stride)
{
    const int H = NH + NKV;
    size_t i = (size_t)blockIdx.x * PW_ROW_WARPS + threadIdx.x / PW_WARP;
    int lane = threadIdx.x % PW_WARP;
    if (i >= (size_t)N * H) return;
    int n = (int)(i / H), h = (int)(i % H);
    float *d = dx + (size_t)n * stride + (size_t)h * hs;
    const float *r = raw + i * hs, *w = h < NH ? wq : wk;
    float s = rstd[i];
    double dot = 0.0;
    for (int c = lane; c < hs; c += PW_WARP) dot += (double)w[c] * d[c] * r[c];
    float k = (float)(pw_warp_sum_d(dot) / hs) * s * s;
    for (int c = lane; c < hs; c += PW_WARP) d[c] = s * (w[c] * d[c] - r[c] * k);
}

#endif
