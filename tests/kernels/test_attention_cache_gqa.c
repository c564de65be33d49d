/* test_attention_cache_gqa.c: grouped-query attention of packed new tokens over a KV cache
 * against a float64 reference: the slots each token writes and each query's softmax; over a
 * bfloat16 cache, the slots hold each k and v rounded to nearest even and the output is the
 * float32 kernel's over those rounded values, bit for bit. */
#include <math.h>
#include <stdint.h>

#include "cache_case.h"
#include "pw_bf16.h"
#include "pw_kernels.h"

/* checks the kernel on the case of cache_case.h with these heads; returns the output error */
static double check(int NH, int NKV, int hs, unsigned long long seed)
{
    unsigned long long rng = seed;
    CacheCase cc;
    cache_case_make_gqa(&cc, &rng, NH, NKV, hs);
    const int T = CC_MAXT, N = cc.N, C = NH * hs;
    const size_t cache = (size_t)CC_MAXB * NKV * T * hs;
    float *K = kref_copy(cc.k0, cache), *V = kref_copy(cc.v0, cache);
    float *out = kref_alloc((size_t)N * C * sizeof *out);
    for (size_t i = 0; i < (size_t)N * C; i++) out[i] = NAN;
    float *scores = kref_alloc((size_t)cc.nseg * NH * T * sizeof *scores);
    pw_attention_cache_gqa_forward(out, K, V, scores, cc.qkv, cc.seg_row, cc.seg_off,
                                   cc.seg_slot0, cc.nseg, N, T, NH, NKV, hs);

    double *ref = kref_alloc((size_t)N * C * sizeof *ref), *Kr, *Vr;
    cache_case_ref(ref, &Kr, &Vr, &cc);
    double maxd = 0.0;
    for (size_t i = 0; i < cache; i++) maxd = fmax(maxd, fabs(K[i] - Kr[i]) + fabs(V[i] - Vr[i]));
    CHECK(maxd == 0.0, "NH=%d NKV=%d: cache after the pass differs by %g", NH, NKV, maxd);
    double e = pw_max_rel_err(out, ref, (size_t)N * C, 1e-6);
    CHECK(e < KREF_TOL, "NH=%d NKV=%d: attention over the cache: rel err %.3g", NH, NKV, e);
    printf("GQA attention over a KV cache: %d tokens in %d segments, NH=%d NKV=%d hs=%d, "
           "rel err %.3g\n", N, cc.nseg, NH, NKV, hs, e);
    free(K), free(V), free(out), free(scores), free(ref), free(Kr), free(Vr);
    cache_case_free(&cc);
    return e;
}

/* The bfloat16 cache on the same case (the old slots hold bfloat16 values already): the float32
 * kernel given the same inputs with k and v rounded first, over a float32 cache of the rounded
 * old slots, is the reference, bit for bit; and both are the float64 softmax of the rounded
 * values. */
static void check_bf16(int NH, int NKV, int hs, unsigned long long seed)
{
    unsigned long long rng = seed;
    CacheCase cc;
    cache_case_make_gqa(&cc, &rng, NH, NKV, hs);
    const int T = CC_MAXT, N = cc.N, C = NH * hs, W = (NH + 2 * NKV) * hs;
    const size_t cache = (size_t)CC_MAXB * NKV * T * hs;
    uint16_t *Kh = kref_alloc(cache * 2), *Vh = kref_alloc(cache * 2);
    for (size_t i = 0; i < cache; i++) {
        Kh[i] = pw_bf16_from_f32(cc.k0[i]);
        Vh[i] = pw_bf16_from_f32(cc.v0[i]);
        cc.k0[i] = pw_bf16_round(cc.k0[i]); /* the float32 reference's old slots */
        cc.v0[i] = pw_bf16_round(cc.v0[i]);
    }
    float *out = kref_alloc((size_t)N * C * sizeof *out), *out32 = kref_alloc((size_t)N * C * 4);
    for (size_t i = 0; i < (size_t)N * C; i++) out[i] = out32[i] = NAN;
    float *scores = kref_alloc((size_t)cc.nseg * NH * T * sizeof *scores);
    pw_attention_cache_gqa_forward_bf16(out, Kh, Vh, scores, cc.qkv, cc.seg_row, cc.seg_off,
                                        cc.seg_slot0, cc.nseg, N, T, NH, NKV, hs);

    /* the reference: q as given, k and v rounded, a float32 cache */
    for (int n = 0; n < N; n++)
        for (int i = NH * hs; i < W; i++) cc.qkv[(size_t)n * W + i] = pw_bf16_round(cc.qkv[(size_t)n * W + i]);
    float *K = kref_copy(cc.k0, cache), *V = kref_copy(cc.v0, cache);
    pw_attention_cache_gqa_forward(out32, K, V, scores, cc.qkv, cc.seg_row, cc.seg_off,
                                   cc.seg_slot0, cc.nseg, N, T, NH, NKV, hs);
    size_t bad = 0;
    for (size_t i = 0; i < cache; i++)
        bad += Kh[i] != pw_bf16_from_f32(K[i]) || Vh[i] != pw_bf16_from_f32(V[i]);
    CHECK(bad == 0, "NH=%d NKV=%d bf16: %zu slots differ from the rounded k and v", NH, NKV, bad);
    CHECK(memcmp(out, out32, (size_t)N * C * sizeof *out) == 0,
          "NH=%d NKV=%d bf16: output differs from the float32 kernel over the rounded values", NH,
          NKV);
    double *ref = kref_alloc((size_t)N * C * sizeof *ref), *Kr, *Vr;
    cache_case_ref(ref, &Kr, &Vr, &cc);
    double e = pw_max_rel_err(out, ref, (size_t)N * C, 1e-6);
    CHECK(e < KREF_TOL, "NH=%d NKV=%d bf16: attention over the cache: rel err %.3g", NH, NKV, e);
    printf("GQA attention over a bfloat16 KV cache: NH=%d NKV=%d hs=%d, rel err %.3g\n", NH, NKV,
           hs, e);
    free(Kh), free(Vh), free(out), free(out32), free(scores), free(K), free(V), free(ref);
    free(Kr), free(Vr);
    cache_case_free(&cc);
}

int main(void)
{
    check(6, 2, 5, 37);
    check(3, 1, 7, 38);
    check(4, 4, 8, 39);
    check_bf16(6, 2, 5, 40);
    check_bf16(4, 4, 8, 41);
    return pw_test_done("test_attention_cache_gqa");
}
