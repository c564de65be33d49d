/* cache_case.h: one pass of packed tokens over a partly filled KV cache, the case the cache
 * attention tests of both devices run (rows at different lengths, a prefill-sized segment and
 * single decode tokens, rows the pass leaves alone), and its float64 reference. */
#ifndef PW_TESTS_CACHE_CASE_H
#define PW_TESTS_CACHE_CASE_H

#include "kref.h"

enum { CC_MAXB = 5, CC_MAXT = 24, CC_C = 32, CC_NH = 4, CC_HS = CC_C / CC_NH, CC_NSEG = 4 };

typedef struct CacheCase {
    int seg_row[CC_NSEG], seg_off[CC_NSEG + 1], seg_slot0[CC_NSEG];
    int nseg, N;
    int NH, NKV, hs;       /* query heads, key/value heads, head size */
    int maxB, maxT;        /* the cache's rows and slots: CC_MAXB, CC_MAXT but in the long case */
    float *qkv;            /* (N, (NH + 2 NKV) hs) */
    float *k0, *v0;        /* (maxB, NKV, maxT, hs): the cache before the pass */
} CacheCase;

/* Row 3 prefills 9 tokens into an empty cache; rows 0, 4, 1 append one token each after 5, 17
 * and 23 cached tokens (row 1 reaches the last slot); row 2 is not in the pass. */
static inline void cache_case_make_gqa(CacheCase *c, unsigned long long *rng, int NH, int NKV,
                                       int hs)
{
    static const int rows[CC_NSEG] = {3, 0, 4, 1}, lens[CC_NSEG] = {9, 1, 1, 1};
    static const int slot0[CC_NSEG] = {0, 5, 17, 23};
    c->nseg = CC_NSEG;
    c->N = 0;
    c->NH = NH, c->NKV = NKV, c->hs = hs;
    c->maxB = CC_MAXB, c->maxT = CC_MAXT;
    for (int s = 0; s < CC_NSEG; s++) {
        c->seg_row[s] = rows[s];
        c->seg_slot0[s] = slot0[s];
        c->seg_off[s] = c->N;
        c->N += lens[s];
    }
    c->seg_off[CC_NSEG] = c->N;
    size_t cache = (size_t)CC_MAXB * CC_MAXT * NKV * hs;
    c->qkv = kref_randn((size_t)c->N * (NH + 2 * NKV) * hs, 1.0, rng);
    c->k0 = kref_randn(cache, 1.0, rng);
    c->v0 = kref_randn(cache, 1.0, rng);
}

/* The long case: more keys than a GPU block has threads, so that the online softmax runs over
 * several tiles. Row 0 prefills 150 tokens into an empty cache of 300 slots; row 1 appends one
 * token after 299 cached ones (the last slot). cache_case_ref does not take it. */
static inline void cache_case_make_long(CacheCase *c, unsigned long long *rng, int NH, int NKV,
                                        int hs)
{
    c->nseg = 2;
    c->NH = NH, c->NKV = NKV, c->hs = hs;
    c->maxB = 2, c->maxT = 300;
    c->seg_row[0] = 0, c->seg_slot0[0] = 0, c->seg_off[0] = 0;
    c->seg_row[1] = 1, c->seg_slot0[1] = 299, c->seg_off[1] = 150;
    c->N = c->seg_off[2] = 151;
    size_t cache = (size_t)c->maxB * c->maxT * NKV * hs;
    c->qkv = kref_randn((size_t)c->N * (NH + 2 * NKV) * hs, 1.0, rng);
    c->k0 = kref_randn(cache, 1.0, rng);
    c->v0 = kref_randn(cache, 1.0, rng);
}

/* the long case or the standard one */
static inline void cache_case_make_any(CacheCase *c, unsigned long long *rng, int NH, int NKV,
                                       int hs, int lng)
{
    if (lng)
        cache_case_make_long(c, rng, NH, NKV, hs);
    else
        cache_case_make_gqa(c, rng, NH, NKV, hs);
}

/* the multi-head case: CC_NH heads of CC_HS, qkv (N, 3C) */
static inline void cache_case_make(CacheCase *c, unsigned long long *rng)
{
    cache_case_make_gqa(c, rng, CC_NH, CC_NH, CC_HS);
}

/* The float64 reference: Kr, Vr (maxB, NKV, maxT, hs) get each token's k and v at its row's
 * slot (over the old cache), and ref (N, NH hs) each query's softmax over slots 0 .. its own. */
static inline void cache_case_ref(double *ref, double **Kr, double **Vr, const CacheCase *c)
{
    const int NH = c->NH, NKV = c->NKV, hs = c->hs, T = CC_MAXT, W = (NH + 2 * NKV) * hs;
    const size_t cache = (size_t)CC_MAXB * T * NKV * hs;
    double *K = kref_to_double(c->k0, cache), *V = kref_to_double(c->v0, cache);
    for (int s = 0; s < c->nseg; s++)
        for (int n = c->seg_off[s]; n < c->seg_off[s + 1]; n++) {
            int slot = c->seg_slot0[s] + n - c->seg_off[s];
            for (int kv = 0; kv < NKV; kv++)
                for (int i = 0; i < hs; i++) {
                    size_t at = (((size_t)c->seg_row[s] * NKV + kv) * T + slot) * hs + i;
                    K[at] = c->qkv[(size_t)n * W + (NH + kv) * hs + i];
                    V[at] = c->qkv[(size_t)n * W + (NH + NKV + kv) * hs + i];
                }
        }
    double p[CC_MAXT];
    for (int s = 0; s < c->nseg; s++)
        for (int n = c->seg_off[s]; n < c->seg_off[s + 1]; n++) {
            int keys = c->seg_slot0[s] + n - c->seg_off[s] + 1;
            for (int h = 0; h < NH; h++) {
                int kv = h / (NH / NKV);
                const float *q = c->qkv + (size_t)n * W + h * hs;
                const double *Kh = K + ((size_t)c->seg_row[s] * NKV + kv) * T * hs;
                const double *Vh = V + ((size_t)c->seg_row[s] * NKV + kv) * T * hs;
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
                    ref[(size_t)n * NH * hs + h * hs + i] = o;
                }
            }
        }
    *Kr = K;
    *Vr = V;
}

static inline void cache_case_free(CacheCase *c)
{
    free(c->qkv);
    free(c->k0);
    free(c->v0);
}

#endif
