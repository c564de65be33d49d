/* test_kl.c: the KL estimators on hand values and their textbook properties, the response mask
 * from sampled tokens, and the per-token rewards with their per-sequence metric sums. */
#include "algo_test.h"

/* d = logp_old - logp_ref = +-0.5; r = pi_ref/pi_old = exp(-d).
 *   d = +0.5: k1 = 0.5, abs = 0.5, k2 = 0.125, k3 = e^-0.5 - 1 + 0.5 = 0.10653065971263342
 *   d = -0.5: k1 = -0.5, abs = 0.5, k2 = 0.125, k3 = e^0.5 - 1 - 0.5 = 0.14872127070012815 */
static void test_hand_values(void)
{
    CHECK_CLOSE(pw_kl_token(PW_KL_K1, -1.0, -1.5), 0.5, 1e-15);
    CHECK_CLOSE(pw_kl_token(PW_KL_ABS, -1.0, -1.5), 0.5, 1e-15);
    CHECK_CLOSE(pw_kl_token(PW_KL_K2, -1.0, -1.5), 0.125, 1e-15);
    CHECK_CLOSE(pw_kl_token(PW_KL_K3, -1.0, -1.5), 0.10653065971263342, 1e-14);
    CHECK_CLOSE(pw_kl_token(PW_KL_K1, -1.5, -1.0), -0.5, 1e-15);
    CHECK_CLOSE(pw_kl_token(PW_KL_ABS, -1.5, -1.0), 0.5, 1e-15);
    CHECK_CLOSE(pw_kl_token(PW_KL_K2, -1.5, -1.0), 0.125, 1e-15);
    CHECK_CLOSE(pw_kl_token(PW_KL_K3, -1.5, -1.0), 0.14872127070012815, 1e-14);
    /* Actor == reference right after initialisation: every estimator is exactly 0. */
    for (int e = PW_KL_K1; e <= PW_KL_ABS; e++)
        CHECK(pw_kl_token((PwKlEstimator)e, -2.25, -2.25) == 0.0, "estimator %d", e);
}

/* k3 >= 0 always (log x <= x - 1); k2 and k3 agree to second order: k3 - k2 = -d^3/6 + O(d^4). */
static void test_properties(void)
{
    unsigned long long seed = 11;
    for (int i = 0; i < 1000; i++) {
        double lo = -3.0 + pw_test_normal(&seed), lr = -3.0 + 2.0 * pw_test_normal(&seed);
        CHECK(pw_kl_token(PW_KL_K3, lo, lr) >= 0.0, "k3 < 0 at %g %g", lo, lr);
        CHECK(pw_kl_token(PW_KL_K2, lo, lr) >= 0.0, "k2 < 0 at %g %g", lo, lr);
    }
    for (double d = 1e-1; d > 1e-5; d /= 10.0) {
        double k2 = pw_kl_token(PW_KL_K2, d, 0.0), k3 = pw_kl_token(PW_KL_K3, d, 0.0);
        /* The cubic term bounds the difference; 1e-12 absorbs rounding at the smallest d. */
        CHECK(fabs(k3 - k2) <= fabs(d * d * d) / 6.0 * 1.1 + 1e-15, "d %g k2 %g k3 %g", d, k2, k3);
        CHECK(k3 > 0.0, "k3 lost to cancellation at d = %g", d);
    }
}

static void test_names(void)
{
    PwKlEstimator e = PW_KL_K1;
    PwErr err = {{0}};
    CHECK(pw_kl_estimator_parse("k3", &e, &err) == 0 && e == PW_KL_K3, "k3");
    CHECK(pw_kl_estimator_parse("ABS", &e, &err) == 0 && e == PW_KL_ABS, "ABS");
    CHECK(pw_kl_estimator_parse("k4", &e, &err) == -1, "k4 accepted");
    CHECK(strstr(err.msg, "ppo.kl_estimator") && strstr(err.msg, "k1, k2, k3, abs"), "%s", err.msg);
    CHECK(pw_kl_estimator_parse(NULL, &e, &err) == -1, "NULL accepted");
    CHECK(strcmp(pw_kl_estimator_name(PW_KL_K2), "k2") == 0, "name");
    CHECK(pw_kl_estimator_resolve(PW_KL_K3, 1) == PW_KL_ABS, "use_absolute_kl");
    CHECK(pw_kl_estimator_resolve(PW_KL_K3, 0) == PW_KL_K3, "use_absolute_kl off");
}

