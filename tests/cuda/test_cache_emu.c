/* test_cache_emu.c: the GPU's KV-cache attention kernels (src/kernels/cuda/
 * attention_cache_kernels.cuh: the store and the per-(token, head) online softmax), the very
 * source nvcc compiles, built here as C and run under the host emulation of emu.h against the
 * CPU's pw_attention_cache_gqa_forward and its bfloat16 twin on cuda_attention_gqa's cache case
 * (a 9-token prefill into an empty row, three decode tokens, one reaching the last slot, a row
 * left alone), and on the long case (up to 300 keys: the online softmax over several tiles of
 * 128): the caches after the pass bit for bit, the output of each attending kernel (the tile
 * kernel; the split kernel where the head's 16-byte chunks allow it; the group kernel where
 * they do and 2 to 8 query heads share a key/value head) within 1e-5. Heads of 5
 * (keys and values read element by element), 8, 32, 64 and 128 (16 bytes at a time: the values
 * by key lanes; split: 1 to 32 lanes a key), 160 (more threads than 128); groups of 1 to 3.
 * Needs no GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_test.h"

#include "attention_cache.cuh"

#include "kernels/cache_case.h"
#include "pw_bf16.h"
#include "pw_kernels.h"
#include "pw_test.h"

typedef struct Args {
    void *k, *v;
    float *out;
    uint16_t *out16; /* the output rounded instead of out, or NULL */
    const CacheCase *cc;
    int bf16, kind; /* the attending kernel: 0 tile, 1 split, 2 group */
} Args;

static void store(void *p)
{
    Args *a = p;
    const CacheCase *c = a->cc;
    if (a->bf16)
        pw_cache_store_bf16(a->k, a->v, c->qkv, c->seg_row, c->seg_off, c->seg_slot0, c->nseg,
                            c->N, c->maxT, c->NH, c->NKV, c->hs);
    else
        pw_cache_store_f32(a->k, a->v, c->qkv, c->seg_row, c->seg_off, c->seg_slot0, c->nseg,
                           c->N, c->maxT, c->NH, c->NKV, c->hs);
}

static void attend(void *p)
{
    Args *a = p;
    const CacheCase *c = a->cc;
    float scale = 1.0f / sqrtf((float)c->hs);
    if (a->kind == 2 && a->bf16)
        pw_cache_attend_group_bf16(a->out, a->out16, a->k, a->v, c->qkv, c->seg_row, c->seg_off,
                                   c->seg_slot0, c->nseg, c->maxT, c->NH, c->NKV, c->hs, scale);
    else if (a->kind == 2)
        pw_cache_attend_group_f32(a->out, a->out16, a->k, a->v, c->qkv, c->seg_row, c->seg_off,
                                  c->seg_slot0, c->nseg, c->maxT, c->NH, c->NKV, c->hs, scale);
    else if (a->kind == 1 && a->bf16)
        pw_cache_attend_split_bf16(a->out, a->out16, a->k, a->v, c->qkv, c->seg_row, c->seg_off,
                                   c->seg_slot0, c->nseg, c->maxT, c->NH, c->NKV, c->hs, scale);
    else if (a->kind == 1)
        pw_cache_attend_split_f32(a->out, a->out16, a->k, a->v, c->qkv, c->seg_row, c->seg_off,
                                  c->seg_slot0, c->nseg, c->maxT, c->NH, c->NKV, c->hs, scale);
    else if (a->bf16)
        pw_cache_attend_bf16(a->out, a->out16, a->k, a->v, c->qkv, c->seg_row, c->seg_off,
                             c->seg_slot0, c->nseg, c->maxT, c->NH, c->NKV, c->hs, scale);
    else
        pw_cache_attend_f32(a->out, a->out16, a->k, a->v, c->qkv, c->seg_row, c->seg_off,
                            c->seg_slot0, c->nseg, c->maxT, c->NH, c->NKV, c->hs, scale);
}

