/* attention_cache_kernels.cuh: the KV-cache attention kernels (launched by attention_cache.cu)
 * for one type of cache slot: a kernel that stores every new token's k and v in its slots, and
 * two that attend per (token, head) with an online softmax (tiles of keys a block at a time, or
 * keys split among groups of lanes where the head's 16-byte chunks allow). Written in the C
 * subset of CUDA, so that tests/cuda/test_cache_emu.c compiles this very file on the host and
 * runs it under tests/cuda/emu.h against the CPU's cache attention (cpu/attention_cache.c).
 * attention_cache.cuh includes it once per slot type, with:
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

/* Block i's query: token n = i / NH, head h = i % NH, which reads cache head h / (NH / NKV); q
 * in rows of (NH + 2 NKV) hs. The query heads of one token are neighbours in launch order, so
 * the G heads of a group run together and read their shared keys and values from L2 instead of
 * G times from memory (a (N, NH) grid would put them N blocks apart). Its keys, and the offsets
 * of its q in qkv, of its output and of its cache head (the same in k and v). */
typedef struct CacheQuery {
    int keys;
    size_t q, o, head;
} CacheQuery;

static __device__ __forceinline__ CacheQuery cache_query(const int *seg_row, const int *seg_off,
                                                         const int *seg_slot0, int nseg, int maxT,
                                                         int NH, int NKV, int hs)
{
    int n = (int)(blockIdx.x / NH), h = (int)(blockIdx.x % NH), kv = h / (NH / NKV);
    int s = segment_of(seg_off, nseg, n);
    CacheQuery b;
    b.keys = seg_slot0[s] + n - seg_off[s] + 1;
    b.q = (size_t)n * (NH + 2 * NKV) * hs + (size_t)h * hs;
    b.o = (size_t)n * NH * hs + (size_t)h * hs;
    b.head = ((size_t)seg_row[s] * NKV + kv) * maxT * hs;
    return b;
}

/* output channel i: into o, or rounded to bfloat16 into o16 when there is one (a bf16 model's
 * decode, whose projection reads it so) */
static __device__ __forceinline__ void cache_out(float *o, uint16_t *o16, int i, float v)
{
    if (o16) o16[i] = pw_bf16_bits(v);
    else o[i] = v;
}

/* An online-softmax state's weight against the larger maximum M: exp(m - M), 0 for a state that
 * saw no key (m = -inf, where exp(m - M) would be exp(nan) when M is -inf too). */
