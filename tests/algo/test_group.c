/* test_group.c: the critic-free algorithms' math on hand-worked groups: GRPO's normalised and
 * unscaled (Dr. GRPO) advantages, RLOO's leave-one-out baseline, ties and all-equal groups, the
 * refusals (n = 1, ppo), the loss weights of each aggregation with the policy loss under them,
 * and the KL loss term with its gradient by central differences for every estimator. */
#include <stdlib.h>
#include <string.h>

#include "algo_test.h"

/* Groups of n = 4 (eps = 1e-4):
 *   [1, 2, 3, 6]          mean 3, deviations -2 -1 0 3, sum of squares 14, std sqrt(14/3)
 *   [0.5 x 4]             all equal: every advantage exactly 0
 *   [1, 1, 0, 0]          ties: deviations +-0.5, sum of squares 1, std sqrt(1/3)
 * RLOO on the first: A_i = r_i - (12 - r_i)/3 = -8/3, -4/3, 0, 4 (= 4/3 of the deviations).
 * The group metrics: 1 of 3 groups all equal, mean std (sqrt(14/3) + 0 + sqrt(1/3)) / 3. */
static void test_advantages(void)
{
    const float r[12] = {1, 2, 3, 6, 0.5f, 0.5f, 0.5f, 0.5f, 1, 1, 0, 0};
    float a[12];
    PwErr err;
    CHECK(pw_group_advantages(a, r, 3, 4, PW_ALGO_GRPO, 1, 1e-4, &err) == 0, "%s", err.msg);
    double s1 = sqrt(14.0 / 3.0) + 1e-4, s3 = sqrt(1.0 / 3.0) + 1e-4;
    const double dev1[4] = {-2, -1, 0, 3};
    for (int i = 0; i < 4; i++) CHECK_CLOSE(a[i], dev1[i] / s1, 1e-6);
    for (int i = 4; i < 8; i++) CHECK(a[i] == 0.0f, "all-equal group: a[%d] = %g", i, a[i]);
    for (int i = 8; i < 12; i++) CHECK_CLOSE(a[i], (i < 10 ? 0.5 : -0.5) / s3, 1e-6);
    CHECK(a[8] == a[9] && a[10] == a[11], "ties get equal advantages");

    /* Dr. GRPO: the deviations themselves */
    CHECK(pw_group_advantages(a, r, 3, 4, PW_ALGO_GRPO, 0, 1e-4, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 4; i++) CHECK(a[i] == (float)dev1[i], "unscaled a[%d] = %g", i, a[i]);
    for (int i = 4; i < 8; i++) CHECK(a[i] == 0.0f, "unscaled all-equal a[%d] = %g", i, a[i]);

    CHECK(pw_group_advantages(a, r, 3, 4, PW_ALGO_RLOO, 1, 1e-4, &err) == 0, "%s", err.msg);
    const double rloo[4] = {-8.0 / 3, -4.0 / 3, 0, 4};
    for (int i = 0; i < 4; i++) CHECK_CLOSE(a[i], rloo[i], 1e-7);
    for (int i = 4; i < 8; i++) CHECK(a[i] == 0.0f, "RLOO all-equal a[%d] = %g", i, a[i]);
    for (int i = 8; i < 12; i++) CHECK_CLOSE(a[i], i < 10 ? 2.0 / 3 : -2.0 / 3, 1e-7);

    /* n = 2 (eps = 0): RLOO gives r_i - r_other; GRPO +-1/sqrt 2 whatever the scores */
    const float p[2] = {0.25f, 1.0f};
    CHECK(pw_group_advantages(a, p, 1, 2, PW_ALGO_RLOO, 1, 0.0, &err) == 0, "%s", err.msg);
    CHECK(a[0] == -0.75f && a[1] == 0.75f, "RLOO n=2: %g %g", a[0], a[1]);
    CHECK(pw_group_advantages(a, p, 1, 2, PW_ALGO_GRPO, 1, 0.0, &err) == 0, "%s", err.msg);
    /* deviations +-0.375, std = sqrt(2 * 0.375^2 / 1) = 0.375 sqrt 2 */
    CHECK_CLOSE(a[1], 1.0 / sqrt(2.0), 1e-7);
    CHECK_CLOSE(a[0], -1.0 / sqrt(2.0), 1e-7);

    /* the step's group metrics: one group in three all equal; the mean of the three stds */
    double eq, sm;
    pw_group_stats(r, 3, 4, &eq, &sm);
    CHECK_CLOSE(eq, 1.0 / 3.0, 1e-15);
    CHECK_CLOSE(sm, (sqrt(14.0 / 3.0) + 0.0 + sqrt(1.0 / 3.0)) / 3.0, 1e-12);

    /* refusals */
    CHECK(pw_group_advantages(a, r, 12, 1, PW_ALGO_GRPO, 1, 1e-4, &err) == -1 &&
              strstr(err.msg, "samples_per_prompt") && strstr(err.msg, "at least 2"),
          "n = 1: %s", err.msg);
    CHECK(pw_group_advantages(a, r, 3, 4, PW_ALGO_PPO, 1, 1e-4, &err) == -1 &&
              strstr(err.msg, "ppo"), "ppo: %s", err.msg);
    CHECK(pw_group_advantages(a, r, 3, 4, PW_ALGO_GRPO, 1, -1.0, &err) == -1, "eps < 0");
}

static void test_names(void)
{
    PwAlgorithm alg;
    PwLossAgg agg;
    PwErr err;
    CHECK(pw_algorithm_parse("GRPO", &alg, &err) == 0 && alg == PW_ALGO_GRPO, "GRPO");
    CHECK(pw_algorithm_parse("rloo", &alg, &err) == 0 && alg == PW_ALGO_RLOO, "rloo");
    CHECK(pw_algorithm_parse("dpo", &alg, &err) == -1 && strstr(err.msg, "algorithm") &&
              strstr(err.msg, "ppo, grpo, rloo"), "dpo: %s", err.msg);
    CHECK(pw_algorithm_needs_critic(PW_ALGO_PPO) && !pw_algorithm_needs_critic(PW_ALGO_GRPO) &&
              !pw_algorithm_needs_critic(PW_ALGO_RLOO), "needs_critic");
    CHECK(pw_loss_agg_parse("sequence", &agg, &err) == 0 && agg == PW_AGG_SEQUENCE, "sequence");
    CHECK(pw_loss_agg_parse("seq", &agg, &err) == -1 && strstr(err.msg, "token, sequence"),
          "seq: %s", err.msg);
    CHECK(strcmp(pw_algorithm_name(PW_ALGO_RLOO), "rloo") == 0, "name");
}

/* Two responses of lengths 2 and 4 (T = 4), sequence advantages 2 and -1, on policy (ratio 1):
 *   token:     weights 1; L = -(2 + 2 - 1 - 1 - 1 - 1) / 6 = 0; dL/dlogp = -A/6
 *   sequence:  weights 1/2 and 1/4, N = 2; L = -(2 - 1) / 2 = -0.5;
 *              dL/dlogp = -w A / 2 = -0.5 on row 0, +0.125 on row 1 */
static void test_aggregation(void)
{
    enum { B = 2, T = 4, N = B * T };
    const int len[B] = {2, 4};
    const float seq[B] = {2, -1};
    float mask[N], w[N], adv[N], lp[N], g[N];
    algo_test_mask(mask, len, B, T);
    pw_sequence_to_tokens(adv, seq, mask, B, T);
    const float want_adv[N] = {2, 2, 0, 0, -1, -1, -1, -1};
    for (int i = 0; i < N; i++) CHECK(adv[i] == want_adv[i], "adv[%d] = %g", i, adv[i]);
    for (int i = 0; i < N; i++) lp[i] = -1.0f;
    PwPolicyStats st;

    pw_loss_weights(w, mask, B, T, PW_AGG_TOKEN);
    for (int i = 0; i < N; i++) CHECK(w[i] == mask[i], "token weight %d", i);
    pw_policy_loss(&st, g, NULL, lp, lp, adv, NULL, w, NULL, N, 0.2, 0.0, 0.0);
    CHECK_CLOSE(st.loss, 0.0, 1e-15);
    for (int i = 0; i < N; i++) CHECK_CLOSE(g[i], -want_adv[i] / 6.0, 1e-7);

    pw_loss_weights(w, mask, B, T, PW_AGG_SEQUENCE);
    const float want_w[N] = {0.5f, 0.5f, 0, 0, 0.25f, 0.25f, 0.25f, 0.25f};
    for (int i = 0; i < N; i++) CHECK(w[i] == want_w[i], "sequence weight %d: %g", i, w[i]);
    pw_policy_loss(&st, g, NULL, lp, lp, adv, NULL, w, NULL, N, 0.2, 0.0, 0.0);
    CHECK_CLOSE(st.loss, -0.5, 1e-15);
    CHECK(st.count == 6.0 && st.ratio_mean == 1.0, "stats are over tokens: %g", st.count);
    const double want_g[N] = {-0.5, -0.5, 0, 0, 0.125, 0.125, 0.125, 0.125};
    for (int i = 0; i < N; i++) CHECK_CLOSE(g[i], want_g[i], 1e-7);

    /* Off policy with clipping and entropies: under sequence weights the loss is the mean over
     * responses of each response's own token-mean loss (computed row by row, token weights). */
    unsigned long long seed = 4;
    enum { B2 = 3, T2 = 9, N2 = B2 * T2 };
    const int len2[B2] = {9, 2, 5};
    float m2[N2], w2[N2], lo[N2], ln[N2], a2[N2], h[N2];
    algo_test_mask(m2, len2, B2, T2);
    algo_test_normal(lo, N2, -2.0, 1.0, &seed);
    algo_test_normal(ln, N2, 0.0, 0.3, &seed);
    for (int i = 0; i < N2; i++) ln[i] += lo[i];
    algo_test_normal(a2, N2, 0.0, 1.0, &seed);
    for (int i = 0; i < N2; i++) h[i] = (float)(2.0 * pw_test_uniform(&seed));
    pw_loss_weights(w2, m2, B2, T2, PW_AGG_SEQUENCE);
    pw_policy_loss(&st, NULL, NULL, ln, lo, a2, h, w2, NULL, N2, 0.2, 0.01, 0.0);
    double mean_rows = 0.0;
    for (int b = 0; b < B2; b++) {
        PwPolicyStats sr;
        size_t o = (size_t)b * T2;
        pw_policy_loss(&sr, NULL, NULL, ln + o, lo + o, a2 + o, h + o, m2 + o, NULL, T2, 0.2, 0.01, 0.0);
        mean_rows += sr.loss / B2;
    }
    /* the weights 1/9 and 1/5 are rounded to float: about 1e-8 relative */
    CHECK_CLOSE(st.loss, mean_rows, 1e-7);
}

static double kl_loss_at(const float *ln, const float *lr, const float *w, int n, PwKlEstimator e)
{
    PwKlLossStats st;
    pw_kl_loss(&st, NULL, ln, lr, w, n, e, 0.1, 0.0);
    return st.loss;
}

/* Hand values: logp_new = -1, logp_ref = -1.5, d = 0.5, coef 0.1, one token of weight 1:
 *   k1 0.5 (grad 1), k2 0.125 (grad 0.5), k3 e^-0.5 - 1 + 0.5 = 0.1065306597 (grad 1 - e^-0.5 =
 *   0.3934693403), abs 0.5 (grad 1); then central differences on random weighted tokens. */
static void test_kl_loss(void)
{
    const float ln1[2] = {-1.0f, 7.0f}, lr1[2] = {-1.5f, -9.0f}, w1[2] = {1.0f, 0.0f};
    const double k[4] = {0.5, 0.125, exp(-0.5) - 0.5, 0.5};
    const double gk[4] = {1.0, 0.5, 1.0 - exp(-0.5), 1.0};
    for (int e = 0; e < 4; e++) {
        PwKlLossStats st;
        float g[2];
        pw_kl_loss(&st, g, ln1, lr1, w1, 2, (PwKlEstimator)e, 0.1, 0.0);
        CHECK_CLOSE(st.loss, 0.1 * k[e], 1e-12);
        CHECK_CLOSE(st.kl_mean, k[e], 1e-12);
        CHECK_CLOSE(g[0], 0.1 * gk[e], 1e-7);
        CHECK(g[1] == 0.0f && st.count == 1.0, "padding: g %g count %g", g[1], st.count);
    }

    enum { B = 3, T = 8, N = B * T };
    const int len[B] = {8, 3, 6};
    unsigned long long seed = 12;
    float m[N], w[N], ln[N], lr[N], g[N];
    algo_test_mask(m, len, B, T);
    pw_loss_weights(w, m, B, T, PW_AGG_SEQUENCE);
    algo_test_normal(lr, N, -2.0, 1.0, &seed);
    algo_test_normal(ln, N, 0.0, 0.5, &seed);
    for (int i = 0; i < N; i++) ln[i] += lr[i];
    const double h = 1e-3;
    for (int e = 0; e < 3; e++) { /* abs has a kink at 0; its slope is the hand case above */
        PwKlLossStats st;
        pw_kl_loss(&st, g, ln, lr, w, N, (PwKlEstimator)e, 0.1, 0.0);
        double errmax = 0.0, gmax = 0.0;
        for (int i = 0; i < N; i++) {
            if (m[i] == 0.0f) {
                CHECK(g[i] == 0.0f, "padding gradient");
                continue;
            }
            float x = ln[i], xp = (float)(x + h), xm = (float)(x - h);
            ln[i] = xp;
            double lp = kl_loss_at(ln, lr, w, N, (PwKlEstimator)e);
            ln[i] = xm;
            double lm = kl_loss_at(ln, lr, w, N, (PwKlEstimator)e);
            ln[i] = x;
            errmax = fmax(errmax, fabs((lp - lm) / ((double)xp - (double)xm) - g[i]));
            gmax = fmax(gmax, fabs(g[i]));
        }
        CHECK(errmax <= 1e-4 * gmax, "%s: max err %g of %g", pw_kl_estimator_name(e), errmax,
              gmax);
    }
}

int main(void)
{
    test_advantages();
    test_names();
    test_aggregation();
    test_kl_loss();
    return pw_test_done("group");
}
