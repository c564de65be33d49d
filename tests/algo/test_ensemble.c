/* test_ensemble.c: reward-ensemble objectives (mean / WCO / UWO) on hand values, the non-stop
 * penalty, score clipping and the running score moments. */
#include "algo_test.h"

/* K = 3 models, B = 2 sequences, scores laid out (K,B):
 *   seq 0: 1, 2, 4  mean 7/3, min 1, deviations -4/3 -1/3 5/3, squares sum 42/9,
 *          unbiased var 42/9 / 2 = 7/3; UWO (w = 0.5) = 7/3 - 7/6 = 7/6
 *   seq 1: 0, 0, 3  mean 1, min 0, squares sum 1 + 1 + 4 = 6, var 3; UWO = 1 - 1.5 = -0.5 */
static void test_objectives(void)
{
    const float s[3 * 2] = {1, 0, 2, 0, 4, 3};
    float out[2], var[2];
    PwErr err = {{0}};
    CHECK(pw_ensemble_combine(out, var, s, 3, 2, PW_OBJECTIVE_MEAN, 0.5, &err) == 0, "%s", err.msg);
    CHECK_CLOSE(out[0], 7.0 / 3.0, 1e-6);
    CHECK_CLOSE(out[1], 1.0, 1e-6);
    CHECK_CLOSE(var[0], 7.0 / 3.0, 1e-6);
    CHECK_CLOSE(var[1], 3.0, 1e-6);
    CHECK(pw_ensemble_combine(out, NULL, s, 3, 2, PW_OBJECTIVE_WCO, 0.5, &err) == 0, "%s", err.msg);
    CHECK(out[0] == 1.0f && out[1] == 0.0f, "wco %g %g", out[0], out[1]);
    CHECK(pw_ensemble_combine(out, NULL, s, 3, 2, PW_OBJECTIVE_UWO, 0.5, &err) == 0, "%s", err.msg);
    CHECK_CLOSE(out[0], 7.0 / 6.0, 1e-6);
    CHECK_CLOSE(out[1], -0.5, 1e-6);

    /* One model: every objective is that model's score, and the variance is 0 (not NaN). */
    for (int o = PW_OBJECTIVE_MEAN; o <= PW_OBJECTIVE_UWO; o++) {
        CHECK(pw_ensemble_combine(out, var, s, 1, 2, (PwRewardObjective)o, 0.5, &err) == 0, "K=1");
        CHECK(out[0] == 1.0f && out[1] == 0.0f && var[0] == 0.0f, "K=1 objective %d", o);
    }
    CHECK(pw_ensemble_combine(out, var, s, 0, 2, PW_OBJECTIVE_MEAN, 0.5, &err) == -1, "K=0");
    CHECK(strstr(err.msg, "K = 0") != NULL, "%s", err.msg);
}

static void test_names(void)
{
    PwRewardObjective o = PW_OBJECTIVE_MEAN;
    PwErr err = {{0}};
    CHECK(pw_reward_objective_parse("UWO", &o, &err) == 0 && o == PW_OBJECTIVE_UWO, "UWO");
    CHECK(pw_reward_objective_parse("wco", &o, &err) == 0 && o == PW_OBJECTIVE_WCO, "wco");
    CHECK(pw_reward_objective_parse("Mean", &o, &err) == 0 && o == PW_OBJECTIVE_MEAN, "Mean");
    CHECK(pw_reward_objective_parse("median", &o, &err) == -1, "median accepted");
    CHECK(strstr(err.msg, "reward.objective") && strstr(err.msg, "mean, wco, uwo"), "%s", err.msg);
    CHECK(strcmp(pw_reward_objective_name(PW_OBJECTIVE_WCO), "wco") == 0, "name");
    CHECK(strcmp(pw_reward_objective_name((PwRewardObjective)7), "?") == 0, "bad name");
}

/* Sequences 1 and 3 hit max_new_tokens without the stop token: penalty -10 replaces the score
 * (whatever the model said); then clipping to +-5 affects only what lies outside. */
static void test_penalty_and_clip(void)
{
    float s[4] = {2.5f, 3.0f, -7.0f, 8.0f};
    const int stopped[4] = {1, 0, 1, 0};
    pw_nonstop_penalty(s, stopped, 4, -10.0);
    CHECK(s[0] == 2.5f && s[1] == -10.0f && s[2] == -7.0f && s[3] == -10.0f, "penalty");
    pw_reward_clip(s, 4, 5.0);
    CHECK(s[0] == 2.5f && s[1] == -5.0f && s[2] == -5.0f && s[3] == -5.0f, "clip");
    float t[2] = {100.0f, -100.0f};
    pw_reward_clip(t, 2, 0.0);
    CHECK(t[0] == 100.0f && t[1] == -100.0f, "clip 0 must be off");
}

/* Running moments fed in two batches equal the moments of all the values at once. */
static void test_running_moments(void)
{
    unsigned long long seed = 21;
    float x[40];
    algo_test_normal(x, 40, 3.0, 2.0, &seed);
    PwRunningMoments m;
    pw_running_moments_init(&m);
    CHECK(pw_running_moments_var(&m) == 0.0, "empty var");
    pw_running_moments_update(&m, x, 15);
    pw_running_moments_update(&m, x + 15, 25);
    double mean = 0.0, q = 0.0;
    for (int i = 0; i < 40; i++) mean += x[i] / 40.0;
    for (int i = 0; i < 40; i++) q += (x[i] - mean) * (x[i] - mean);
    CHECK(m.count == 40.0, "count %g", m.count);
    CHECK_CLOSE(m.mean, mean, 1e-12);
    CHECK_CLOSE(pw_running_moments_var(&m), q / 39.0, 1e-12);
    pw_running_moments_normalize(&m, x, 40);
    double nm = 0.0, nq = 0.0;
    for (int i = 0; i < 40; i++) nm += x[i] / 40.0;
    for (int i = 0; i < 40; i++) nq += (x[i] - nm) * (x[i] - nm) / 39.0;
    CHECK_CLOSE(nm, 0.0, 1e-6);
    CHECK_CLOSE(nq, 1.0, 1e-6);
}

int main(void)
{
    test_objectives();
    test_names();
    test_penalty_and_clip();
    test_running_moments();
    return pw_test_done("test_ensemble");
}
