/* test_gae.c: GAE and returns on the hand-worked example of docs/algorithm.md (GAE), on padded
 * rows, and with gamma < 1 against a direct (non-recursive) double evaluation of the GAE sum. */
#include <stdlib.h>

#include "algo_test.h"

/* Hand-worked: 3 tokens, gamma = 1, lambda = 0.95,
 *   rewards r = [-0.1, 0.0, 1.0]   (KL penalty, nothing, KL penalty + score)
 *   values  V = [ 0.5, 0.6, 0.7],  V after the last token = 0
 * t=2: delta = 1.0 + 0 - 0.7          = 0.3    A = 0.3                      R = 0.3 + 0.7 = 1.0
 * t=1: delta = 0.0 + 0.7 - 0.6        = 0.1    A = 0.1 + 0.95*0.3   = 0.385  R = 0.985
 * t=0: delta = -0.1 + 0.6 - 0.5       = 0.0    A = 0.0 + 0.95*0.385 = 0.36575 R = 0.86575 */
static void test_hand_worked(void)
{
    const float r[3] = {-0.1f, 0.0f, 1.0f}, v[3] = {0.5f, 0.6f, 0.7f}, m[3] = {1, 1, 1};
    float a[3], ret[3];
    pw_gae(a, ret, r, v, m, 1, 3, 1.0, 0.95);
    const double wa[3] = {0.36575, 0.385, 0.3}, wr[3] = {0.86575, 0.985, 1.0};
    for (int t = 0; t < 3; t++) {
        CHECK_CLOSE(a[t], wa[t], 1e-6);
        CHECK_CLOSE(ret[t], wr[t], 1e-6);
    }
}

/* The same response in a padded batch: the padding carries junk the critic printed there, and
 * must neither leak into the last real token (V_{T+1} = 0) nor get an advantage itself. A
 * second row of one token checks a stop at t = 0: A = r - V = 2 - 0.5. */
static void test_padded(void)
{
    const float r[2 * 5] = {-0.1f, 0.0f, 1.0f, 7.0f, 7.0f, 2.0f, 9.0f, 9.0f, 9.0f, 9.0f};
    const float v[2 * 5] = {0.5f, 0.6f, 0.7f, 5.0f, 5.0f, 0.5f, 3.0f, 3.0f, 3.0f, 3.0f};
    const int len[2] = {3, 1};
    float m[10], a[10], ret[10];
    algo_test_mask(m, len, 2, 5);
    pw_gae(a, ret, r, v, m, 2, 5, 1.0, 0.95);
    const double wa[10] = {0.36575, 0.385, 0.3, 0, 0, 1.5, 0, 0, 0, 0};
    const double wr[10] = {0.86575, 0.985, 1.0, 0, 0, 2.0, 0, 0, 0, 0};
    for (int i = 0; i < 10; i++) {
        CHECK_CLOSE(a[i], wa[i], 1e-6);
        CHECK_CLOSE(ret[i], wr[i], 1e-6);
    }
}

/* gamma < 1 on random padded data against A_t = sum_l (gamma*lambda)^l delta_{t+l}. */
static void test_random_against_sum(void)
{
    enum { B = 6, T = 17 };
    const double gamma = 0.97, lambda = 0.9;
    unsigned long long seed = 7;
    static float r[B * T], v[B * T], m[B * T], a[B * T], ret[B * T];
    int len[B] = {17, 1, 9, 16, 4, 12};
    algo_test_normal(r, B * T, 0.0, 1.0, &seed);
    algo_test_normal(v, B * T, 0.0, 2.0, &seed);
    algo_test_mask(m, len, B, T);
    pw_gae(a, ret, r, v, m, B, T, gamma, lambda);
    double wa[B * T], wr[B * T];
    for (int b = 0; b < B; b++) {
        const float *rb = r + b * T, *vb = v + b * T;
        for (int t = 0; t < T; t++) {
            wa[b * T + t] = wr[b * T + t] = 0.0;
            if (t >= len[b]) continue;
            double s = 0.0, w = 1.0;
            for (int k = t; k < len[b]; k++) {
                double vnext = k + 1 < len[b] ? vb[k + 1] : 0.0;
                s += w * (rb[k] + gamma * vnext - vb[k]);
                w *= gamma * lambda;
            }
            wa[b * T + t] = s;
            wr[b * T + t] = s + vb[t];
        }
    }
    double ea = pw_max_rel_err(a, wa, B * T, 1.0), er = pw_max_rel_err(ret, wr, B * T, 1.0);
    CHECK(ea < 1e-6, "advantages rel err %g", ea);
    CHECK(er < 1e-6, "returns rel err %g", er);
}

/* lambda = 1, gamma = 1: A_t = sum of future rewards - V_t (Monte Carlo), R_t = reward-to-go. */
static void test_monte_carlo(void)
{
    const float r[4] = {1.0f, 2.0f, 3.0f, 4.0f}, v[4] = {0.25f, -1.0f, 0.5f, 2.0f};
    const float m[4] = {1, 1, 1, 1};
    float a[4], ret[4];
    pw_gae(a, ret, r, v, m, 1, 4, 1.0, 1.0);
    const double togo[4] = {10, 9, 7, 4};
    for (int t = 0; t < 4; t++) {
        CHECK_CLOSE(ret[t], togo[t], 1e-6);
        CHECK_CLOSE(a[t], togo[t] - v[t], 1e-6);
    }
}

int main(void)
{
    test_hand_worked();
    test_padded();
    test_random_against_sum();
    test_monte_carlo();
    return pw_test_done("test_gae");
}
