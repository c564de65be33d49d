/* test_policy_loss.c: the clipped PPO policy loss on hand values (both clip sides, both signs
 * of the advantage), its gradients by central finite differences, the ratio == 1 check of
 * docs/algorithm.md (Checks that catch real bugs), and the data-parallel normaliser. */
#include <stdlib.h>

#include "algo_test.h"

/* Five real tokens and one padded, eps = 0.2, entropy_bonus = 0.01, N = 5:
 *   ratio  A    ratio*A  clip*A   min     clipped  dL/dlogp = -ratio*A/N (0 if clipped)
 *   1.1    2    2.2      2.2      2.2     no       -0.44
 *   1.5    1    1.5      1.2      1.2     yes      0
 *   0.5   -1   -0.5     -0.8     -0.8     yes      0
 *   1.5   -1   -1.5     -1.2     -1.5     no       +0.3
 *   0.5    1    0.5      0.8      0.5     no       -0.1
 * pg_loss = -(2.2 + 1.2 - 0.8 - 1.5 + 0.5) / 5 = -0.32; clipfrac = 2/5; mean ratio = 5.1/5.
 * H = [1..5]: entropy_loss = -0.01 * 15 / 5 = -0.03, dL/dH = -0.01/5 = -0.002. */
static void test_hand_values(void)
{
    const double ratio[6] = {1.1, 1.5, 0.5, 1.5, 0.5, 3.0};
    const float adv[6] = {2, 1, -1, -1, 1, 50}, ent[6] = {1, 2, 3, 4, 5, 99};
    const float mask[6] = {1, 1, 1, 1, 1, 0};
    float lo[6], ln[6], dlp[6], dh[6];
    double akl = 0.0;
    for (int i = 0; i < 6; i++) {
        lo[i] = -2.0f;
        ln[i] = (float)(-2.0 + log(ratio[i]));
        if (i < 5) akl += 0.5 * log(ratio[i]) * log(ratio[i]) / 5.0;
    }
    PwPolicyStats st;
    pw_policy_loss(&st, dlp, dh, ln, lo, adv, ent, mask, NULL, 6, 0.2, 0.01, 0.0);
    /* logp_new is rounded to float, so ratios are 1.1 etc. to about 1e-7. */
    CHECK_CLOSE(st.pg_loss, -0.32, 1e-6);
    CHECK_CLOSE(st.entropy_loss, -0.03, 1e-12);
    CHECK_CLOSE(st.loss, -0.35, 1e-6);
    CHECK_CLOSE(st.clipfrac, 0.4, 1e-15);
    CHECK_CLOSE(st.ratio_mean, 1.02, 1e-6);
    CHECK_CLOSE(st.approxkl, akl, 1e-6);
    CHECK_CLOSE(st.entropy_mean, 3.0, 1e-12);
    CHECK(st.count == 5.0, "count %g", st.count);
    const double wg[6] = {-0.44, 0, 0, 0.3, -0.1, 0};
    for (int i = 0; i < 6; i++) CHECK_CLOSE(dlp[i], wg[i], 1e-6);
    for (int i = 0; i < 5; i++) CHECK_CLOSE(dh[i], -0.002, 1e-9);
    CHECK(dh[5] == 0.0f && dlp[5] == 0.0f, "padding gradient");

    /* Without entropies the bonus vanishes, and NULL gradient buffers are allowed. */
    pw_policy_loss(&st, NULL, dh, ln, lo, adv, NULL, mask, NULL, 6, 0.2, 0.01, 0.0);
    CHECK_CLOSE(st.loss, -0.32, 1e-6);
    CHECK(st.entropy_loss == 0.0 && st.entropy_mean == 0.0, "no entropy");
    CHECK(dh[0] == 0.0f, "dentropy without entropy %g", dh[0]);
}

/* docs/algorithm.md, Checks that catch real bugs: on the first minibatch of the first epoch
 * logp_new == logp_old, so ratio == 1 exactly, approxkl == 0, clipfrac == 0 and the gradient
 * is -A/N. */
static void test_on_policy(void)
{
    enum { B = 3, T = 11, N = B * T };
    unsigned long long seed = 5;
    float lp[N], adv[N], mask[N], g[N];
    const int len[B] = {11, 4, 7};
    algo_test_normal(lp, N, -2.0, 1.0, &seed);
    algo_test_normal(adv, N, 0.0, 1.0, &seed);
    algo_test_mask(mask, len, B, T);
    PwPolicyStats st;
    pw_policy_loss(&st, g, NULL, lp, lp, adv, NULL, mask, NULL, N, 0.2, 0.0, 0.0);
    CHECK(st.ratio_mean == 1.0, "ratio %.17g", st.ratio_mean);
    CHECK(st.approxkl == 0.0, "approxkl %g", st.approxkl);
    CHECK(st.clipfrac == 0.0, "clipfrac %g", st.clipfrac);
    double count = 22.0, mean_a = 0.0;
    for (int i = 0; i < N; i++) {
        double want = mask[i] != 0.0f ? -(double)adv[i] / count : 0.0;
        CHECK_CLOSE(g[i], want, 1e-7);
        if (mask[i] != 0.0f) mean_a += adv[i] / count;
    }
    CHECK_CLOSE(st.pg_loss, -mean_a, 1e-12);
}

