/* attention_cache_kernels.cuh: the KV-cache attention kernels (launched by attention_cache.cu)
 * for one type of cache slot: a kernel that stores every new token's k and v in its slots, and
 * one that attends per (token, head) with an online softmax. Written in the C subset of CUDA, so
 * that tests/cuda/test_cache_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU's cache attention (cpu/attention_cache.c). attention_cache.cuh
 * includes it once per slot type, with:
 *   CACHE_S         the slot's type: float, or uint16_t (a bfloat16's bits)
 *   CACHE_FN(name)  name with the type's suffix
 *   CACHE_BF16      1 for bfloat16 slots (rounded to nearest even as stored, widened as read)
 * The includer provides what CUDA (or emu.h) defines, warp.cuh, bf16.cuh and PW_DYN_SMEM. */

#ifndef PW_CACHE_KERNELS_COMMON
#define PW_CACHE_KERNELS_COMMON

/* The segment of packed token n: the last s with seg_off[s] <= n (nseg is a batch, small). */
static __device__ __forceinline__ int segment_of(const int *seg_off, int nseg, int n)
{
    int lo = 0, hi = nseg - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (seg_off[mid] <= n) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

#endif /* PW_CACHE_KERNELS_COMMON */

#if CACHE_BF16
#define CACHE_PUT(p, x) (*(p) = pw_bf16_bits(x))
#define CACHE_GET(p) pw_bf16_float(*(p))
#define CACHE_VEC 8 /* slots in 16 bytes */
#else
#define CACHE_PUT(p, x) (*(p) = (x))
#define CACHE_GET(p) (*(p))
#define CACHE_VEC 4
#endif

/* CACHE_VEC consecutive slots (16 bytes, 16-byte aligned) widened into x */
static __device__ __forceinline__ void CACHE_FN(load_vec)(float *x, const CACHE_S *p)
{
#if CACHE_BF16
    uint4 u = *(const uint4 *)p;
    uint32_t w[4] = {u.x, u.y, u.z, u.w};
    PW_UNROLL
    for (int j = 0; j < 4; j++) {
        x[2 * j] = pw_bf16_float(w[j] & 0xffffu);
        x[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
    }
#else
    float4 f = *(const float4 *)p;
    x[0] = f.x;
    x[1] = f.y;
    x[2] = f.z;
    x[3] = f.w;
#endif
}

/* q . k over hs channels, summed in channel order as the CPU twin's loop does. A bfloat16 key
 * row of a multiple of 8 channels is read 16 bytes at a time (rows are 16-byte aligned then:
 * the cache is one allocation and every row, head and layer is a multiple of 8 elements); the
 * low half of each 32-bit word is the lower channel. */
static __device__ __forceinline__ float CACHE_FN(key_dot)(const float *q, const CACHE_S *k,
                                                          int hs)
{
    float dot = 0.0f;
#if CACHE_BF16
    if (hs % 8 == 0) {
        const uint4 *k8 = (const uint4 *)k;
        for (int c = 0; c < hs / 8; c++) {
            uint4 u = k8[c];
            uint32_t w[4] = {u.x, u.y, u.z, u.w};
            PW_UNROLL
            for (int j = 0; j < 4; j++) {
                dot += q[8 * c + 2 * j] * pw_bf16_float(w[j] & 0xffffu);
                dot += q[8 * c + 2 * j + 1] * __uint_as_float(w[j] & 0xffff0000u);
            }
        }
        return dot;
    }
#endif
    for (int i = 0; i < hs; i++) dot += q[i] * CACHE_GET(k + i);
    return dot;
}

/* One thread per element of k (and the same element of v) of the NKV key/value heads of rows
 * (NH + 2 NKV) hs: token n's head kv, channel i goes to slot seg_slot0[s] + (n - seg_off[s]) of
 * row seg_row[s]. */
__global__ void CACHE_FN(cache_store)(CACHE_S *kcache, CACHE_S *vcache, const float *qkv,
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
        CACHE_PUT(kcache + dst, qkv[(size_t)n * W + (size_t)NH * hs + c]);
        CACHE_PUT(vcache + dst, qkv[(size_t)n * W + (size_t)(NH + NKV) * hs + c]);
    }
}

/* One block per (token, head). Keys are taken a tile of blockDim at a time: each thread scores
 * one key; the block's running maximum and sum rescale what was accumulated so far (the online
 * softmax), so no T-long buffer is needed. The weighted sum of the values: where hs is a multiple
 * of CACHE_VEC, thread t takes channels (t % CC) * CACHE_VEC.. (CC = hs / CACHE_VEC chunks of 16
 * bytes) of keys t / CC, t / CC + KL, ... (KL = blockDim / CC key lanes), every thread busy and
 * each load 16 bytes, the lanes summed once at the end; otherwise thread i < hs accumulates
 * channel i over every key of the tile, one slot a load (how it was done first: half the
 * threads idle, 2-byte loads, and the decode attention at 63% of the copy bandwidth on an H100).
 * The query is qrow (hs), its cache head K and V, its output o; sh holds cache_smem_bytes. */
static __device__ __forceinline__ void CACHE_FN(attend_query)(float *o, const float *qrow,
                                                              const CACHE_S *K, const CACHE_S *V,
                                                              int keys, int hs, float scale,
                                                              float *sh)
{
    int tid = threadIdx.x, nt = blockDim.x;
    float *q = sh, *p = sh + hs, *red = p + nt, *lanes = red + PW_WARP;
    int CC = hs / CACHE_VEC, KL = hs % CACHE_VEC == 0 && CC <= nt ? nt / CC : 0;
    int cg = KL ? tid % CC : 0, kl = KL ? tid / CC : 0, vec = KL && kl < KL;
    for (int i = tid; i < hs; i += nt) q[i] = qrow[i];
    __syncthreads();
    float m = -INFINITY, z = 0.0f, acc = 0.0f; /* acc: channel tid (when tid < hs) */
    float va[CACHE_VEC];                      /* the vector path's channels */
    PW_UNROLL
    for (int i = 0; i < CACHE_VEC; i++) va[i] = 0.0f;
    for (int t0 = 0; t0 < keys; t0 += nt) {
        int t = t0 + tid;
        float sc = t < keys ? CACHE_FN(key_dot)(q, K + (size_t)t * hs, hs) * scale : -INFINITY;
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
        int nk = keys - t0 < nt ? keys - t0 : nt;
        if (vec) {
            PW_UNROLL
            for (int i = 0; i < CACHE_VEC; i++) va[i] *= rescale;
            for (int j = kl; j < nk; j += KL) {
                float x[CACHE_VEC];
                CACHE_FN(load_vec)(x, V + (size_t)(t0 + j) * hs + cg * CACHE_VEC);
                float pj = p[j];
                PW_UNROLL
                for (int i = 0; i < CACHE_VEC; i++) va[i] += pj * x[i];
            }
        } else if (!KL && tid < hs) {
            float a = acc * rescale;
            for (int j = 0; j < nk; j++) a += p[j] * CACHE_GET(V + (size_t)(t0 + j) * hs + tid);
            acc = a;
        }
        m = m_new;
        __syncthreads();
    }
    if (KL) { /* the key lanes' sums, channel by channel */
        if (vec) {
            PW_UNROLL
            for (int i = 0; i < CACHE_VEC; i++) lanes[kl * hs + cg * CACHE_VEC + i] = va[i];
        }
        __syncthreads();
        for (int c = tid; c < hs; c += nt) {
            float a = 0.0f;
            for (int l = 0; l < KL; l++) a += lanes[l * hs + c];
            o[c] = a / z;
        }
    } else if (tid < hs) {
        o[tid] = acc / z;
    }
}

/* query head h reads cache head h / (NH / NKV), q in rows of (NH + 2 NKV) hs. Block i is token
 * i / NH, head i % NH: the query heads of one token are neighbours in launch order, so the G heads
 * of a group run together and read their shared keys and values from L2 instead of G times from
 * memory (a (N, NH) grid would put them N blocks apart). */
__global__ void CACHE_FN(cache_attend)(float *out, const CACHE_S *kcache,
                                       const CACHE_S *vcache, const float *qkv,
                                       const int *seg_row, const int *seg_off,
                                       const int *seg_slot0, int nseg, int maxT, int NH, int NKV,
                                       int hs, float scale)
{
    PW_DYN_SMEM(float, sh);
    int W = (NH + 2 * NKV) * hs, C = NH * hs;
    int n = (int)(blockIdx.x / NH), h = (int)(blockIdx.x % NH), kv = h / (NH / NKV);
    int s = segment_of(seg_off, nseg, n);
    int keys = seg_slot0[s] + n - seg_off[s] + 1;
    const CACHE_S *K = kcache + ((size_t)seg_row[s] * NKV + kv) * maxT * hs;
    const CACHE_S *V = vcache + ((size_t)seg_row[s] * NKV + kv) * maxT * hs;
    CACHE_FN(attend_query)(out + (size_t)n * C + h * hs, qkv + (size_t)n * W + h * hs, K, V, keys,
                       hs, scale, sh);
}


#undef CACHE_PUT
#undef CACHE_GET
#undef CACHE_VEC