static __device__ __forceinline__ float cache_weight(float m, float M)
{
    return m == -INFINITY ? 0.0f : expf(m - M);
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

/* CACHE_VEC consecutive slots (16 bytes, 16-byte aligned) widened into x: as loaded (widen), or
 * loaded and widened at once (load_vec) */
static __device__ __forceinline__ void CACHE_FN(widen)(float *x, uint4 u)
{
#if CACHE_BF16
    uint32_t w[4] = {u.x, u.y, u.z, u.w};
    PW_UNROLL
    for (int j = 0; j < 4; j++) {
        x[2 * j] = pw_bf16_float(w[j] & 0xffffu);
        x[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
    }
#else
    x[0] = __uint_as_float(u.x);
    x[1] = __uint_as_float(u.y);
    x[2] = __uint_as_float(u.z);
    x[3] = __uint_as_float(u.w);
#endif
}

static __device__ __forceinline__ void CACHE_FN(load_vec)(float *x, const CACHE_S *p)
{
    CACHE_FN(widen)(x, *(const uint4 *)p);
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
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
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
static __device__ __forceinline__ void CACHE_FN(attend_query)(float *o, uint16_t *o16,
                                                              const float *qrow,
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
            cache_out(o, o16, c, a / z);
        }
    } else if (tid < hs) {
        cache_out(o, o16, tid, acc / z);
    }
}

/* The k and v of keys t0 + u NG + g, u < n (a compile-time count: inlined, the arrays stay in
 * registers), that a lane group of the split kernel loads before it multiplies: 16
 * bytes of each at channels c0.., zeros past the last key. */
static __device__ __forceinline__ void CACHE_FN(load_keys)(uint4 *kr, uint4 *vr,
                                                           const CACHE_S *K, const CACHE_S *V,
                                                           int t0, int NG, int g, int keys,
                                                           int hs, int c0, int n)
{
    PW_UNROLL
    for (int u = 0; u < n; u++) {
        int t = t0 + u * NG + g;
        if (t < keys) {
            kr[u] = *(const uint4 *)(K + (size_t)t * hs + c0);
            vr[u] = *(const uint4 *)(V + (size_t)t * hs + c0);
        } else {
            kr[u] = vr[u] = make_uint4(0u, 0u, 0u, 0u);
        }
    }
}

/* One key of a lane group's online softmax (split and group kernels): the key's score, this
 * lane's 16 bytes of it (kx, as loaded) against its channels of q, summed over the group's LK
 * lanes by shuffles (every lane of the warp must call it), then, where ok, the running max m,
 * sum z and this lane's channels of the weighted sum of values updated with the key's value
 * chunk vx. */
static __device__ __forceinline__ void CACHE_FN(online_key)(float *m, float *z, float *acc,
                                                            const float *q, uint4 kx, uint4 vx,
                                                            int LK, float scale, int ok)
{
    float x[CACHE_VEC], d = 0.0f;
    CACHE_FN(widen)(x, kx);
    PW_UNROLL
    for (int i = 0; i < CACHE_VEC; i++) d += q[i] * x[i];
    for (int off = LK / 2; off > 0; off >>= 1) d += __shfl_xor_sync(0xffffffffu, d, off);
    if (ok) {
        float sc = d * scale, mn = fmaxf(*m, sc);
        float r = cache_weight(*m, mn), p = expf(sc - mn);
        *z = *z * r + p;
        CACHE_FN(widen)(x, vx);
        PW_UNROLL
        for (int i = 0; i < CACHE_VEC; i++) acc[i] = acc[i] * r + p * x[i];
        *m = mn;
    }
}

/* The lane groups of a warp merged by shuffles (lane l and lane l ^ off hold the same channels
 * of two groups): every lane ends with the warp's m, z and its channels' sums */
static __device__ __forceinline__ void CACHE_FN(merge_groups)(float *m, float *z, float *acc,
                                                              int LK)
{
    for (int off = LK; off < PW_WARP; off <<= 1) {
        float mo = __shfl_xor_sync(0xffffffffu, *m, off), zo = __shfl_xor_sync(0xffffffffu, *z, off);
        float mn = fmaxf(*m, mo), wa = cache_weight(*m, mn), wb = cache_weight(mo, mn);
        *z = *z * wa + zo * wb;
        PW_UNROLL
        for (int i = 0; i < CACHE_VEC; i++)
            acc[i] = acc[i] * wa + __shfl_xor_sync(0xffffffffu, acc[i], off) * wb;
        *m = mn;
    }
}

/* The split kernel (cache_split_lanes(hs) != 0): a key's hs channels are LK = hs / CACHE_VEC
 * lanes of a warp, each holding 16 bytes of the key and the same 16 bytes of its value, so that
 * one load instruction of a warp reads 32 / LK whole consecutive rows (512 bytes of bfloat16
 * keys of 64): the block's NG = warps * 32 / LK lane groups take keys g, g + NG, ..., each
 * group its own online softmax (m, z and its lanes' channels of the weighted sum) over its keys,
 * with no barrier until the end. Each lane keeps its channels of q in registers and loads
 * CACHE_SPLIT_UNROLL keys' k and v before it multiplies (more bytes in flight); the score is
 * the group's partial dots summed by shuffles. At the end the groups of a warp merge by
 * shuffles and the warps through shared memory (cache_split_smem_bytes). The tile kernel above
 * reads a key row per thread (a warp's load touching 32 rows) and meets the block four times a
 * tile of 128 keys. Sums are in another order than the CPU's: equal to rounding, not bits. */
static __device__ __forceinline__ void CACHE_FN(split_query)(float *o, uint16_t *o16,
                                                             const float *qrow,
                                                             const CACHE_S *K, const CACHE_S *V,
                                                             int keys, int hs, float scale,
                                                             float *sh)
{
    const int LK = hs / CACHE_VEC, lane = threadIdx.x % PW_WARP, warp = threadIdx.x / PW_WARP;
    const int GPW = PW_WARP / LK, NG = (int)(blockDim.x / PW_WARP) * GPW;
    const int c0 = (lane % LK) * CACHE_VEC, g = warp * GPW + lane / LK;
    float q[CACHE_VEC], acc[CACHE_VEC];
    PW_UNROLL
    for (int i = 0; i < CACHE_VEC; i++) {
        q[i] = qrow[c0 + i];
        acc[i] = 0.0f;
    }
    float m = -INFINITY, z = 0.0f;
    /* the trip count is the block's, so every lane reaches every shuffle */
    for (int t0 = 0; t0 < keys; t0 += NG * CACHE_SPLIT_UNROLL) {
        uint4 kr[CACHE_SPLIT_UNROLL], vr[CACHE_SPLIT_UNROLL]; /* 16 bytes each, as loaded */
        CACHE_FN(load_keys)(kr, vr, K, V, t0, NG, g, keys, hs, c0, CACHE_SPLIT_UNROLL);
        PW_UNROLL
        for (int u = 0; u < CACHE_SPLIT_UNROLL; u++)
            CACHE_FN(online_key)(&m, &z, acc, q, kr[u], vr[u], LK, scale, t0 + u * NG + g < keys);
    }
    CACHE_FN(merge_groups)(&m, &z, acc, LK); /* the warp's groups */
    /* the warps: (m, z, hs channels) each in shared memory, merged channel by channel */
    const int nw = (int)(blockDim.x / PW_WARP), stride = 2 + hs;
    if (lane < LK) {
        PW_UNROLL
        for (int i = 0; i < CACHE_VEC; i++) sh[warp * stride + 2 + c0 + i] = acc[i];
    }
    if (lane == 0) {
        sh[warp * stride] = m;
        sh[warp * stride + 1] = z;
    }
    __syncthreads();
    float M = -INFINITY;
    for (int w = 0; w < nw; w++) M = fmaxf(M, sh[w * stride]);
    for (int ch = (int)threadIdx.x; ch < hs; ch += (int)blockDim.x) {
        float zs = 0.0f, a = 0.0f;
        for (int w = 0; w < nw; w++) {
            float wt = cache_weight(sh[w * stride], M);
            zs += sh[w * stride + 1] * wt;
            a += sh[w * stride + 2 + ch] * wt;
        }
        cache_out(o, o16, ch, a / zs);
    }
}

/* The group kernel (cache_group_size != 0): one block per (token, key/value head), a warp for
 * each of the G = NH / NKV query heads that share it (G <= CACHE_GROUP_MAX). The split kernel's
 * G blocks of a group each read the group's keys and values: a decode step at Qwen2.5-0.5B's
 * shape (14 heads over 2) took 59 us a layer for keys and values the copy bandwidth reads in 14
 * (PW_PROFILE_OPS on an H100), every byte read seven times from L2, about 294 MB a layer. Here
 * the block copies a tile of cache_group_tile keys and their values into shared memory once
 * (cp.async, all threads, 16 bytes each, the next tile in flight while this one is used; keys
 * past the last zero-filled, never read from memory), and each warp runs the split kernel's
 * lane groups over the tile for its own query (online_key: LK lanes a key, 32 / LK keys a step,
 * an online softmax a group), merging its groups by shuffles at the end: a warp is a head, so
 * no merge through shared memory. (An earlier group kernel held all G queries' sums in each
 * lane's registers, 202 of them, two blocks an SM: 0.90x the split kernel.) Equal to the CPU
 * to rounding, as the split kernel. */
__global__ void CACHE_FN(cache_attend_group)(float *out, uint16_t *out16, const CACHE_S *kcache,
                                             const CACHE_S *vcache, const float *qkv,
                                             const int *seg_row, const int *seg_off,
                                             const int *seg_slot0, int nseg, int maxT, int NH,
                                             int NKV, int hs, float scale)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    PW_DYN_SMEM(float, sh);
    CACHE_S *tiles = (CACHE_S *)sh; /* [2 buffers][keys, values][TK][hs] */
    const int G = NH / NKV, n = (int)(blockIdx.x / NKV), kv = (int)(blockIdx.x % NKV);
    const int sg = segment_of(seg_off, nseg, n);
    const int keys = seg_slot0[sg] + n - seg_off[sg] + 1;
    const size_t head = ((size_t)seg_row[sg] * NKV + kv) * maxT * hs;
    const CACHE_S *K = kcache + head, *V = vcache + head;
    const int h = (int)(threadIdx.x / PW_WARP), lane = (int)(threadIdx.x % PW_WARP);
    const int LK = hs / CACHE_VEC, GPW = PW_WARP / LK, c0 = (lane % LK) * CACHE_VEC;
    const int grp = lane / LK, TK = cache_group_tile(hs, (int)sizeof(CACHE_S));
    const size_t tile = (size_t)TK * hs; /* slots of a tile of keys (or values) */
    const int chunks = (int)(tile / CACHE_VEC), nt = (keys + TK - 1) / TK;
    const float *qrow = qkv + (size_t)n * (NH + 2 * NKV) * hs + (size_t)(kv * G + h) * hs;
    float q[CACHE_VEC], acc[CACHE_VEC], m = -INFINITY, z = 0.0f;
    PW_UNROLL
    for (int i = 0; i < CACHE_VEC; i++) {
        q[i] = qrow[c0 + i];
        acc[i] = 0.0f;
    }
    /* tile it's keys and values into buffer it % 2: 16 bytes a copy, zeros past the last key */
#define CACHE_GROUP_ISSUE(it)                                                                    \
    do {                                                                                         \
        CACHE_S *kt_ = tiles + (size_t)((it) & 1) * 2 * tile, *vt_ = kt_ + tile;                 \
        size_t at_ = (size_t)(it) * tile;                                                        \
        for (int c_ = (int)threadIdx.x; c_ < chunks; c_ += (int)blockDim.x) {                    \
            size_t e_ = (size_t)c_ * CACHE_VEC;                                                  \
            int ok_ = (int)((at_ + e_) / hs) < keys;                                             \
            pw_cp_async16(pw_smem(kt_ + e_), ok_ ? K + at_ + e_ : K, ok_ ? 16 : 0);              \
            pw_cp_async16(pw_smem(vt_ + e_), ok_ ? V + at_ + e_ : V, ok_ ? 16 : 0);              \
        }                                                                                        \
        pw_cp_commit();                                                                          \
    } while (0)
    CACHE_GROUP_ISSUE(0);
    for (int it = 0; it < nt; it++) {
        if (it + 1 < nt) {
            CACHE_GROUP_ISSUE(it + 1);
            pw_cp_wait_but_one();
        } else {
            pw_cp_wait_all();
        }
        __syncthreads(); /* the tile is the block's */
        const CACHE_S *kt = tiles + (size_t)(it & 1) * 2 * tile, *vt = kt + tile;
        int kn = keys - it * TK < TK ? keys - it * TK : TK;
        /* the trip count is the warp's, so every lane reaches every shuffle */
        for (int j0 = 0; j0 < kn; j0 += GPW) {
            int j = j0 + grp; /* < TK: TK is a multiple of GPW */
            const CACHE_S *kr = kt + (size_t)j * hs + c0, *vr = vt + (size_t)j * hs + c0;
            CACHE_FN(online_key)(&m, &z, acc, q, *(const uint4 *)kr, *(const uint4 *)vr, LK,
                                 scale, j < kn);
        }
        __syncthreads(); /* everyone is done with this buffer before it is refilled */
    }
#undef CACHE_GROUP_ISSUE
    CACHE_FN(merge_groups)(&m, &z, acc, LK);
    if (lane < LK) {
        size_t o0 = (size_t)n * NH * hs + (size_t)(kv * G + h) * hs + c0;
        PW_UNROLL
        for (int i = 0; i < CACHE_VEC; i++)
            cache_out(out ? out + o0 : NULL, out16 ? out16 + o0 : NULL, i, acc[i] / z);
    }
}

