/* attention_cache.cu: attention of new tokens over a KV cache on the GPU (generation; twin of
 * cpu/attention_cache.c), multi-head and grouped-query: a kernel stores every token's k and v, a
 * second attends per query. */
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

/* One thread per element of k (and the same element of v): token n's head h, channel i goes to
 * slot seg_slot0[s] + (n - seg_off[s]) of row seg_row[s]. */
__global__ void cache_store_kernel(float *kcache, float *vcache, const float *qkv,
                                   const int *seg_row, const int *seg_off, const int *seg_slot0,
                                   int nseg, int N, int maxT, int C, int NH)
{
    int hs = C / NH;
    size_t total = (size_t)N * C;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        int n = (int)(e / C), c = (int)(e % C), h = c / hs, i = c % hs;
        int s = segment_of(seg_off, nseg, n);
        int slot = seg_slot0[s] + n - seg_off[s];
        size_t dst = (((size_t)seg_row[s] * NH + h) * maxT + slot) * hs + i;
        kcache[dst] = qkv[(size_t)n * 3 * C + C + c];
        vcache[dst] = qkv[(size_t)n * 3 * C + 2 * C + c];
    }
}

/* One block per (token, head). Keys are taken a tile of blockDim at a time: each thread scores
 * one key; the block's running maximum and sum rescale what was accumulated so far (the online
 * softmax), so no T-long buffer is needed; thread i < hs accumulates output channel i. The
 * query is qrow (hs), its cache head K and V, its output o; sh holds hs + blockDim + 32 floats. */
__device__ __forceinline__ void cache_attend_query(float *o, const float *qrow, const float *K,
                                                   const float *V, int keys, int hs, float scale,
                                                   float *sh)
{
    int tid = threadIdx.x, nt = blockDim.x;
    float *q = sh, *p = sh + hs, *red = p + nt;
    for (int i = tid; i < hs; i += nt) q[i] = qrow[i];
    __syncthreads();
    float m = -INFINITY, z = 0.0f, acc = 0.0f; /* acc: channel tid (when tid < hs) */
    for (int t0 = 0; t0 < keys; t0 += nt) {
        int t = t0 + tid;
        float sc = -INFINITY;
        if (t < keys) {
            const float *k = K + (size_t)t * hs;
            float dot = 0.0f;
            for (int i = 0; i < hs; i++) dot += q[i] * k[i];
            sc = dot * scale;
        }
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
            for (int j = 0; j < nk; j++) a += p[j] * V[(size_t)(t0 + j) * hs + tid];
            acc = a;
        }
        m = m_new;
        __syncthreads();
    }
    if (tid < hs) o[tid] = acc / z;
}

__global__ void cache_attend_kernel(float *out, const float *kcache, const float *vcache,
                                    const float *qkv, const int *seg_row, const int *seg_off,
                                    const int *seg_slot0, int nseg, int maxT, int C, int NH,
                                    float scale)
{
    extern __shared__ float sh[];
    int hs = C / NH;
    int n = blockIdx.x, h = blockIdx.y;
    int s = segment_of(seg_off, nseg, n);
    int keys = seg_slot0[s] + n - seg_off[s] + 1;
    const float *K = kcache + ((size_t)seg_row[s] * NH + h) * maxT * hs;
    const float *V = vcache + ((size_t)seg_row[s] * NH + h) * maxT * hs;
    cache_attend_query(out + (size_t)n * C + h * hs, qkv + (size_t)n * 3 * C + h * hs, K, V, keys,
                       hs, scale, sh);
}

extern "C" void pw_attention_cache_forward_cuda(float *out, float *kcache, float *vcache,
                                                float *scores, const float *qkv,
                                                const int *seg_row, const int *seg_off,
                                                const int *seg_slot0, int nseg, int N, int maxT,
                                                int C, int NH, cudaStream_t stream)
{
    (void)scores; /* the online softmax keeps its scores in shared memory */
    if (N <= 0 || nseg <= 0) return;
    int hs = C / NH;
    size_t total = (size_t)N * C;
    cache_store_kernel<<<pw_ew_blocks(total), PW_EW_THREADS, 0, stream>>>(
        kcache, vcache, qkv, seg_row, seg_off, seg_slot0, nseg, N, maxT, C, NH);
    PW_CUDA_CHECK(cudaGetLastError());
    /* at least one thread per output channel, whole warps */
    int threads = hs > 128 ? (hs + PW_WARP - 1) / PW_WARP * PW_WARP : 128;
    size_t smem = (size_t)(hs + threads + PW_WARP) * sizeof(float);
    dim3 grid((unsigned)N, (unsigned)NH);
    cache_attend_kernel<<<grid, threads, smem, stream>>>(out, kcache, vcache, qkv, seg_row,
                                                         seg_off, seg_slot0, nseg, maxT, C, NH,
                                                         1.0f / sqrtf((float)hs));
    PW_CUDA_CHECK(cudaGetLastError());
}