static void run(int NH, int NKV, int hs, int bf16, int lng, unsigned long long *rng)
{
    CacheCase cc;
    cache_case_make_any(&cc, rng, NH, NKV, hs, lng);
    const int N = cc.N, C = NH * hs, T = cc.maxT;
    const size_t cache = (size_t)cc.maxB * NKV * T * hs, es = bf16 ? 2 : 4;
    /* 16-byte aligned, as the model's one allocation is */
    void *K = aligned_alloc(16, cache * es + 16), *V = aligned_alloc(16, cache * es + 16);
    void *eK = aligned_alloc(16, cache * es + 16), *eV = aligned_alloc(16, cache * es + 16);
    for (size_t i = 0; i < cache; i++) {
        if (bf16) {
            ((uint16_t *)K)[i] = pw_bf16_from_f32(cc.k0[i]);
            ((uint16_t *)V)[i] = pw_bf16_from_f32(cc.v0[i]);
        } else {
            ((float *)K)[i] = cc.k0[i];
            ((float *)V)[i] = cc.v0[i];
        }
    }
    memcpy(eK, K, cache * es);
    memcpy(eV, V, cache * es);
    float *out = malloc(sizeof(float) * N * C), *eout = malloc(sizeof(float) * N * C);
    float *scores = malloc(sizeof(float) * cc.nseg * NH * T);
    for (int i = 0; i < N * C; i++) eout[i] = NAN;
    if (bf16)
        pw_attention_cache_gqa_forward_bf16(out, K, V, scores, cc.qkv, cc.seg_row, cc.seg_off,
                                            cc.seg_slot0, cc.nseg, N, T, NH, NKV, hs);
    else
        pw_attention_cache_gqa_forward(out, K, V, scores, cc.qkv, cc.seg_row, cc.seg_off,
                                       cc.seg_slot0, cc.nseg, N, T, NH, NKV, hs);

    /* the launch geometry of attention_cache.cu: the store, then the tile kernel and, where the
     * head allows it, the split kernel (each from a poisoned output) */
    Args a = {eK, eV, eout, NULL, &cc, bf16, 0};
    unsigned threads = (unsigned)cache_threads(hs);
    emu_launch(ew_grid((size_t)N * NKV * hs), d1(PW_EW_THREADS), store, &a);
    int same = !memcmp(eK, K, cache * es) && !memcmp(eV, V, cache * es);
    printf("%s cache NH=%d NKV=%d hs=%d T=%d: caches %s\n", bf16 ? "bfloat16" : "float32", NH,
           NKV, hs, T, same ? "equal" : "DIFFER");
    CHECK(same, "%s cache NH=%d NKV=%d hs=%d: the slots differ from the CPU's",
          bf16 ? "bfloat16" : "float32", NH, NKV, hs);
    const int lanes = cache_split_lanes(hs, bf16 ? 8 : 4);
    const int G = cache_group_size(NH, NKV, hs, bf16 ? 8 : 4);
    static const char *const kinds[] = {"tile", "split", "group"};
    for (a.kind = 0; a.kind <= 2; a.kind++) {
        if ((a.kind == 1 && !lanes) || (a.kind == 2 && !G)) continue;
        EmuDim3 grid = {(unsigned)(a.kind == 2 ? N * NKV : N * NH), 1, 1};
        EmuDim3 block = {a.kind == 2 ? (unsigned)cache_group_threads(G)
                         : a.kind    ? CACHE_SPLIT_THREADS
                                     : threads,
                         1, 1};
        size_t smem = a.kind == 2 ? cache_group_smem_bytes(hs, bf16 ? 2 : 4)
                      : a.kind   ? cache_split_smem_bytes(hs)
                                 : cache_smem_bytes(hs, (int)threads);
        for (int i = 0; i < N * C; i++) eout[i] = NAN;
        emu_launch_smem(grid, block, smem, attend, &a);
        double e = pw_max_rel_err_ff(eout, out, (size_t)N * C, 1e-6);
        printf("  %s kernel%s: output rel err %.2e\n", kinds[a.kind],
               a.kind == 1 && lanes == 1 ? " (1 lane a key)" : a.kind == 2 ? " (heads of a "
               "key/value head in one block)" : "", e);
        CHECK(e <= 1e-5, "%s kernel, attention output: rel err %.3g", kinds[a.kind], e);
        if (!bf16 || lng) continue;
        /* a bf16 model's decode: the output rounded instead, bit for bit the float32 one's */
        uint16_t *o16 = malloc(sizeof(uint16_t) * N * C);
        Args r = a;
        r.out = NULL, r.out16 = o16;
        emu_launch_smem(grid, block, smem, attend, &r);
        size_t bad = 0;
        for (int i = 0; i < N * C; i++) bad += o16[i] != pw_bf16_from_f32(eout[i]);
        CHECK(bad == 0, "%s kernel: %zu rounded outputs differ", kinds[a.kind], bad);
        free(o16);
    }
    free(K);
    free(V);
    free(eK);
    free(eV);
    free(out);
    free(eout);
    free(scores);
    cache_case_free(&cc);
}

int main(void)
{
    unsigned long long rng = 2611;
    for (int bf16 = 0; bf16 <= 1; bf16++) {
        run(6, 2, 5, bf16, 0, &rng);
        run(9, 3, 64, bf16, 0, &rng);
        run(4, 4, 8, bf16, 0, &rng);
        run(2, 1, 160, bf16, 0, &rng);
        run(4, 2, 64, bf16, 1, &rng); /* 300 keys: three tiles of 128 */
        run(3, 3, 5, bf16, 1, &rng);
        run(2, 1, 128, bf16, 0, &rng); /* Llama's heads: 16 or 32 lanes a key */
        run(2, 2, 32, bf16, 0, &rng);
        run(14, 2, 64, bf16, 0, &rng); /* Qwen2.5-0.5B's heads: 7 a group */
        run(8, 1, 32, bf16, 0, &rng);  /* the group kernel's largest group */
        run(9, 1, 64, bf16, 0, &rng);  /* a group over its largest: the split kernel alone */
    }
    return pw_test_done("cache_emu");
}
