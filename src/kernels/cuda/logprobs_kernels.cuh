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
#define LP_STATS 3     /* floats of a row's kept statistics (PW_LP_STATS, pw_kernels.h) */

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

/* Rows are read 16 bytes a thread where they allow it (ld a multiple of 4, the logits 16-byte
 * aligned: the padded vocabulary's rows always are): with one float a thread in flight, the
 * block's loads covered too little of the memory's latency, and the forward read its 3.3 GB of
 * logits (GPT-2's vocabulary, 16384 rows) at 0.66 of the device's copy bandwidth. */
static __device__ __forceinline__ int lp_vec(const float *logits, int ld)
{
    return (ld & 3) == 0 && ((size_t)logits & 15) == 0;
}

/* The whole block's statistics of row x(V), returned to every thread; vec: by lp_vec. */
static __device__ RowStats row_stats(const float *x, int V, int vec)
{
    __shared__ RowStats warp_stats[LP_THREADS / PW_WARP];
    RowStats s = stats_empty();
    int v4 = vec ? V / 4 : 0; /* the float4s wholly among the V real logits, then one by one */
    const float4 *x4 = (const float4 *)x;
    PW_UNROLL_BY(2)
    for (int q = threadIdx.x; q < v4; q += blockDim.x) {
        float4 f = x4[q];
        s = stats_add(s, f.x);
        s = stats_add(s, f.y);
        s = stats_add(s, f.z);
        s = stats_add(s, f.w);
    }
    for (int v = 4 * v4 + threadIdx.x; v < V; v += blockDim.x) s = stats_add(s, x[v]);
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

/* log Z and the entropy H = log Z - E[x - m] of a row's statistics: one function for the forward
 * that keeps them and the backward that makes them, so that both get the same bits */
static __device__ __forceinline__ void stats_finish(RowStats s, float *logz, float *H)
{
    *logz = logf(s.z);
    *H = *logz - s.w / s.z;
}

/* logp and entropy (either NULL) of one row per block; loss instead when loss != NULL; the row's
 * max, log Z and H into stats (PW_LP_STATS floats a row; 0 on a skipped row) when not NULL */
__global__ void logprobs_forward_kernel(float *logp, float *entropy, float *loss, float *stats,
                                        const float *logits, const int *targets, int V, int ld)
{
    int i = blockIdx.x, target = targets[i];
    float *k = stats ? stats + (size_t)i * LP_STATS : NULL;
    if (target < 0) {
        if (threadIdx.x == 0) {
            if (logp) logp[i] = 0.0f;
            if (entropy) entropy[i] = 0.0f;
            if (loss) loss[i] = 0.0f;
            if (k) k[0] = k[1] = k[2] = 0.0f;
        }
        return; /* the whole block leaves: no barrier is left waiting */
    }
    const float *x = logits + (size_t)i * ld;
    RowStats s = row_stats(x, V, lp_vec(logits, ld));
    if (threadIdx.x == 0) {
        float logz, H;
        stats_finish(s, &logz, &H);
        if (logp) logp[i] = (x[target] - s.m) - logz;
        if (entropy) entropy[i] = H;
        if (loss) loss[i] = (s.m - x[target]) + logz;
        if (k) k[0] = s.m, k[1] = logz, k[2] = H;
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
 * target, or g = h = 0. The statistics are the forward's (stats) or made here: the block's
 * threads all take the same branch (row_stats has barriers). */
static __device__ __forceinline__ int lp_row(LpRow *r, const float *logits, const float *stats,
                                             const int *targets, const float *dlogp,
                                             const float *dentropy, float gsign, int V, int ld)
{
    int i = blockIdx.x;
    r->target = targets[i];
    r->g = dlogp ? gsign * dlogp[i] : 0.0f;
    r->h = dentropy ? dentropy[i] : 0.0f;
    if (r->target < 0 || (r->g == 0.0f && r->h == 0.0f)) return 0;
    if (stats) {
        const float *k = stats + (size_t)i * LP_STATS;
        r->s.m = k[0], r->logz = k[1], r->H = k[2];
        r->s.z = r->s.w = 0.0f; /* not needed past log Z and H */
        return 1;
    }
    r->s = row_stats(logits + (size_t)i * ld, V, lp_vec(logits, ld));
    stats_finish(r->s, &r->logz, &r->H);
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

/* the gradient of x's 4 logits from column v, 0 past V */
static __device__ __forceinline__ float4 lp_grad4(float4 x, int v, int V, const LpRow *r)
{
    return make_float4(v < V ? lp_grad(x.x, v, r) : 0.0f,
                       v + 1 < V ? lp_grad(x.y, v + 1, r) : 0.0f,
                       v + 2 < V ? lp_grad(x.z, v + 2, r) : 0.0f,
                       v + 3 < V ? lp_grad(x.w, v + 3, r) : 0.0f);
}

/* dx, written, and 0 in the padding columns V..ld-1; dx may be x: every x[v] is read (by the
 * block's statistics before the barrier in row_stats, when they are made here) and then read
 * and written by the one thread that owns v (owns its float4, where rows allow them) */
__global__ void logprobs_backward_kernel(float *dlogits, const float *logits, const float *stats,
                                         const int *targets, const float *dlogp,
                                         const float *dentropy, float gsign, int V, int ld)
{
    float *dx = dlogits + (size_t)blockIdx.x * ld;
    const float *x = logits + (size_t)blockIdx.x * ld;
    LpRow r;
    int live = lp_row(&r, logits, stats, targets, dlogp, dentropy, gsign, V, ld);
    if (lp_vec(logits, ld) && lp_vec(dlogits, ld)) {
        const float4 *x4 = (const float4 *)x;
        float4 *dx4 = (float4 *)dx;
        PW_UNROLL_BY(2)
        for (int q = threadIdx.x; q < ld / 4; q += blockDim.x)
            dx4[q] = live ? lp_grad4(x4[q], 4 * q, V, &r) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        return;
    }
    for (int v = V + threadIdx.x; v < ld; v += blockDim.x) dx[v] = 0.0f;
    for (int v = threadIdx.x; v < V; v += blockDim.x) dx[v] = live ? lp_grad(x[v], v, &r) : 0.0f;
}

/* The same gradient times mul (1 / temperature), rounded to bfloat16 for the LM head's bf16
 * product, which would round it anyway: the bits of the float32 kernel's output scaled and
 * rounded, without writing the float32 rows and reading them back. Row i of dx16 starts where
 * row i of the logits does (2 ld halves apart), so it may overwrite them: the row is taken
 * LP_STRETCH columns (float4s, where rows allow them) a thread at a time, every thread reading
 * its columns of a stretch before a barrier and writing after it. The halves written up to a
 * stretch lie over floats of that stretch and those before it, which have all been read. */
#define LP_STRETCH 4
__global__ void logprobs_backward_bf16_kernel(uint16_t *dx16, const float *logits,
                                              const float *stats, const int *targets,
                                              const float *dlogp, const float *dentropy, int V,
                                              int ld, float mul)
{
    uint16_t *dx = dx16 + (size_t)blockIdx.x * 2 * ld;
    const float *x = logits + (size_t)blockIdx.x * ld;
    LpRow r;
    if (!lp_row(&r, logits, stats, targets, dlogp, dentropy, 1.0f, V, ld)) {
        for (int v = threadIdx.x; v < ld; v += blockDim.x) dx[v] = 0;
        return;
    }
    if (lp_vec(logits, ld) && ((size_t)dx16 & 3) == 0) { /* its stores: 4 bytes aligned */
        const float4 *x4 = (const float4 *)x;
        int n4 = ld / 4;
        for (int q0 = 0; q0 < n4; q0 += LP_STRETCH * (int)blockDim.x) {
            float4 d[LP_STRETCH];
            PW_UNROLL
            for (int k = 0; k < LP_STRETCH; k++) {
                int q = q0 + k * (int)blockDim.x + (int)threadIdx.x;
                d[k] = q < n4 ? lp_grad4(x4[q], 4 * q, V, &r)
                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            __syncthreads(); /* the stretch is read: its floats may be written over */
            PW_UNROLL
            for (int k = 0; k < LP_STRETCH; k++) {
                int q = q0 + k * (int)blockDim.x + (int)threadIdx.x;
                if (q >= n4) continue;
                /* two 4-byte stores of two halves each (the row's halves are 8-byte aligned
                 * here), the lower column in the lower half */
                unsigned int *w = (unsigned int *)(dx + 4 * q);
                w[0] = pw_bf16_pair(d[k].x * mul, d[k].y * mul);
                w[1] = pw_bf16_pair(d[k].z * mul, d[k].w * mul);
            }
        }
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
