/* test_value_loss.c: the clipped value loss on hand values, its gradient by central finite
 * differences with and without clipping, and the clip fraction. */
#include <stdlib.h>

#include "algo_test.h"

/* c = 0.2, N = 3 (a fourth, padded token carries junk):
 *   V    Vold  R    Vc    (V-R)^2  (Vc-R)^2  max   clipped  dL/dV
 *   1.0  0.9   1.5  1.0   0.25     0.25      0.25  no       (1.0-1.5)/3 = -1/6
 *   1.5  1.0   2.0  1.2   0.25     0.64      0.64  yes      0
 *   1.5  1.0   1.0  1.2   0.25     0.04      0.25  no       (1.5-1.0)/3 = +1/6
 * L = 0.5 * (0.25 + 0.64 + 0.25) / 3 = 0.19, clipfrac = 1/3.
 * c = 0: L = 0.5 * 0.75 / 3 = 0.125, gradients -1/6, -1/6, +1/6. */
static void test_hand_values(void)
{
    const float v[4] = {1.0f, 1.5f, 1.5f, 7.0f}, vo[4] = {0.9f, 1.0f, 1.0f, 0.0f};
    const float r[4] = {1.5f, 2.0f, 1.0f, -7.0f}, m[4] = {1, 1, 1, 0};
    float g[4];
    PwValueStats st;
    pw_value_loss(&st, g, v, vo, r, m, 4, 0.2, 0.0);
    CHECK_CLOSE(st.loss, 0.19, 1e-6);
    CHECK_CLOSE(st.clipfrac, 1.0 / 3.0, 1e-15);
    CHECK_CLOSE(st.value_mean, 4.0 / 3.0, 1e-6);
    CHECK(st.count == 3.0, "count %g", st.count);
    const double wg[4] = {-1.0 / 6.0, 0.0, 1.0 / 6.0, 0.0};
    for (int i = 0; i < 4; i++) CHECK_CLOSE(g[i], wg[i], 1e-6);

    pw_value_loss(&st, g, v, vo, r, m, 4, 0.0, 0.0);
    CHECK_CLOSE(st.loss, 0.125, 1e-6);
    CHECK(st.clipfrac == 0.0, "clipfrac without clipping %g", st.clipfrac);
    const double wg0[4] = {-1.0 / 6.0, -1.0 / 6.0, 1.0 / 6.0, 0.0};
    for (int i = 0; i < 4; i++) CHECK_CLOSE(g[i], wg0[i], 1e-6);

    /* A caller-given normaliser replaces the count. */
    pw_value_loss(&st, g, v, vo, r, m, 4, 0.0, 6.0);
    CHECK_CLOSE(st.loss, 0.0625, 1e-6);
    CHECK_CLOSE(g[0], -1.0 / 12.0, 1e-6);
}

static double loss_at(const float *v, const float *vo, const float *r, const float *m, int n,
                      double clip)
{
    PwValueStats st;
    pw_value_loss(&st, NULL, v, vo, r, m, n, clip, 0.0);
    return st.loss;
}

/* Central differences (h = 1e-3, float steps measured exactly, loss in double). The loss is
 * quadratic between kinks, so the only error is rounding; tokens within 4h of a kink (V at
 * Vold +- c, or where the clipped and unclipped errors cross) are skipped. */
static void check_fd(double clip)
{
    enum { B = 3, T = 20, N = B * T };
    const double h = 1e-3;
    unsigned long long seed = 17;
    float v[N], vo[N], r[N], m[N], g[N];
    const int len[B] = {20, 6, 13};
    algo_test_normal(vo, N, 0.0, 1.0, &seed);
    algo_test_normal(v, N, 0.0, 0.3, &seed);
    for (int i = 0; i < N; i++) v[i] += vo[i];
    algo_test_normal(r, N, 0.0, 1.0, &seed);
    algo_test_mask(m, len, B, T);
    PwValueStats st;
    pw_value_loss(&st, g, v, vo, r, m, N, clip, 0.0);
    if (clip > 0.0) CHECK(st.clipfrac > 0.05, "clipfrac %g: clipping never exercised", st.clipfrac);
    double err = 0.0, gmax = 0.0;
    int checked = 0;
    for (int i = 0; i < N; i++) {
        gmax = fmax(gmax, fabs(g[i]));
        if (clip > 0.0) {
            double lo = vo[i] - clip, hi = vo[i] + clip;
            if (fabs(v[i] - lo) < 4 * h || fabs(v[i] - hi) < 4 * h) continue;
            /* (V-R)^2 = (Vc-R)^2 where V meets the mirror of Vc about R. */
            double vc = v[i] < lo ? lo : (v[i] > hi ? hi : v[i]);
            if (fabs(fabs(v[i] - r[i]) - fabs(vc - r[i])) < 4 * h && vc != v[i]) continue;
        }
        float x = v[i], xp = (float)(x + h), xm = (float)(x - h);
        v[i] = xp;
        double lp = loss_at(v, vo, r, m, N, clip);
        v[i] = xm;
        double lm = loss_at(v, vo, r, m, N, clip);
        v[i] = x;
        err = fmax(err, fabs((lp - lm) / ((double)xp - (double)xm) - g[i]));
        checked++;
    }
    CHECK(checked >= 30, "only %d tokens checked", checked);
    CHECK(err <= 1e-5 * gmax, "clip %g: dL/dV max abs err %g, max |g| %g", clip, err, gmax);
}

int main(void)
{
    test_hand_values();
    check_fd(0.0);
    check_fd(0.2);
    return pw_test_done("test_value_loss");
}