/* One block per (token, head) (cache_query), through attend_query (cache_threads(hs) threads);
 * the output into out, or rounded into out16 when it is not NULL */
__global__ void CACHE_FN(cache_attend)(float *out, uint16_t *out16, const CACHE_S *kcache,
                                       const CACHE_S *vcache, const float *qkv,
                                       const int *seg_row, const int *seg_off,
                                       const int *seg_slot0, int nseg, int maxT, int NH, int NKV,
                                       int hs, float scale)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    PW_DYN_SMEM(float, sh);
    CacheQuery b = cache_query(seg_row, seg_off, seg_slot0, nseg, maxT, NH, NKV, hs);
    CACHE_FN(attend_query)(out ? out + b.o : NULL, out16 ? out16 + b.o : NULL, qkv + b.q,
                           kcache + b.head, vcache + b.head, b.keys, hs, scale, sh);
}

/* the same blocks through split_query (CACHE_SPLIT_THREADS threads) */
__global__ void CACHE_FN(cache_attend_split)(float *out, uint16_t *out16, const CACHE_S *kcache,
                                             const CACHE_S *vcache, const float *qkv,
                                             const int *seg_row, const int *seg_off,
                                             const int *seg_slot0, int nseg, int maxT, int NH,
                                             int NKV, int hs, float scale)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    PW_DYN_SMEM(float, sh);
    CacheQuery b = cache_query(seg_row, seg_off, seg_slot0, nseg, maxT, NH, NKV, hs);
    CACHE_FN(split_query)(out ? out + b.o : NULL, out16 ? out16 + b.o : NULL, qkv + b.q,
                          kcache + b.head, vcache + b.head, b.keys, hs, scale, sh);
}

#undef CACHE_PUT
#undef CACHE_GET
#undef CACHE_VEC
