/* flash_common.cuh: what both fused attentions share (flash_kernels.cuh in float32,
 * flash_tc_kernels.cuh on the tensor cores): the float32 kernels' tile sizes, where a head's q,
 * k and v start in qkv, and the mask test. Plain C-subset CUDA, as both are. */
#ifndef PW_FLASH_CUH_COMMON
#define PW_FLASH_CUH_COMMON

#define FLASH_BQ 64 /* queries (threads) per block of fwd and dq */
#define FLASH_BK 32 /* keys per shared tile of fwd and dq */
/* keys (threads) per block of dkv, and queries per shared tile of dkv: two FLASH_BKV x (hs+1)
 * own-row arrays and two FLASH_BQ2 x hs query tiles stay under 48 KiB of static shared memory */
#define FLASH_BKV(hs) ((hs) >= 128 ? 32 : 64)
#define FLASH_BQ2(hs) (512 / (hs))

#define FLASH_CAT_(a, b) a##_##b
#define FLASH_CAT(a, b) FLASH_CAT_(a, b)

/* Where head h's q and its group's k and v start in qkv (elements, float32 or bfloat16 alike),
 * in the first row of sequence b; rows are W elements apart */
typedef struct FlashAt {
    size_t q, k, v;
    int W;
} FlashAt;

static __device__ __forceinline__ FlashAt flash_at(int b, int h, int T, int NH, int NKV, int hs)
{
    FlashAt a;
    int kv = h / (NH / NKV);
    a.W = (NH + 2 * NKV) * hs;
    a.q = (size_t)b * T * a.W + (size_t)h * hs;
    a.k = (size_t)b * T * a.W + (size_t)(NH + kv) * hs;
    a.v = (size_t)b * T * a.W + (size_t)(NH + NKV + kv) * hs;
    return a;
}

/* The same as pointers into a float32 qkv */
typedef struct FlashHead {
    const float *q, *k, *v;
    int W;
} FlashHead;

static __device__ __forceinline__ FlashHead flash_head(const float *qkv, int b, int h, int T,
                                                       int NH, int NKV, int hs)
{
    FlashAt a = flash_at(b, h, T, NH, NKV, hs);
    FlashHead f = {qkv + a.q, qkv + a.k, qkv + a.v, a.W};
    return f;
}

static __device__ __forceinline__ int flash_real(const int *m, int t) { return !m || m[t]; }

/* The query row of this thread in fwd and dq: block (query tile, head, sequence), thread t */
typedef struct FlashQuery {
    FlashHead f;
    const int *m; /* the sequence's mask row, NULL: all real */
    int b, h, t;
    int active; /* a real query (t < T, not padding) */
    int kend;   /* the block's keys: [0, kend) */
} FlashQuery;

static __device__ __forceinline__ FlashQuery flash_query(const float *qkv, const int *mask, int T,
                                                         int NH, int NKV, int hs)
{
    FlashQuery q;
    int q0 = blockIdx.x * FLASH_BQ;
    q.b = blockIdx.z;
    q.h = blockIdx.y;
    q.t = q0 + (int)threadIdx.x;
    q.f = flash_head(qkv, q.b, q.h, T, NH, NKV, hs);
    q.m = mask ? mask + (size_t)q.b * T : 0;
    q.active = q.t < T && flash_real(q.m, q.t);
    q.kend = q0 + FLASH_BQ < T ? q0 + FLASH_BQ : T;
    return q;
}

/* The dk/dv kernels' walk over their query tiles: every query head of a key/value head's group
 * (from head h0), for each the queries from the block's first key k0 on, bk at a time, counted
 * along (no division a tile): the next tile's head into h and first query into t, and the
 * cursor (nh heads past h0, query nq) moved on. A macro over the kernel's own variables, not a
 * function over a cursor: the same code as written out in place, which for the dk/dv kernels at
 * the edge of their 255 registers is what ptxas was measured with. */
#define FLASH_WALK_NEXT(h, t, nh, nq, h0, k0, bk, T)                                             \
    do {                                                                                         \
        (h) = (h0) + (nh);                                                                       \
        (t) = (nq);                                                                              \
        if (((nq) += (bk)) >= (T)) {                                                             \
            (nq) = (k0);                                                                         \
            (nh)++;                                                                              \
        }                                                                                        \
    } while (0)

#endif /* PW_FLASH_CUH_COMMON */
