/* test_attention_cache_gqa.c: grouped-query attention of packed new tokens over a KV cache
 * against a float64 reference: the slots each token writes and each query's softmax. */
#include <math.h>

#include "cache_case.h"
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

int main(void)
{
    check(6, 2, 5, 37);
    check(3, 1, 7, 38);
    check(4, 4, 8, 39);
    return pw_test_done("test_attention_cache_gqa");
}
