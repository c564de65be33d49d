/* attention_cache.cu: attention of new tokens over a KV cache on the GPU (generation; twin of
 * cpu/attention_cache.c), grouped-query and multi-head (NKV = NH), over a cache of float32 or of
 * bfloat16: a kernel stores every token's k and v, a second attends per query. */
#include <cuda_bf16.h>
#include <math.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"

/* The segment of packed token n: the last s with seg_off[s] <= n (nseg is a batch, small). */
__device__ __forceinline__ int segment_of(const int *seg_off, int nseg, int n)
{
    int lo = 0, hi = nseg - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (seg_off[mid] <= n) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* A cache element of either type: stored rounded to nearest even (as pw_bf16.h does on the
 * host), read widened. */
__device__ __forceinline__ void cache_put(float *p, float x) { *p = x; }
__device__ __forceinline__ void cache_put(__nv_bfloat16 *p, float x) { *p = __float2bfloat16_rn(x); }
__device__ __forceinline__ float cache_get(const float *p) { return *p; }
__device__ __forceinline__ float cache_get(const __nv_bfloat16 *p) { return __bfloat162float(*p); }

/* q . k over hs channels, summed in channel order as the CPU twin's loop does. A bfloat16 key
 * row of a multiple of 8 channels is read 16 bytes at a time (rows are 16-byte aligned then:
 * the cache is one allocation and every row, head and layer is a multiple of 8 elements). */
__device__ __forceinline__ float key_dot(const float *q, const float *k, int hs)
{
    float dot = 0.0f;
    for (int i = 0; i < hs; i++) dot += q[i] * k[i];
    return dot;
}
__device__ __forceinline__ float key_dot(const float *q, const __nv_bfloat16 *k, int hs)
{
    float dot = 0.0f;
    if (hs % 8) {
        for (int i = 0; i < hs; i++) dot += q[i] * __bfloat162float(k[i]);
        return dot;
    }
    const uint4 *k8 = (const uint4 *)k;
    for (int c = 0; c < hs / 8; c++) {
        uint4 u = k8[c];
        const __nv_bfloat162 *pair = (const __nv_bfloat162 *)&u;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float2 f = __bfloat1622float2(pair[j]);
            dot += q[8 * c + 2 * j] * f.x;
            dot += q[8 * c + 2 * j + 1] * f.y;
        }
    }
    return dot;
}

/* One thread per element of k (and the same element of v) of the NKV key/value heads of rows
 * (NH + 2 NKV) hs: token n's head kv, channel i goes to slot seg_slot0[s] + (n - seg_off[s]) of
 * row seg_row[s]. */
template <typename S>
__global__ void cache_store_kernel(S *kcache, S *vcache, const float *qkv, const int *seg_row,
                                   const int *seg_off, const int *seg_slot0, int nseg, int N,
                                   int maxT, int NH, int NKV, int hs)
{
    int KC = NKV * hs, W = (NH + 2 * NKV) * hs;
    size_t total = (size_t)N * KC;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        int n = (int)(e / KC), c = (int)(e % KC), kv = c / hs, i = c % hs;
        int s = segment_of(seg_off, nseg, n);
        int slot = seg_slot0[s] + n - seg_off[s];
        size_t dst = (((size_t)seg_row[s] * NKV + kv) * maxT + slot) * hs + i;
        cache_put(kcache + dst, qkv[(size_t)n * W + (size_t)NH * hs + c]);
        cache_put(vcache + dst, qkv[(size_t)n * W + (size_t)(NH + NKV) * hs + c]);
    }
}

/* One block per (token, head). Keys are taken a tile of blockDim at a time: each thread scores
 * one key; the block's running maximum and sum rescale what was accumulated so far (the online
 * softmax), so no T-long buffer is needed; thread i < hs accumulates output channel i. The
 * query is qrow (hs), its cache head K and V, its output o; sh holds hs + blockDim + 32 floats. */
template <typename S>
__device__ __forceinline__ void cache_attend_query(float *o, const float *qrow, const S *K,
                                                   const S *V, int keys, int hs, float scale,
                                                   float *sh)
{
    int tid = threadIdx.x, nt = blockDim.x;
    float *q = sh, *p = sh + hs, *red = p + nt;
    for (int i = tid; i < hs; i += nt) q[i] = qrow[i];
    __syncthreads();
    float m = -INFINITY, z = 0.0f, acc = 0.0f; /* acc: channel tid (when tid < hs) */
    for (int t0 = 0; t0 < keys; t0 += nt) {
        int t = t0 + tid;
        float sc = t < keys ? key_dot(q, K + (size_t)t * hs, hs) * scale : -INFINITY;
        /* block maximum of this tile */
        float w = pw_warp_max(sc);
        if (tid % PW_WARP == 0) red[tid / PW_WARP] = w;
        __syncthreads();
        float tile_max = -INFINITY;
        for (int i = 0; i < (nt + PW_WARP - 1) / PW_WARP; i++) tile_max = fmaxf(tile_max, red[i]);
        __syncthreads();
        float m_new = fmaxf(m, tile_max);
        float e = t < keys ? expf(sc - m_new) : 0.0f;
        p[tid] = e;
        float part = pw_warp_sum(e);
        if (tid % PW_WARP == 0) red[tid / PW_WARP] = part;
        __syncthreads();
        float tile_sum = 0.0f;
        for (int i = 0; i < (nt + PW_WARP - 1) / PW_WARP; i++) tile_sum += red[i];
        float rescale = expf(m - m_new); /* 0 on the first tile (m = -inf) */
        z = z * rescale + tile_sum;
        if (tid < hs) {
            float a = acc * rescale;
            int nk = keys - t0 < nt ? keys - t0 : nt;
            for (int j = 0; j < nk; j++) a += p[j] * cache_get(V + (size_t)(t0 + j) * hs + tid);
            acc = a;
        }
        m = m_new;
        __syncthreads();
    }
    if (tid < hs) o[tid] = acc / z;
}