/* Loss as a function of the inputs, for finite differences. */
static double loss_at(const float *ln, const float *lo, const float *adv, const float *ent,
                      const float *mask, int n, double bonus)
{
    PwPolicyStats st;
    pw_policy_loss(&st, NULL, NULL, ln, lo, adv, ent, mask, NULL, n, 0.2, bonus, 0.0);
    return st.loss;
}

/* Central differences on every real token. The inputs are float, so the step actually taken
 * is the float difference xp - xm (exact in double) and the loss comes back in double: the
 * error left is O(h^2) truncation, about 1e-7 relative for h = 1e-3. Tokens whose ratio lies
 * within the step of a clip boundary sit on a kink and are skipped. Tolerance: 1e-5 relative
 * to the largest gradient (the analytic gradient is stored as float). */
static void test_finite_differences(void)
{
    enum { B = 4, T = 16, N = B * T };
    const double h = 1e-3, bonus = 0.05;
    unsigned long long seed = 9;
    float lo[N], ln[N], adv[N], ent[N], mask[N], g[N], gh[N];
    const int len[B] = {16, 3, 9, 12};
    algo_test_normal(lo, N, -2.0, 1.0, &seed);
    algo_test_normal(ln, N, 0.0, 0.3, &seed); /* ratio spread enough to clip about a third */
    for (int i = 0; i < N; i++) ln[i] += lo[i];
    algo_test_normal(adv, N, 0.0, 1.0, &seed);
    for (int i = 0; i < N; i++) ent[i] = (float)(3.0 * pw_test_uniform(&seed));
    algo_test_mask(mask, len, B, T);
    PwPolicyStats st;
    pw_policy_loss(&st, g, gh, ln, lo, adv, ent, mask, NULL, N, 0.2, bonus, 0.0);
    CHECK(st.clipfrac > 0.1 && st.clipfrac < 0.9, "clipfrac %g: data does not exercise both "
          "branches", st.clipfrac);

    double gmax = 0.0, err = 0.0, errh = 0.0;
    int checked = 0;
    for (int i = 0; i < N; i++) gmax = fmax(gmax, fabs(g[i]));
    for (int i = 0; i < N; i++) {
        double r = exp((double)ln[i] - lo[i]);
        if (fabs(r - 0.8) < 4 * h || fabs(r - 1.2) < 4 * h) continue;
        float x = ln[i], xp = (float)(x + h), xm = (float)(x - h);
        ln[i] = xp;
        double lp = loss_at(ln, lo, adv, ent, mask, N, bonus);
        ln[i] = xm;
        double lm = loss_at(ln, lo, adv, ent, mask, N, bonus);
        ln[i] = x;
        double fd = (lp - lm) / ((double)xp - (double)xm);
        err = fmax(err, fabs(fd - g[i]));

        float e = ent[i], ep = (float)(e + h), em = (float)(e - h);
        ent[i] = ep;
        lp = loss_at(ln, lo, adv, ent, mask, N, bonus);
        ent[i] = em;
        lm = loss_at(ln, lo, adv, ent, mask, N, bonus);
        ent[i] = e;
        errh = fmax(errh, fabs((lp - lm) / ((double)ep - (double)em) - gh[i]));
        checked++;
    }
    CHECK(checked >= 30, "only %d tokens checked", checked);
    CHECK(err <= 1e-5 * gmax, "dL/dlogp_new: max abs err %g, max |g| %g", err, gmax);
    CHECK(errh <= 1e-5 * bonus / 40.0 + 1e-12, "dL/dH: max abs err %g", errh);
}

/* Data parallel: two "ranks" each pass the GLOBAL token count; their losses and gradients add
 * up to the single-rank loss and gradient of the whole minibatch. */
static void test_global_normaliser(void)
{
    enum { B = 4, T = 8, N = B * T, H = N / 2 };
    unsigned long long seed = 13;
    float lo[N], ln[N], adv[N], mask[N], g1[N], g2[N];
    const int len[B] = {8, 2, 5, 1};
    algo_test_normal(lo, N, -2.0, 1.0, &seed);
    algo_test_normal(ln, N, 0.0, 0.3, &seed);
    for (int i = 0; i < N; i++) ln[i] += lo[i];
    algo_test_normal(adv, N, 0.0, 1.0, &seed);
    algo_test_mask(mask, len, B, T);
    PwPolicyStats all, r0, r1;
    pw_policy_loss(&all, g1, NULL, ln, lo, adv, NULL, mask, NULL, N, 0.2, 0.0, 0.0);
    double global = all.count;
    pw_policy_loss(&r0, g2, NULL, ln, lo, adv, NULL, mask, NULL, H, 0.2, 0.0, global);
    pw_policy_loss(&r1, g2 + H, NULL, ln + H, lo + H, adv + H, NULL, mask + H, NULL, H, 0.2, 0.0,
                   global);
    CHECK_CLOSE(r0.loss + r1.loss, all.loss, 1e-12);
    CHECK(pw_max_rel_err_ff(g2, g1, N, 1e-12) < 1e-7, "gradients differ");
    /* Statistics are local means; weighted by count they give the global ones. */
    CHECK_CLOSE((r0.clipfrac * r0.count + r1.clipfrac * r1.count) / global, all.clipfrac, 1e-12);
    CHECK_CLOSE((r0.approxkl * r0.count + r1.approxkl * r1.count) / global, all.approxkl, 1e-12);
}

int main(void)
{
    test_hand_values();
    test_on_policy();
    test_finite_differences();
    test_global_normaliser();
    return pw_test_done("test_policy_loss");
}
