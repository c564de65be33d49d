/* ensemble.c: turning K reward-model scores into one score per sequence (mean / WCO / UWO,
 * Coste et al.), and the non-stop penalty and clipping applied to the final score. */
#include <math.h>

#include "pw_algo.h"

const char *const pw_reward_objective_names[] = {"mean", "wco", "uwo", NULL};
/* the names without the NULL that ends the list */
#define NOBJ ((int)PW_ARRAY_LEN(pw_reward_objective_names) - 1)

int pw_reward_objective_parse(const char *name, PwRewardObjective *out, PwErr *err)
{
    int i = pw_name_lookup("reward.objective", name, pw_reward_objective_names, NOBJ, err);
    if (i < 0) return -1;
    *out = (PwRewardObjective)i;
    return 0;
}

const char *pw_reward_objective_name(PwRewardObjective v)
{
    return pw_name_of(pw_reward_objective_names, NOBJ, (int)v);
}

int pw_ensemble_combine(float *score, float *var, const float *scores, int K, int B,
                        PwRewardObjective obj, double uwo_weight, PwErr *err)
{
    if (K < 1) return pw_errf(err, "reward ensemble: need at least one model, got K = %d", K);
    if (obj != PW_OBJECTIVE_MEAN && obj != PW_OBJECTIVE_WCO && obj != PW_OBJECTIVE_UWO)
        return pw_errf(err, "reward ensemble: unknown objective %d", (int)obj);
    for (int b = 0; b < B; b++) {
        double mean = 0.0, mn = INFINITY;
        for (int k = 0; k < K; k++) {
            double s = scores[(size_t)k * B + b];
            mean += s;
            if (s < mn) mn = s;
        }
        mean /= K;
        /* Two passes: K is small and the centred sum avoids cancellation when the members
         * agree closely, which is exactly when the variance matters for UWO's ranking. */
        double m2 = 0.0;
        for (int k = 0; k < K; k++) {
            double d = scores[(size_t)k * B + b] - mean;
            m2 += d * d;
        }
        /* Unbiased (K-1), as torch.var in the ensemble work's PPO reward function. */
        double v = K > 1 ? m2 / (K - 1) : 0.0;
        double s = mean;
        if (obj == PW_OBJECTIVE_WCO) s = mn;
        else if (obj == PW_OBJECTIVE_UWO) s = mean - uwo_weight * v;
        score[b] = (float)s;
        if (var) var[b] = (float)v;
    }
    return 0;
}

void pw_nonstop_penalty(float *score, const int *stopped, int B, double penalty_reward_value)
{
    for (int b = 0; b < B; b++)
        if (!stopped[b]) score[b] = (float)penalty_reward_value;
}

void pw_reward_clip(float *score, int B, double clip)
{
    if (!(clip > 0.0)) return;
    for (int b = 0; b < B; b++) {
        if (score[b] > clip) score[b] = (float)clip;
        else if (score[b] < -clip) score[b] = (float)-clip;
    }
}
