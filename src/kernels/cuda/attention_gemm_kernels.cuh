/* attention_gemm_kernels.cuh: the row kernels of the attention's GEMM path (attention.cu: heads
 * above 128, or pw_cuda_set_flash(0)): the masked softmax over scores cuBLAS wrote, its
 * recomputation from the log-sum-exp, and its backward. Written in the C subset of CUDA, so
 * that tests/cuda/test_kernels_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h. */
#ifndef PW_ATTENTION_GEMM_KERNELS_CUH
#define PW_ATTENTION_GEMM_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "warp.cuh"

/* The row kernels below run one warp per query row (h, t) of one sequence's NH heads, with that
 * sequence's mask row m (NULL: all real): the warp's row, or false past the last one. */
static __device__ __forceinline__ int warp_row(int NH, int T, size_t *row, int *lane)
{
    *row = (size_t)blockIdx.x * (blockDim.x / PW_WARP) + threadIdx.x / PW_WARP;
    *lane = threadIdx.x % PW_WARP;
    return *row < (size_t)NH * T;
}

/* Scores already scaled by the GEMM become probabilities over the keys s <= t that are real;
 * everything else in the row is 0, and a padding query's whole row is 0. lse[row] gets the
 * row's log-sum-exp (0 for padding). */
__global__ void masked_softmax_kernel(float *att, float *lse, const int *m, int NH, int T)
{
    size_t row;
    int lane;
    if (!warp_row(NH, T, &row, &lane)) return;
    int t = (int)(row % T);
    float *a = att + row * T;
    if (m && !m[t]) {
        for (int s = lane; s < T; s += PW_WARP) a[s] = 0.0f;
        if (lane == 0) lse[row] = 0.0f;
        return;
    }
    float mx = -INFINITY;
    for (int s = lane; s <= t; s += PW_WARP)
        if (!m || m[s]) mx = fmaxf(mx, a[s]);
    mx = pw_warp_max(mx); /* finite: key t is the real query itself */
    float z = 0.0f;
    for (int s = lane; s <= t; s += PW_WARP)
        if (!m || m[s]) z += expf(a[s] - mx);
    z = pw_warp_sum(z); /* z >= 1: the max term is exp(0) */
    float inv = 1.0f / z;
    for (int s = lane; s < T; s += PW_WARP)
        a[s] = (s <= t && (!m || m[s])) ? expf(a[s] - mx) * inv : 0.0f;
    if (lane == 0) lse[row] = mx + logf(z);
}

/* Backward's recomputation: the scores again, exp(score - lse) over the real keys s <= t, 0
 * elsewhere and in a padding query's row. */
__global__ void softmax_recompute_kernel(float *att, const float *lse, const int *m, int NH, int T)
{
    size_t row;
    int lane;
    if (!warp_row(NH, T, &row, &lane)) return;
    int t = (int)(row % T);
    float *a = att + row * T;
    int real = !m || m[t];
    float l = lse[row];
    for (int s = lane; s < T; s += PW_WARP)
        a[s] = (real && s <= t && (!m || m[s])) ? expf(a[s] - l) : 0.0f;
}

/* dS = scale P (dP - rowsum(P dP)) in place over dP, restricted to the entries the forward
 * kept (s <= t, real key, real query); the rest is written 0 so the GEMMs may read whole rows */
__global__ void softmax_backward_kernel(float *dp, const float *att, const int *m, int NH, int T,
                                        float scale)
{
    size_t row;
    int lane;
    if (!warp_row(NH, T, &row, &lane)) return;
    int t = (int)(row % T);
    float *d = dp + row * T;
    const float *p = att + row * T;
    if (m && !m[t]) {
        for (int s = lane; s < T; s += PW_WARP) d[s] = 0.0f;
        return;
    }
    float dot = 0.0f;
    for (int s = lane; s <= t; s += PW_WARP)
        if (!m || m[s]) dot += p[s] * d[s];
    dot = pw_warp_sum(dot);
    for (int s = lane; s < T; s += PW_WARP)
        d[s] = (s <= t && (!m || m[s])) ? scale * p[s] * (d[s] - dot) : 0.0f;
}

#endif
