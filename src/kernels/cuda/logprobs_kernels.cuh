/* logprobs_kernels.cuh: log-probabilities, entropies and cross-entropy of chosen tokens and their
 * backward: one block of LP_THREADS per row of logits (launched by logprobs.cu, the twin of
 * cpu/logprobs.c). Written in the C subset of CUDA, so that tests/cuda/test_kernels_emu.c compiles
 * this very file on the host and runs it under tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_LOGPROBS_KERNELS_CUH
#define PW_LOGPROBS_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "bf16.cuh"
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

/* What a row's backward needs: its target, the weights g of its log-prob and h of its entropy,
 * and its statistics, log Z and H */
typedef struct LpRow {
    RowStats s;
    float logz, H, g, h;
    int target;
} LpRow;

/* Row blockIdx.x's LpRow; 0 (and no statistics) where the row gets no gradient: a skipped
 * target, or g = h = 0. The block's threads all take the same branch (row_stats has barriers). */
static __device__ __forceinline__ int lp_row(LpRow *r, const float *logits, const int *targets,
                                             const float *dlogp, const float *dentropy,
                                             float gsign, int V, int ld)
{
    int i = blockIdx.x;
    r->target = targets[i];
    r->g = dlogp ? gsign * dlogp[i] : 0.0f;
    r->h = dentropy ? dentropy[i] : 0.0f;
    if (r->target < 0 || (r->g == 0.0f && r->h == 0.0f)) return 0;
    r->s = row_stats(logits + (size_t)i * ld, V);
    r->logz = logf(r->s.z);
    r->H = r->logz - r->s.w / r->s.z;
    return 1;
}

/* dx_v = g ([v = t] - p_v) - h p_v (log p_v + H) of logit x at column v */
static __device__ __forceinline__ float lp_grad(float x, int v, const LpRow *r)
{
    float lp = (x - r->s.m) - r->logz;
    float p = expf(lp);
    float d = -p * (r->g + r->h * (lp + r->H));
    return v == r->target ? d + r->g : d;
}

/* dx, written, and 0 in the padding columns V..ld-1; dx may be x: every x[v] is read by the
 * block's statistics before the barrier in row_stats, then read and written by the one thread
 * that owns v */
__global__ void logprobs_backward_kernel(float *dlogits, const float *logits, const int *targets,
                                         const float *dlogp, const float *dentropy, float gsign,
                                         int V, int ld)
{
    float *dx = dlogits + (size_t)blockIdx.x * ld;
    const float *x = logits + (size_t)blockIdx.x * ld;
    for (int v = V + threadIdx.x; v < ld; v += blockDim.x) dx[v] = 0.0f;
    LpRow r;
    if (!lp_row(&r, logits, targets, dlogp, dentropy, gsign, V, ld)) {
        for (int v = threadIdx.x; v < V; v += blockDim.x) dx[v] = 0.0f;
        return;
    }
    for (int v = threadIdx.x; v < V; v += blockDim.x) dx[v] = lp_grad(x[v], v, &r);
}

/* The same gradient times mul (1 / temperature), rounded to bfloat16 for the LM head's bf16
 * product, which would round it anyway: the bits of the float32 kernel's output scaled and
 * rounded, without writing the float32 rows and reading them back. Row i of dx16 starts where
 * row i of the logits does (2 ld halves apart), so it may overwrite them: the row is taken
 * LP_STRETCH columns a thread at a time, every thread reading its columns of a stretch before
 * a barrier and writing after it. The halves written up to a stretch lie over floats of that
 * stretch and those before it, which have all been read. */
#define LP_STRETCH 4
__global__ void logprobs_backward_bf16_kernel(uint16_t *dx16, const float *logits,
                                              const int *targets, const float *dlogp,
                                              const float *dentropy, int V, int ld, float mul)
{
    uint16_t *dx = dx16 + (size_t)blockIdx.x * 2 * ld;
    const float *x = logits + (size_t)blockIdx.x * ld;
    LpRow r;
    if (!lp_row(&r, logits, targets, dlogp, dentropy, 1.0f, V, ld)) {
        for (int v = threadIdx.x; v < ld; v += blockDim.x) dx[v] = 0;
        return;
    }
    for (int v0 = 0; v0 < ld; v0 += LP_STRETCH * (int)blockDim.x) {
        float d[LP_STRETCH];
        PW_UNROLL
        for (int k = 0; k < LP_STRETCH; k++) {
            int v = v0 + k * (int)blockDim.x + (int)threadIdx.x;
            d[k] = v < V ? lp_grad(x[v], v, &r) * mul : 0.0f;
        }
        __syncthreads(); /* the stretch is read: its floats may be written over */
        PW_UNROLL
        for (int k = 0; k < LP_STRETCH; k++) {
            int v = v0 + k * (int)blockDim.x + (int)threadIdx.x;
            if (v < ld) dx[v] = pw_bf16_bits(d[k]);
        }
    }
}
#undef LP_STRETCH

#endif