/* Stop token 2: row 0 stops at t = 1 (the stop token is real), row 1 never stops, row 2 stops
 * at t = 0, and only the first stop token counts. */
static void test_mask(void)
{
    const int tok[3 * 4] = {5, 2, 7, 2, 5, 6, 7, 8, 2, 9, 2, 9};
    float m[12];
    int len[3], stopped[3];
    pw_response_mask(m, len, stopped, tok, 3, 4, 2);
    const float wm[12] = {1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0};
    CHECK(memcmp(m, wm, sizeof m) == 0, "mask");
    CHECK(len[0] == 2 && len[1] == 4 && len[2] == 1, "lengths %d %d %d", len[0], len[1], len[2]);
    CHECK(stopped[0] == 1 && stopped[1] == 0 && stopped[2] == 1, "stopped");
}

/* Two rows, beta = 0.1, k1 values; the score goes to the last real token only.
 *   row 0: kl = [0.5, -0.2, 1.0], len 3, score 2   -> r = [-0.05, 0.02, -0.1 + 2 = 1.9]
 *          kl_sum = 1.3, non_score = -0.13, rlhf = 1.87
 *   row 1: kl = [0.4, (9), (9)], len 1, score -1   -> r = [-0.04 - 1 = -1.04, 0, 0]
 *          kl_sum = 0.4, non_score = -0.04, rlhf = -1.04 */
static void test_rewards(void)
{
    const float kl[6] = {0.5f, -0.2f, 1.0f, 0.4f, 9.0f, 9.0f}, score[2] = {2.0f, -1.0f};
    const int len[2] = {3, 1};
    float m[6], r[6], ks[2], ns[2], rl[2];
    algo_test_mask(m, len, 2, 3);
    PwErr err = {{0}};
    CHECK(pw_rewards_with_kl(r, ks, ns, rl, kl, score, m, 2, 3, 0.1, &err) == 0, "%s", err.msg);
    const double wr[6] = {-0.05, 0.02, 1.9, -1.04, 0, 0};
    for (int i = 0; i < 6; i++) CHECK_CLOSE(r[i], wr[i], 1e-6);
    CHECK_CLOSE(ks[0], 1.3, 1e-6);
    CHECK_CLOSE(ns[0], -0.13, 1e-6);
    CHECK_CLOSE(rl[0], 1.87, 1e-6);
    CHECK_CLOSE(ks[1], 0.4, 1e-6);
    CHECK_CLOSE(ns[1], -0.04, 1e-6);
    CHECK_CLOSE(rl[1], -1.04, 1e-6);
    /* The metric outputs are optional. */
    CHECK(pw_rewards_with_kl(r, NULL, NULL, NULL, kl, score, m, 2, 3, 0.1, &err) == 0, "NULLs");
    /* An all-padding row has nowhere to put its score: refuse rather than drop it. */
    const int len0[2] = {3, 0};
    algo_test_mask(m, len0, 2, 3);
    CHECK(pw_rewards_with_kl(r, ks, ns, rl, kl, score, m, 2, 3, 0.1, &err) == -1, "empty row");
    CHECK(strstr(err.msg, "response 1") != NULL, "%s", err.msg);
}

/* kl per token honours the mask and the estimator. */
static void test_per_token(void)
{
    const float lo[4] = {-1.0f, -1.5f, -0.3f, -0.3f}, lr[4] = {-1.5f, -1.0f, -0.1f, -4.0f};
    const int len[1] = {3};
    float m[4], kl[4];
    algo_test_mask(m, len, 1, 4);
    pw_kl_per_token(kl, lo, lr, m, 1, 4, PW_KL_K3);
    for (int t = 0; t < 3; t++) CHECK_CLOSE(kl[t], pw_kl_token(PW_KL_K3, lo[t], lr[t]), 1e-6);
    CHECK(kl[3] == 0.0f, "padding kl %g", kl[3]);
}

int main(void)
{
    test_hand_values();
    test_properties();
    test_names();
    test_mask();
    test_rewards();
    test_per_token();
    return pw_test_done("test_kl");
}
