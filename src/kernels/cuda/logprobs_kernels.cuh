/* logprobs_kernels.cuh: log-probabilities, entropies and cross-entropy of chosen tokens and their
 * backward: one block of LP_THREADS per row of logits (launched by logprobs.cu, the twin of
 * cpu/logprobs.c). Written in the C subset of CUDA, so that tests/cuda/test_kernels_emu.c compiles
 * this very file on the host and runs it under tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_LOGPROBS_KERNELS_CUH
#define PW_LOGPROBS_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "warp.cuh"

#define LP_THREADS 512 /* V = 50257: about 100 logits per thread */

/* A row's running statistics: max m, z = sum exp(x - m), w = sum exp(x - m) (x - m). One pass
 * over the row builds them (online, rescaling when the max grows) and the entropy is
 * H = log z - w / z, as the CPU twin computes it in two passes. */
typedef struct RowStats {
    float m, z, w;
} RowStats;

static __device__ __forceinline__ RowStats stats_empty(void)
{
    RowStats s = {-INFINITY, 0.0f, 0.0f};
    return s;
}

/* merge two partial states; an empty side (z = 0, m = -inf) must not meet -inf - -inf */
static __device__ __forceinline__ RowStats stats_merge(RowStats a, RowStats b)
{
    if (b.z == 0.0f) return a;
    if (a.z == 0.0f) return b;
    float M = fmaxf(a.m, b.m);
    float ra = expf(a.m - M), rb = expf(b.m - M);
    /* exp(x - M) = exp(x - m) r and (x - M) = (x - m) + (m - M) */
    RowStats s;
    s.m = M;
    s.z = a.z * ra + b.z * rb;
    s.w = ra * (a.w + a.z * (a.m - M)) + rb * (b.w + b.z * (b.m - M));
    return s;
}

static __device__ __forceinline__ RowStats stats_add(RowStats s, float x)
{
    /* a -inf logit (a token ruled out) adds exp(-inf) = 0 to z and, in the limit, 0 to w */
    if (x == -INFINITY) return s;
    if (x > s.m) {
        /* rescale what was summed to the new max; on the first element z = w = 0 and the
         * factor exp(-inf) = 0 multiplies zeros only, the -inf difference is never used */
        float r = s.z == 0.0f ? 0.0f : expf(s.m - x);
        float dm = s.z == 0.0f ? 0.0f : s.m - x;
        s.w = r * (s.w + s.z * dm);
        s.z = s.z * r + 1.0f; /* the new element contributes exp(0) = 1 and (x - m) = 0 */
        s.m = x;
    } else {
        float e = expf(x - s.m);
        s.z += e;
        s.w += e * (x - s.m);
    }
    return s;
}

/* The whole block's statistics of row x(V), returned to every thread. */
static __device__ RowStats row_stats(const float *x, int V)
{
    __shared__ RowStats warp_stats[LP_THREADS / PW_WARP];
    RowStats s = stats_empty();
    for (int v = threadIdx.x; v < V; v += blockDim.x) s = stats_add(s, x[v]);
    for (int o = PW_WARP / 2; o > 0; o >>= 1) {
        RowStats other;
        other.m = __shfl_xor_sync(0xffffffffu, s.m, o);
        other.z = __shfl_xor_sync(0xffffffffu, s.z, o);
        other.w = __shfl_xor_sync(0xffffffffu, s.w, o);
        s = stats_merge(s, other);
    }
    int warp = threadIdx.x / PW_WARP, lane = threadIdx.x % PW_WARP;
    if (lane == 0) warp_stats[warp] = s;
    __syncthreads();
    /* every thread merges the warps' results in the same order: all get identical bits */
    RowStats t = warp_stats[0];
    for (int i = 1; i < (int)(blockDim.x / PW_WARP); i++) t = stats_merge(t, warp_stats[i]);
    __syncthreads(); /* warp_stats may be reused by a later call in the same kernel */
    return t;
}

/* logp and entropy (either NULL) of one row per block; loss instead when loss != NULL */
__global__ void logprobs_forward_kernel(float *logp, float *entropy, float *loss,
                                        const float *logits, const int *targets, int V, int ld)
{
    int i = blockIdx.x, target = targets[i];
    if (target < 0) {
        if (threadIdx.x == 0) {
            if (logp) logp[i] = 0.0f;
            if (entropy) entropy[i] = 0.0f;
            if (loss) loss[i] = 0.0f;
        }
        return; /* the whole block leaves: no barrier is left waiting */
    }
    const float *x = logits + (size_t)i * ld;
    RowStats s = row_stats(x, V);
    if (threadIdx.x == 0) {
        float logz = logf(s.z);
        if (logp) logp[i] = (x[target] - s.m) - logz;
        if (entropy) entropy[i] = logz - s.w / s.z;
        if (loss) loss[i] = (s.m - x[target]) + logz;
    }
}

/* dx_v = g ([v = t] - p_v) - h p_v (log p_v + H), written, and 0 in the padding columns
 * V..ld-1; dx may be x: every x[v] is read by the block's statistics before the barrier in
 * row_stats, then read and written by the one thread that owns v */
__global__ void logprobs_backward_kernel(float *dlogits, const float *logits, const int *targets,
                                         const float *dlogp, const float *dentropy, float gsign,
                                         int V, int ld)
{
    int i = blockIdx.x, target = targets[i];
    float g = dlogp ? gsign * dlogp[i] : 0.0f, h = dentropy ? dentropy[i] : 0.0f;
    float *dx = dlogits + (size_t)i * ld;
    for (int v = V + threadIdx.x; v < ld; v += blockDim.x) dx[v] = 0.0f;
    if (target < 0 || (g == 0.0f && h == 0.0f)) {
        for (int v = threadIdx.x; v < V; v += blockDim.x) dx[v] = 0.0f;
        return;
    }
    const float *x = logits + (size_t)i * ld;
    RowStats s = row_stats(x, V);
    float logz = logf(s.z), H = logz - s.w / s.z;
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
        float lp = (x[v] - s.m) - logz;
        float p = expf(lp);
        float d = -p * (g + h * (lp + H));
        dx[v] = v == target ? d + g : d;
    }
}

#endif
