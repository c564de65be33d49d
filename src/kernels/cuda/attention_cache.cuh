/* attention_cache.cuh: the KV-cache attention kernels (attention_cache_kernels.cuh) for both slot
 * types: pw_cache_{store,attend,attend_split,attend_group}_{f32,bf16}. Included by
 * attention_cache.cu, and compiled as C on the host by tests/cuda/test_cache_emu.c. */
#ifndef PW_ATTENTION_CACHE_CUH
#define PW_ATTENTION_CACHE_CUH

#include <math.h>
#include <stdint.h>

#include "bf16.cuh"
#include "warp.cuh"

/* threads of an attending block (one per (token, head)): at least one per output channel,
 * whole warps */
static inline int cache_threads(int hs)
{
    return hs > 128 ? (hs + PW_WARP - 1) / PW_WARP * PW_WARP : 128;
}

/* the attend kernel's dynamic shared memory: the query (hs), a tile's probabilities (threads),
 * a warp reduction (PW_WARP), and the value sums of every key lane (up to threads x 8) */
static inline size_t cache_smem_bytes(int hs, int threads)
{
    return (size_t)(hs + threads + PW_WARP + 8 * threads) * sizeof(float);
}

/* the split kernel (attention_cache_kernels.cuh): its block of four warps, the keys each lane
 * group loads before it multiplies, its lanes per key (hs's 16-byte chunks, vec slots each,
 * when they are a power of two up to a warp; 0: the tile kernel instead) and its shared memory
 * (each warp's maximum, sum and hs channels) */
#define CACHE_SPLIT_THREADS 128
#define CACHE_SPLIT_UNROLL 4
static inline int cache_split_lanes(int hs, int vec)
{
    int lk = hs % vec == 0 ? hs / vec : 0;
    return lk > 0 && lk <= PW_WARP && (lk & (lk - 1)) == 0 ? lk : 0;
}
static inline size_t cache_split_smem_bytes(int hs)
{
    return (size_t)(CACHE_SPLIT_THREADS / PW_WARP) * (2 + hs) * sizeof(float);
}

/* the group kernel (attention_cache_kernels.cuh): the query heads a block serves at most (a
 * warp each), the group size where it applies (0: it does not), its threads, the keys of a
 * shared-memory tile (16 KiB of keys and values at most: a power of two from 8 to 64, a multiple
 * of any group of lanes' keys a step) and its shared memory (two tiles' keys and values) */
#define CACHE_GROUP_MAX 8
static inline int cache_group_size(int NH, int NKV, int hs, int vec)
{
    int G = NKV > 0 && NH % NKV == 0 ? NH / NKV : 0;
    return G > 1 && G <= CACHE_GROUP_MAX && cache_split_lanes(hs, vec) ? G : 0;
}
static inline int cache_group_threads(int G) { return G * PW_WARP; }
/* the kernel asks it too */
#ifdef __CUDACC__
#define CACHE_HOST_DEVICE __host__ __device__
#else
#define CACHE_HOST_DEVICE
#endif
static inline CACHE_HOST_DEVICE int cache_group_tile(int hs, int slot_bytes)
{
    int tk = 64;
    while (tk > 8 && 2 * tk * hs * slot_bytes > 16384) tk /= 2;
    return tk;
}
static inline size_t cache_group_smem_bytes(int hs, int slot_bytes)
{
    return (size_t)4 * cache_group_tile(hs, slot_bytes) * hs * slot_bytes;
}

#define CACHE_S float
#define CACHE_FN(name) pw_##name##_f32
#define CACHE_BF16 0
#include "attention_cache_kernels.cuh"
#undef CACHE_S
#undef CACHE_FN
#undef CACHE_BF16

#define CACHE_S uint16_t
#define CACHE_FN(name) pw_##name##_bf16
#define CACHE_BF16 1
#include "attention_cache_kernels.cuh"
#undef CACHE_S
#undef CACHE_FN
#undef CACHE_BF16

#endif
