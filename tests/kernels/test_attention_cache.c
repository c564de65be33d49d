/* test_attention_cache.c: attention of packed new tokens over a KV cache against a float64
 * reference: the cache slots each token must write, and each query's softmax over slots 0..own. */
#include <math.h>

#include "cache_case.h"
#include "pw_kernels.h"

int main(void)
{
    unsigned long long rng = 31;
    CacheCase cc;
    cache_case_make(&cc, &rng);
    const int C = CC_C, NH = CC_NH, T = CC_MAXT, N = cc.N;
    const size_t cache = (size_t)CC_MAXB * T * C;
    float *K = kref_copy(cc.k0, cache), *V = kref_copy(cc.v0, cache);
    float *out = kref_alloc((size_t)N * C * sizeof *out);
    float *scores = kref_alloc((size_t)CC_MAXB * NH * T * sizeof *scores);
    pw_attention_cache_forward(out, K, V, scores, cc.qkv, cc.seg_row, cc.seg_off, cc.seg_slot0,
                               cc.nseg, N, T, C, NH);

    double *ref = kref_alloc((size_t)N * C * sizeof *ref), *Kr, *Vr;
    cache_case_ref(ref, &Kr, &Vr, &cc);
    double maxd = 0.0;
    for (size_t i = 0; i < cache; i++) maxd = fmax(maxd, fabs(K[i] - Kr[i]) + fabs(V[i] - Vr[i]));
    CHECK(maxd == 0.0, "cache after the pass differs from the expected one by %g", maxd);
    double e = pw_max_rel_err(out, ref, (size_t)N * C, 1e-6);
    CHECK(e < KREF_TOL, "attention over the cache: rel err %.3g", e);
    /* row 2 was not in the pass: its slots are untouched (checked with the cache above) */
    printf("attention over a KV cache: %d tokens in %d segments, rel err %.3g\n", N, cc.nseg, e);
    free(K), free(V), free(out), free(scores), free(Kr), free(Vr), free(ref);
    cache_case_free(&cc);
    return pw_test_done("test_attention_cache");
}
