/* test_off_policy.c: the importance weights of ppo.off_policy on hand values (tis truncates at
 * the cap, decoupled leaves tokens above it out, none is 1, padding 0), and the policy loss
 * with them: each token's policy term scaled by its weight (worked by hand), the entropy bonus
 * untouched, and the gradient by central finite differences. */
#include <math.h>

#include "algo_test.h"

/* logp_old - logp_gen = log of [0.5, 1, 1.5, 3, 10] on real tokens, then one padded token:
 *   none:               1    1    1    1    1    | 0      capped 0
 *   tis, cap 2:         0.5  1    1.5  2    2    | 0      capped 2, sum 7
 *   decoupled, cap 2:   0.5  1    1.5  0    0    | 0      capped 2, sum 3
 *   decoupled, no cap:  0.5  1    1.5  3    10   | 0      capped 0, sum 16 */
static void test_weights(void)
{
    const double w[6] = {0.5, 1.0, 1.5, 3.0, 10.0, 7.0};
    const float mask[6] = {1, 1, 1, 1, 1, 0};
    float lo[6], lg[6], u[6];
    for (int i = 0; i < 6; i++) {
        lg[i] = -3.0f;
        lo[i] = (float)(-3.0 + log(w[i]));
    }
    struct {
        PwOffPolicy mode;
        double cap;
        double want[6], capped, sum;
    } cases[] = {
        {PW_OFFPOL_NONE, 2.0, {1, 1, 1, 1, 1, 0}, 0, 5},
        {PW_OFFPOL_TIS, 2.0, {0.5, 1, 1.5, 2, 2, 0}, 2, 7},
        {PW_OFFPOL_DECOUPLED, 2.0, {0.5, 1, 1.5, 0, 0, 0}, 2, 3},
        {PW_OFFPOL_DECOUPLED, 0.0, {0.5, 1, 1.5, 3, 10, 0}, 0, 16},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        PwOffPolicyStats st;
        pw_off_policy_weights(u, &st, lo, lg, mask, 6, cases[c].mode, cases[c].cap);
        for (int i = 0; i < 6; i++) CHECK_CLOSE(u[i], cases[c].want[i], 1e-6);
        CHECK(u[5] == 0.0f, "padding weight %g", u[5]);
        CHECK(st.count == 5.0 && st.capped == cases[c].capped, "case %zu: count %g capped %g", c,
              st.count, st.capped);
        CHECK_CLOSE(st.weight_sum, cases[c].sum, 1e-6);
    }
    /* Equal log-probs (a sync run, the same weights): every weight is exactly 1. */
    PwOffPolicyStats st;
    pw_off_policy_weights(u, &st, lo, lo, mask, 6, PW_OFFPOL_TIS, 2.0);
    for (int i = 0; i < 5; i++) CHECK(u[i] == 1.0f, "weight %d is %.9g", i, u[i]);
    CHECK(!strcmp(pw_off_policy_name(PW_OFFPOL_DECOUPLED), "decoupled"), "name");
}

/* The hand case of test_policy_loss (ratio 1.1, 1.5, 0.5, 1.5, 0.5; A 2, 1, -1, -1, 1; eps 0.2;
 * N = 5; terms min(...) = 2.2, 1.2, -0.8, -1.5, 0.5) with weights u = 0.5, 2, 1, 0, 3:
 *   pg_loss = -(0.5*2.2 + 2*1.2 - 0.8 + 0 + 3*0.5) / 5 = -(1.1 + 2.4 - 0.8 + 1.5) / 5 = -0.84
 *   dL/dlogp = -u ratio A / N where unclipped: -0.5*2.2/5 = -0.22, 0, 0, 0 (u = 0), -3*0.5/5 = -0.3
 * The entropy term (H = 1..5, bonus 0.01) stays -0.03: weights touch the policy term only. */
