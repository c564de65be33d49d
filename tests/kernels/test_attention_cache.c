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
    const int C = CC_C, NH = CC_NH, hs = CC_HS, T = CC_MAXT, N = cc.N;
    const size_t cache = (size_t)CC_MAXB * T * C;
    float *K = kref_copy(cc.k0, cache), *V = kref_copy(cc.v0, cache);
    float *out = kref_alloc((size_t)N * C * sizeof *out);
    float *scores = kref_alloc((size_t)CC_MAXB * NH * T * sizeof *scores);
    pw_attention_cache_forward(out, K, V, scores, cc.qkv, cc.seg_row, cc.seg_off, cc.seg_slot0,
                               cc.nseg, N, T, C, NH);

    /* the reference cache: the old one with each token's k and v at its row's slot */
    double *Kr = kref_to_double(cc.k0, cache), *Vr = kref_to_double(cc.v0, cache);
    for (int s = 0; s < cc.nseg; s++)
        for (int n = cc.seg_off[s]; n < cc.seg_off[s + 1]; n++) {
            int slot = cc.seg_slot0[s] + n - cc.seg_off[s];
            for (int h = 0; h < NH; h++)
                for (int i = 0; i < hs; i++) {
                    size_t at = (((size_t)cc.seg_row[s] * NH + h) * T + slot) * hs + i;
                    Kr[at] = cc.qkv[(size_t)n * 3 * C + C + h * hs + i];
                    Vr[at] = cc.qkv[(size_t)n * 3 * C + 2 * C + h * hs + i];
                }
        }
    double maxd = 0.0, maxr = 0.0;
    for (size_t i = 0; i < cache; i++) {
        maxd = fmax(maxd, fabs(K[i] - Kr[i]) + fabs(V[i] - Vr[i]));
        maxr = fmax(maxr, fabs(Kr[i]));
    }
    CHECK(maxd == 0.0, "cache after the pass differs from the expected one by %g", maxd);

    /* the reference attention, in double */
    double *ref = kref_alloc((size_t)N * C * sizeof *ref);
    double p[CC_MAXT];
    for (int s = 0; s < cc.nseg; s++)
        for (int n = cc.seg_off[s]; n < cc.seg_off[s + 1]; n++) {
            int keys = cc.seg_slot0[s] + n - cc.seg_off[s] + 1;
            for (int h = 0; h < NH; h++) {
                const float *q = cc.qkv + (size_t)n * 3 * C + h * hs;
                const double *Kh = Kr + ((size_t)cc.seg_row[s] * NH + h) * T * hs;
                const double *Vh = Vr + ((size_t)cc.seg_row[s] * NH + h) * T * hs;
                double mx = -INFINITY, z = 0.0;
                for (int t = 0; t < keys; t++) {
                    double dot = 0.0;
                    for (int i = 0; i < hs; i++) dot += q[i] * Kh[(size_t)t * hs + i];
                    p[t] = dot / sqrt((double)hs);
                    mx = fmax(mx, p[t]);
                }
                for (int t = 0; t < keys; t++) z += (p[t] = exp(p[t] - mx));
                for (int i = 0; i < hs; i++) {
                    double o = 0.0;
                    for (int t = 0; t < keys; t++) o += p[t] / z * Vh[(size_t)t * hs + i];
                    ref[(size_t)n * C + h * hs + i] = o;
                }
            }
        }
    double e = pw_max_rel_err(out, ref, (size_t)N * C, 1e-6);
    CHECK(e < KREF_TOL, "attention over the cache: rel err %.3g", e);
    /* row 2 was not in the pass: its slots are untouched (checked with the cache above) */
    printf("attention over a KV cache: %d tokens in %d segments, rel err %.3g\n", N, cc.nseg, e);
    free(K), free(V), free(out), free(scores), free(Kr), free(Vr), free(ref);
    cache_case_free(&cc);
    return pw_test_done("test_attention_cache");
}