/* Grouped-query: as cache_store_kernel over the NKV key/value heads of rows (NH + 2 NKV) hs */
__global__ void cache_store_gqa_kernel(float *kcache, float *vcache, const float *qkv,
                                       const int *seg_row, const int *seg_off,
                                       const int *seg_slot0, int nseg, int N, int maxT, int NH,
                                       int NKV, int hs)
{
    int KC = NKV * hs, W = (NH + 2 * NKV) * hs;
    size_t total = (size_t)N * KC;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        int n = (int)(e / KC), c = (int)(e % KC), kv = c / hs, i = c % hs;
        int s = segment_of(seg_off, nseg, n);
        int slot = seg_slot0[s] + n - seg_off[s];
        size_t dst = (((size_t)seg_row[s] * NKV + kv) * maxT + slot) * hs + i;
        kcache[dst] = qkv[(size_t)n * W + (size_t)NH * hs + c];
        vcache[dst] = qkv[(size_t)n * W + (size_t)(NH + NKV) * hs + c];
    }
}

/* Grouped-query: query head h reads cache head h / (NH / NKV), q in rows of (NH + 2 NKV) hs */
__global__ void cache_attend_gqa_kernel(float *out, const float *kcache, const float *vcache,
                                        const float *qkv, const int *seg_row, const int *seg_off,
                                        const int *seg_slot0, int nseg, int maxT, int NH, int NKV,
                                        int hs, float scale)
{
    extern __shared__ float sh[];
    int W = (NH + 2 * NKV) * hs, C = NH * hs;
    int n = blockIdx.x, h = blockIdx.y, kv = h / (NH / NKV);
    int s = segment_of(seg_off, nseg, n);
    int keys = seg_slot0[s] + n - seg_off[s] + 1;
    const float *K = kcache + ((size_t)seg_row[s] * NKV + kv) * maxT * hs;
    const float *V = vcache + ((size_t)seg_row[s] * NKV + kv) * maxT * hs;
    cache_attend_query(out + (size_t)n * C + h * hs, qkv + (size_t)n * W + h * hs, K, V, keys,
                       hs, scale, sh);
}

extern "C" void pw_attention_cache_gqa_forward_cuda(float *out, float *kcache, float *vcache,
                                                    float *scores, const float *qkv,
                                                    const int *seg_row, const int *seg_off,
                                                    const int *seg_slot0, int nseg, int N,
                                                    int maxT, int NH, int NKV, int hs,
                                                    cudaStream_t stream)
{
    (void)scores;
    if (N <= 0 || nseg <= 0) return;
    size_t total = (size_t)N * NKV * hs;
    cache_store_gqa_kernel<<<pw_ew_blocks(total), PW_EW_THREADS, 0, stream>>>(
        kcache, vcache, qkv, seg_row, seg_off, seg_slot0, nseg, N, maxT, NH, NKV, hs);
    PW_CUDA_CHECK(cudaGetLastError());
    int threads = hs > 128 ? (hs + PW_WARP - 1) / PW_WARP * PW_WARP : 128;
    size_t smem = (size_t)(hs + threads + PW_WARP) * sizeof(float);
    dim3 grid((unsigned)N, (unsigned)NH);
    cache_attend_gqa_kernel<<<grid, threads, smem, stream>>>(out, kcache, vcache, qkv, seg_row,
                                                             seg_off, seg_slot0, nseg, maxT, NH,
                                                             NKV, hs, 1.0f / sqrtf((float)hs));
    PW_CUDA_CHECK(cudaGetLastError());
}