static void test_weighted_loss(void)
{
    const double ratio[6] = {1.1, 1.5, 0.5, 1.5, 0.5, 3.0};
    const float adv[6] = {2, 1, -1, -1, 1, 50}, ent[6] = {1, 2, 3, 4, 5, 99};
    const float mask[6] = {1, 1, 1, 1, 1, 0}, iw[6] = {0.5f, 2, 1, 0, 3, 9};
    float lo[6], ln[6], g[6], gh[6];
    for (int i = 0; i < 6; i++) {
        lo[i] = -2.0f;
        ln[i] = (float)(-2.0 + log(ratio[i]));
    }
    PwPolicyStats st;
    pw_policy_loss(&st, g, gh, ln, lo, adv, ent, mask, iw, 6, 0.2, 0.01, 0.0);
    CHECK_CLOSE(st.pg_loss, -0.84, 1e-6);
    CHECK_CLOSE(st.entropy_loss, -0.03, 1e-12);
    CHECK(st.clipfrac == 0.4 && st.count == 5.0, "clipfrac %g count %g", st.clipfrac, st.count);
    const double want[6] = {-0.22, 0, 0, 0, -0.3, 0};
    for (int i = 0; i < 6; i++) CHECK_CLOSE(g[i], want[i], 1e-6);
    for (int i = 0; i < 5; i++) CHECK_CLOSE(gh[i], -0.002, 1e-9);

    /* All weights 1 is the loss without weights, bit for bit. */
    const float ones[6] = {1, 1, 1, 1, 1, 1};
    PwPolicyStats a, b;
    float ga[6], gb[6];
    pw_policy_loss(&a, ga, NULL, ln, lo, adv, ent, mask, ones, 6, 0.2, 0.01, 0.0);
    pw_policy_loss(&b, gb, NULL, ln, lo, adv, ent, mask, NULL, 6, 0.2, 0.01, 0.0);
    CHECK(a.loss == b.loss, "loss %.17g vs %.17g", a.loss, b.loss);
    for (int i = 0; i < 6; i++) CHECK(ga[i] == gb[i], "gradient %d", i);
}

static double loss_at(const float *ln, const float *lo, const float *adv, const float *mask,
                      const float *iw, int n)
{
    PwPolicyStats st;
    pw_policy_loss(&st, NULL, NULL, ln, lo, adv, NULL, mask, iw, n, 0.2, 0.0, 0.0);
    return st.loss;
}

/* Central differences of the weighted loss in logp_new (the weights are constants of the step,
 * computed from logp_old and the generator's log-probs, not from logp_new). Tokens within the
 * step of a clip boundary are skipped (kinks); tolerance as in test_policy_loss. */
static void test_finite_differences(void)
{
    enum { B = 4, T = 16, N = B * T };
    const double h = 1e-3;
    unsigned long long seed = 21;
    float lo[N], lg[N], ln[N], adv[N], mask[N], iw[N], g[N];
    const int len[B] = {16, 5, 11, 8};
    algo_test_normal(lo, N, -2.0, 1.0, &seed);
    algo_test_normal(lg, N, 0.0, 0.5, &seed);
    for (int i = 0; i < N; i++) lg[i] += lo[i];
    algo_test_normal(ln, N, 0.0, 0.3, &seed);
    for (int i = 0; i < N; i++) ln[i] += lo[i];
    algo_test_normal(adv, N, 0.0, 1.0, &seed);
    algo_test_mask(mask, len, B, T);
    PwOffPolicyStats os;
    pw_off_policy_weights(iw, &os, lo, lg, mask, N, PW_OFFPOL_TIS, 1.5);
    CHECK(os.capped > 3 && os.capped < os.count - 3, "capped %g of %g: data does not exercise "
          "both sides of the cap", os.capped, os.count);
    PwPolicyStats st;
    pw_policy_loss(&st, g, NULL, ln, lo, adv, NULL, mask, iw, N, 0.2, 0.0, 0.0);
    double gmax = 0.0, err = 0.0;
    int checked = 0;
    for (int i = 0; i < N; i++) gmax = fmax(gmax, fabs(g[i]));
    for (int i = 0; i < N; i++) {
        double r = exp((double)ln[i] - lo[i]);
        if (fabs(r - 0.8) < 4 * h || fabs(r - 1.2) < 4 * h) continue;
        float x = ln[i], xp = (float)(x + h), xm = (float)(x - h);
        ln[i] = xp;
        double lp = loss_at(ln, lo, adv, mask, iw, N);
        ln[i] = xm;
        double lm = loss_at(ln, lo, adv, mask, iw, N);
        ln[i] = x;
        err = fmax(err, fabs((lp - lm) / ((double)xp - (double)xm) - g[i]));
        checked++;
    }
    CHECK(checked >= 30, "only %d tokens checked", checked);
    CHECK(err <= 1e-5 * gmax, "dL/dlogp_new: max abs err %g, max |g| %g", err, gmax);
}

int main(void)
{
    test_weights();
    test_weighted_loss();
    test_finite_differences();
    return pw_test_done("test_off_policy");
}
