/* algo_test.h: small helpers shared by the algo tests on top of pw_test.h: scalar closeness
 * checks and random masked batches, so every test reads as its hand-worked numbers. */
#ifndef PW_ALGO_TEST_H
#define PW_ALGO_TEST_H

#include "pw_algo.h"
#include "pw_test.h"

/* |got - want| <= tol * max(1, |want|): relative for large values, absolute near 0. */
#define CHECK_CLOSE(got, want, tol)                                                         \
    do {                                                                                   \
        double g_ = (got), w_ = (want);                                                    \
        double s_ = fabs(w_) > 1.0 ? fabs(w_) : 1.0;                                       \
        CHECK(fabs(g_ - w_) <= (tol) * s_, "got %.12g want %.12g (tol %g)", g_, w_,         \
              (double)(tol));                                                              \
    } while (0)

/* A (B,T) right-padded mask whose row b has lengths[b] real tokens. */
static inline void algo_test_mask(float *mask, const int *lengths, int B, int T)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) mask[(size_t)b * T + t] = t < lengths[b] ? 1.0f : 0.0f;
}

/* Fill n floats with mean + std * N(0,1). */
static inline void algo_test_normal(float *x, size_t n, double mean, double std,
                                    unsigned long long *seed)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(mean + std * pw_test_normal(seed));
}

#endif
