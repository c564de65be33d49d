/* cache_case.h: one pass of packed tokens over a partly filled KV cache, the case the cache
 * attention tests of both devices run: rows at different lengths, a prefill-sized segment and
 * single decode tokens, rows the pass leaves alone. */
#ifndef PW_TESTS_CACHE_CASE_H
#define PW_TESTS_CACHE_CASE_H

#include "kref.h"

enum { CC_MAXB = 5, CC_MAXT = 24, CC_C = 32, CC_NH = 4, CC_HS = CC_C / CC_NH, CC_NSEG = 4 };

typedef struct CacheCase {
    int seg_row[CC_NSEG], seg_off[CC_NSEG + 1], seg_slot0[CC_NSEG];
    int nseg, N;
    float *qkv;            /* (N, 3C) */
    float *k0, *v0;        /* (maxB, NH, maxT, hs): the cache before the pass */
} CacheCase;

/* Row 3 prefills 9 tokens into an empty cache; rows 0, 4, 1 append one token each after 5, 17
 * and 23 cached tokens (row 1 reaches the last slot); row 2 is not in the pass. */
static inline void cache_case_make(CacheCase *c, unsigned long long *rng)
{
    static const int rows[CC_NSEG] = {3, 0, 4, 1}, lens[CC_NSEG] = {9, 1, 1, 1};
    static const int slot0[CC_NSEG] = {0, 5, 17, 23};
    c->nseg = CC_NSEG;
    c->N = 0;
    for (int s = 0; s < CC_NSEG; s++) {
        c->seg_row[s] = rows[s];
        c->seg_slot0[s] = slot0[s];
        c->seg_off[s] = c->N;
        c->N += lens[s];
    }
    c->seg_off[CC_NSEG] = c->N;
    size_t cache = (size_t)CC_MAXB * CC_MAXT * CC_C;
    c->qkv = kref_randn((size_t)c->N * 3 * CC_C, 1.0, rng);
    c->k0 = kref_randn(cache, 1.0, rng);
    c->v0 = kref_randn(cache, 1.0, rng);
}

static inline void cache_case_free(CacheCase *c)
{
    free(c->qkv);
    free(c->k0);
    free(c->v0);
}

#endif
