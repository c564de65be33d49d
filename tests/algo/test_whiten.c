/* test_whiten.c: advantage whitening over real tokens: moments after whitening, the kept mean,
 * padding, and the split into per-rank partial sums that the runtime all-reduces. */
#include <stdlib.h>

#include "algo_test.h"

enum { B = 4, T = 9 };

static void moments(const float *x, const float *m, size_t n, double *mean, double *var)
{
    double s = 0.0, c = 0.0, q = 0.0;
    for (size_t i = 0; i < n; i++)
        if (m[i] != 0.0f) s += x[i], c += 1.0;
    *mean = s / c;
    for (size_t i = 0; i < n; i++)
        if (m[i] != 0.0f) q += (x[i] - *mean) * (x[i] - *mean);
    *var = q / (c - 1.0); /* unbiased, the convention under test */
}

static void fill(float *x, float *m)
{
    unsigned long long seed = 3;
    const int len[B] = {9, 2, 5, 7};
    algo_test_normal(x, B * T, 1.7, 3.0, &seed);
    algo_test_mask(m, len, B, T);
    for (int i = 0; i < B * T; i++)
        if (m[i] == 0.0f) x[i] = 100.0f; /* junk that must not move the statistics */
}

static void test_shift(int shift_mean)
{
    float x[B * T], m[B * T];
    fill(x, m);
    double mean0, var0, mean1, var1;
    moments(x, m, B * T, &mean0, &var0);
    pw_whiten(x, m, B * T, shift_mean);
    moments(x, m, B * T, &mean1, &var1);
    CHECK_CLOSE(mean1, shift_mean ? 0.0 : mean0, 1e-6);
    CHECK_CLOSE(var1, 1.0, 1e-5);
    for (int i = 0; i < B * T; i++)
        if (m[i] == 0.0f) CHECK(x[i] == 0.0f, "padding %d = %g", i, x[i]);
}

/* Rows 0-1 on "rank 0", rows 2-3 on "rank 1": partial sums, a sum (the all-reduce), then each
 * rank whitens its own rows; the result equals whitening the whole batch on one rank. */
static void test_two_ranks(void)
{
    float x[B * T], m[B * T], one[B * T];
    fill(x, m);
    memcpy(one, x, sizeof x);
    pw_whiten(one, m, B * T, 1);

    size_t half = (size_t)2 * T;
    PwWhitenStats s0, s1;
    pw_whiten_partial(&s0, x, m, half);
    pw_whiten_partial(&s1, x + half, m + half, half);
    PwWhitenStats g = s0;
    pw_whiten_stats_add(&g, &s1);
    CHECK(g.count == 9 + 2 + 5 + 7, "count %g", g.count);
    pw_whiten_apply(x, m, half, &g, 1);
    pw_whiten_apply(x + half, m + half, half, &g, 1);
    double e = pw_max_rel_err_ff(x, one, B * T, 1.0);
    CHECK(e < 1e-6, "split vs single rank rel err %g", e);
}

/* Hand values: x = [1, 2, 3] -> mean 2, unbiased var 1, so whitened = [-1, 0, 1] (1e-8 eps
 * is below float resolution here); one token -> mean itself, var 0 -> 0; none -> nothing. */
static void test_hand_and_degenerate(void)
{
    float x[3] = {1.0f, 2.0f, 3.0f};
    const float m[3] = {1, 1, 1};
    pw_whiten(x, m, 3, 1);
    CHECK_CLOSE(x[0], -1.0, 1e-6);
    CHECK_CLOSE(x[1], 0.0, 1e-6);
    CHECK_CLOSE(x[2], 1.0, 1e-6);
    double mean, var;
    PwWhitenStats s = {6.0, 14.0, 3.0};
    pw_whiten_moments(&s, &mean, &var);
    CHECK_CLOSE(mean, 2.0, 1e-15);
    CHECK_CLOSE(var, 1.0, 1e-15);

    float y[2] = {5.0f, 8.0f};
    const float m1[2] = {1, 0};
    pw_whiten(y, m1, 2, 1);
    CHECK(y[0] == 0.0f && y[1] == 0.0f, "single token %g %g", y[0], y[1]);
    const float m0[2] = {0, 0};
    y[0] = 5.0f;
    pw_whiten(y, m0, 2, 0);
    CHECK(y[0] == 0.0f && isfinite(y[0]), "no tokens %g", y[0]);
}

int main(void)
{
    test_shift(1);
    test_shift(0);
    test_two_ranks();
    test_hand_and_degenerate();
    return pw_test_done("test_whiten");
}
