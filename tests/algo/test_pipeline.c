/* test_pipeline.c: one PPO step's math end to end on a tiny batch, in the order the roles call
 * it, with the exact checks at the seams (docs/algorithm.md, Checks that catch real bugs). */
#include "algo_test.h"

enum { B = 3, T = 6, K = 3, STOP = 2 };

int main(void)
{
    /* Row 0 stops at t = 3, row 1 never stops (non-stop penalty), row 2 stops at t = 0. */
    const int tok[B * T] = {4, 5, 6, STOP, 0, 0, 7, 8, 9, 7, 8, 9, STOP, 0, 0, 0, 0, 0};
    float mask[B * T];
    int len[B], stopped[B];
    pw_response_mask(mask, len, stopped, tok, B, T, STOP);
    CHECK(len[0] == 4 && len[1] == 6 && len[2] == 1 && !stopped[1], "mask");

    /* Three reward models; UWO then the penalty on row 1. */
    const float rm[K * B] = {1.0f, 5.0f, -1.0f, 2.0f, 5.0f, -1.0f, 3.0f, 5.0f, -1.0f};
    float score[B];
    PwErr err = {{0}};
    CHECK(pw_ensemble_combine(score, NULL, rm, K, B, PW_OBJECTIVE_UWO, 0.1, &err) == 0, "%s",
          err.msg);
    pw_nonstop_penalty(score, stopped, B, -10.0);
    CHECK_CLOSE(score[0], 2.0 - 0.1 * 1.0, 1e-6);
    CHECK(score[1] == -10.0f && score[2] == -1.0f, "scores %g %g", score[1], score[2]);

    /* Right after initialisation the actor is the reference: KL is 0 for every estimator, so
     * the rewards are the scores alone, at the last real token. */
    unsigned long long seed = 29;
    float logp[B * T], kl[B * T], rew[B * T], klsum[B];
    algo_test_normal(logp, B * T, -2.0, 1.0, &seed);
    pw_kl_per_token(kl, logp, logp, mask, B, T, pw_kl_estimator_resolve(PW_KL_K3, 0));
    CHECK(pw_rewards_with_kl(rew, klsum, NULL, NULL, kl, score, mask, B, T, 0.05, &err) == 0,
          "%s", err.msg);
    for (int b = 0; b < B; b++) {
        CHECK(klsum[b] == 0.0f, "kl at init %g", klsum[b]);
        for (int t = 0; t < T; t++)
            CHECK(rew[b * T + t] == (t == len[b] - 1 ? score[b] : 0.0f), "reward %d %d", b, t);
    }

    /* A constant critic of 0: with gamma = lambda = 1 every real token's advantage is the
     * row's score, so whitening sees exactly three distinct values. */
    float v[B * T] = {0}, adv[B * T], ret[B * T];
    pw_gae(adv, ret, rew, v, mask, B, T, 1.0, 1.0);
    for (int i = 0; i < B * T; i++)
        CHECK(adv[i] == (mask[i] != 0.0f ? score[i / T] : 0.0f), "advantage %d", i);
    pw_whiten(adv, mask, B * T, 1);
    PwWhitenStats s;
    double mean, var;
    pw_whiten_partial(&s, adv, mask, B * T);
    pw_whiten_moments(&s, &mean, &var);
    CHECK_CLOSE(mean, 0.0, 1e-6);
    CHECK_CLOSE(var, 1.0, 1e-5);

    /* First minibatch of the first epoch: logp_new == logp_old. */
    float g[B * T];
    PwPolicyStats ps;
    pw_policy_loss(&ps, g, NULL, logp, logp, adv, NULL, mask, NULL, B * T, 0.2, 0.0, 0.0);
    CHECK(ps.ratio_mean == 1.0 && ps.approxkl == 0.0 && ps.clipfrac == 0.0, "on-policy stats");
    CHECK(ps.count == 11.0, "tokens %g", ps.count);
    CHECK_CLOSE(ps.pg_loss, 0.0, 1e-6); /* -mean of whitened advantages */

    /* The critic fits the returns: the loss is 0.5 * mean R^2 from V = 0. */
    PwValueStats vs;
    double want = 0.0;
    for (int i = 0; i < B * T; i++)
        if (mask[i] != 0.0f) want += 0.5 * (double)ret[i] * ret[i] / 11.0;
    pw_value_loss(&vs, NULL, v, v, ret, mask, B * T, 0.2, 0.0);
    CHECK_CLOSE(vs.loss, want, 1e-12);
    return pw_test_done("test_pipeline");
}
