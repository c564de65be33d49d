/* attention_cache.cu: attention of new tokens over a KV cache on the GPU (generation; twin of
 * cpu/attention_cache.c), grouped-query and multi-head (NKV = NH), over a cache of float32 or of
 * bfloat16: a kernel stores every token's k and v, a second attends per query. The kernels are
 * in attention_cache_kernels.cuh (C-subset CUDA, tested by emulation as well). */
#include <math.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"

#define PW_DYN_SMEM(type, name) extern __shared__ __align__(16) type name[]
#include "cp_async.cuh"
#include "attention_cache.cuh"

/* The launches of one slot type (VEC slots in 16 bytes): the store, then the group kernel (a
 * block per token and key/value head) where the heads allow and it is on, else one block per
 * (token, head), through the split kernel where the head allows and it is on, else the tile
 * kernel */
#define CACHE_FORWARD(SFX, VEC)                                                                   \
    do {                                                                                          \
        if (N <= 0 || nseg <= 0) return;                                                          \
        size_t total = (size_t)N * NKV * hs;                                                      \
        pw_launch(pw_cache_store_##SFX, pw_ew_blocks(total), PW_EW_THREADS, 0, stream, kcache,   \
                  vcache, qkv, seg_row, seg_off, seg_slot0, nseg, N, maxT, NH, NKV, hs);          \
        unsigned blocks = (unsigned)((size_t)N * NH); /* < 2^31: N tokens of a pass, NH heads */ \
        float scale = 1.0f / sqrtf((float)hs);                                                    \
        int G = pw_cuda_get_cache_group() ? cache_group_size(NH, NKV, hs, VEC) : 0;              \
        if (G) {                                                                                  \
            pw_launch(pw_cache_attend_group_##SFX, (unsigned)((size_t)N * NKV),                  \
                      cache_group_threads(G), cache_group_smem_bytes(hs, 16 / VEC), stream, out,  \
                      out16, kcache, vcache, qkv, seg_row, seg_off, seg_slot0, nseg, maxT, NH,    \
                      NKV, hs, scale);                                                            \
        } else if (pw_cuda_get_cache_split() && cache_split_lanes(hs, VEC)) {                     \
            pw_launch(pw_cache_attend_split_##SFX, blocks, CACHE_SPLIT_THREADS,                  \
                      cache_split_smem_bytes(hs), stream, out, out16, kcache, vcache, qkv,        \
                      seg_row, seg_off, seg_slot0, nseg, maxT, NH, NKV, hs, scale);               \
        } else {                                                                                  \
            int threads = cache_threads(hs);                                                      \
            pw_launch(pw_cache_attend_##SFX, blocks, threads, cache_smem_bytes(hs, threads),     \
                      stream, out, out16, kcache, vcache, qkv, seg_row, seg_off, seg_slot0, nseg, \
                      maxT, NH, NKV, hs, scale);                                                  \
        }                                                                                         \
    } while (0)

extern "C" void pw_attention_cache_gqa_forward_cuda(float *out, float *kcache, float *vcache,
                                                    float *scores, const float *qkv,
                                                    const int *seg_row, const int *seg_off,
                                                    const int *seg_slot0, int nseg, int N,
                                                    int maxT, int NH, int NKV, int hs,
                                                    cudaStream_t stream)
{
    (void)scores; /* the online softmax keeps its scores in shared memory */
    pw_bf16 *out16 = NULL;
    CACHE_FORWARD(f32, 4);
}

extern "C" void pw_attention_cache_gqa_forward_bf16_cuda(float *out, pw_bf16 *kcache,
                                                         pw_bf16 *vcache, float *scores,
                                                         const float *qkv, const int *seg_row,
                                                         const int *seg_off, const int *seg_slot0,
                                                         int nseg, int N, int maxT, int NH,
                                                         int NKV, int hs, cudaStream_t stream)
{
    (void)scores; /* pw_bf16 is the uint16_t the kernels store */
    pw_bf16 *out16 = NULL;
    CACHE_FORWARD(bf16, 8);
}

extern "C" void pw_attention_cache_gqa_forward_bf16_out_cuda(
    pw_bf16 *out16, pw_bf16 *kcache, pw_bf16 *vcache, const float *qkv, const int *seg_row,
    const int *seg_off, const int *seg_slot0, int nseg, int N, int maxT, int NH, int NKV, int hs,
    cudaStream_t stream)
{
    float *out = NULL;
    CACHE_FORWARD(bf16, 8);
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