/* query head h reads cache head h / (NH / NKV), q in rows of (NH + 2 NKV) hs. Block i is token
 * i / NH, head i % NH: the query heads of one token are neighbours in launch order, so the G heads
 * of a group run together and read their shared keys and values from L2 instead of G times from
 * memory (a (N, NH) grid would put them N blocks apart). */
template <typename S>
__global__ void cache_attend_kernel(float *out, const S *kcache, const S *vcache,
                                    const float *qkv, const int *seg_row, const int *seg_off,
                                    const int *seg_slot0, int nseg, int maxT, int NH, int NKV,
                                    int hs, float scale)
{
    extern __shared__ float sh[];
    int W = (NH + 2 * NKV) * hs, C = NH * hs;
    int n = (int)(blockIdx.x / NH), h = (int)(blockIdx.x % NH), kv = h / (NH / NKV);
    int s = segment_of(seg_off, nseg, n);
    int keys = seg_slot0[s] + n - seg_off[s] + 1;
    const S *K = kcache + ((size_t)seg_row[s] * NKV + kv) * maxT * hs;
    const S *V = vcache + ((size_t)seg_row[s] * NKV + kv) * maxT * hs;
    cache_attend_query(out + (size_t)n * C + h * hs, qkv + (size_t)n * W + h * hs, K, V, keys,
                       hs, scale, sh);
}

template <typename S>
static void cache_forward(float *out, S *kcache, S *vcache, const float *qkv, const int *seg_row,
                          const int *seg_off, const int *seg_slot0, int nseg, int N, int maxT,
                          int NH, int NKV, int hs, cudaStream_t stream)
{
    if (N <= 0 || nseg <= 0) return;
    size_t total = (size_t)N * NKV * hs;
    cache_store_kernel<S><<<pw_ew_blocks(total), PW_EW_THREADS, 0, stream>>>(
        kcache, vcache, qkv, seg_row, seg_off, seg_slot0, nseg, N, maxT, NH, NKV, hs);
    PW_CUDA_CHECK(cudaGetLastError());
    /* at least one thread per output channel, whole warps */
    int threads = hs > 128 ? (hs + PW_WARP - 1) / PW_WARP * PW_WARP : 128;
    size_t smem = (size_t)(hs + threads + PW_WARP) * sizeof(float);
    unsigned blocks = (unsigned)((size_t)N * NH); /* < 2^31: N tokens of a pass, NH heads */
    cache_attend_kernel<S><<<blocks, threads, smem, stream>>>(out, kcache, vcache, qkv, seg_row,
                                                            seg_off, seg_slot0, nseg, maxT, NH,
                                                            NKV, hs, 1.0f / sqrtf((float)hs));
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_attention_cache_gqa_forward_cuda(float *out, float *kcache, float *vcache,
                                                    float *scores, const float *qkv,
                                                    const int *seg_row, const int *seg_off,
                                                    const int *seg_slot0, int nseg, int N,
                                                    int maxT, int NH, int NKV, int hs,
                                                    cudaStream_t stream)
{
    (void)scores; /* the online softmax keeps its scores in shared memory */
    cache_forward(out, kcache, vcache, qkv, seg_row, seg_off, seg_slot0, nseg, N, maxT, NH, NKV,
                  hs, stream);
}

/* pw_bf16 is the storage type of __nv_bfloat16: same size, so the casts below are views */
static_assert(sizeof(pw_bf16) == sizeof(__nv_bfloat16), "pw_bf16 must be 16 bits");

extern "C" void pw_attention_cache_gqa_forward_bf16_cuda(float *out, pw_bf16 *kcache,
                                                         pw_bf16 *vcache, float *scores,
                                                         const float *qkv, const int *seg_row,
                                                         const int *seg_off, const int *seg_slot0,
                                                         int nseg, int N, int maxT, int NH,
                                                         int NKV, int hs, cudaStream_t stream)
{
    (void)scores;
    cache_forward(out, (__nv_bfloat16 *)kcache, (__nv_bfloat16 *)vcache, qkv, seg_row, seg_off,
                  seg_slot0, nseg, N, maxT, NH, NKV, hs, stream);
}

/* multi-head: the grouped-query kernels with a cache head per query head (rows [q | k | v]) */
extern "C" void pw_attention_cache_forward_cuda(float *out, float *kcache, float *vcache,
                                                float *scores, const float *qkv,
                                                const int *seg_row, const int *seg_off,
                                                const int *seg_slot0, int nseg, int N, int maxT,
                                                int C, int NH, cudaStream_t stream)
{
    pw_attention_cache_gqa_forward_cuda(out, kcache, vcache, scores, qkv, seg_row, seg_off,
                                        seg_slot0, nseg, N, maxT, NH, NH, C / NH, stream);
}
