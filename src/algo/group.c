/* group.c: the critic-free algorithms' math: which algorithm needs a critic, group-relative
 * advantages (GRPO, with Dr. GRPO's unscaled variant, and RLOO's leave-one-out baseline) from
 * the scores of n responses per prompt, their spreading over a response's tokens, the per-token
 * loss weights of each loss aggregation, and the KL penalty as a loss term. docs/algorithm.md,
 * "Critic-free algorithms", gives every formula. */
#include <math.h>

#include "pw_algo.h"

const char *const pw_algorithm_names[] = {"ppo", "grpo", "rloo", NULL};
#define NALG ((int)PW_ARRAY_LEN(pw_algorithm_names) - 1)

int pw_algorithm_parse(const char *name, PwAlgorithm *out, PwErr *err)
{
    int i = pw_name_lookup("algorithm", name, pw_algorithm_names, NALG, err);
    if (i < 0) return -1;
    *out = (PwAlgorithm)i;
    return 0;
}

const char *pw_algorithm_name(PwAlgorithm a) { return pw_name_of(pw_algorithm_names, NALG, (int)a); }

int pw_algorithm_needs_critic(PwAlgorithm a) { return a == PW_ALGO_PPO; }

const char *const pw_loss_agg_names[] = {"token", "sequence", NULL};
#define NAGG ((int)PW_ARRAY_LEN(pw_loss_agg_names) - 1)

int pw_loss_agg_parse(const char *name, PwLossAgg *out, PwErr *err)
{
    int i = pw_name_lookup("ppo.loss_aggregation", name, pw_loss_agg_names, NAGG, err);
    if (i < 0) return -1;
    *out = (PwLossAgg)i;
    return 0;
}

const char *pw_loss_agg_name(PwLossAgg a) { return pw_name_of(pw_loss_agg_names, NAGG, (int)a); }

/* A group's mean and unbiased standard deviation (0 for n < 2). */
static void group_moments(const float *r, int n, double *mean, double *std)
{
    double sum = 0.0, ss = 0.0;
    for (int i = 0; i < n; i++) sum += r[i];
    *mean = sum / n;
    for (int i = 0; i < n; i++) ss += (r[i] - *mean) * (r[i] - *mean);
    *std = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
}

int pw_group_advantages(float *adv, const float *scores, int n_groups, int n, PwAlgorithm alg,
                        int scale_by_std, double eps, PwErr *err)
{
    if (alg != PW_ALGO_GRPO && alg != PW_ALGO_RLOO) {
        pw_errf(err, "group advantages: algorithm '%s' has no group baseline",
                pw_algorithm_name(alg));
        return -1;
    }
    if (n < 2) {
        pw_errf(err, "generation.samples_per_prompt: %s needs at least 2 responses per prompt "
                     "for a group baseline, got %d", pw_algorithm_name(alg), n);
        return -1;
    }
    if (n_groups < 0 || eps < 0.0 || !isfinite(eps)) {
        pw_errf(err, "group advantages: %d groups, eps %g", n_groups, eps);
        return -1;
    }
    for (int g = 0; g < n_groups; g++) {
        const float *r = scores + (size_t)g * n;
        float *a = adv + (size_t)g * n;
        double sum = 0.0;
        for (int i = 0; i < n; i++) sum += r[i];
        if (alg == PW_ALGO_RLOO) {
            /* baseline of response i: the mean of the other n - 1 scores */
            for (int i = 0; i < n; i++) a[i] = (float)(r[i] - (sum - r[i]) / (n - 1));
            continue;
        }
        double mean, std; /* unbiased std, as torch.std */
        group_moments(r, n, &mean, &std);
        double inv = scale_by_std ? 1.0 / (std + eps) : 1.0;
        for (int i = 0; i < n; i++) a[i] = (float)((r[i] - mean) * inv);
    }
    return 0;
}

void pw_group_stats(const float *scores, int n_groups, int n, double *equal_frac,
                    double *std_mean)
{
    double equal = 0.0, stds = 0.0;
    for (int g = 0; g < n_groups; g++) {
        const float *r = scores + (size_t)g * n;
        int same = 1;
        for (int i = 1; i < n; i++) same &= r[i] == r[0];
        double m, s;
        group_moments(r, n, &m, &s);
        equal += same;
        stds += s;
    }
    *equal_frac = n_groups > 0 ? equal / n_groups : 0.0;
    *std_mean = n_groups > 0 ? stds / n_groups : 0.0;
}

void pw_sequence_to_tokens(float *adv_tok, const float *adv_seq, const float *mask, int B, int T)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)b * T + t;
            adv_tok[i] = mask[i] != 0.0f ? adv_seq[b] : 0.0f;
        }
}

void pw_loss_weights(float *w, const float *mask, int B, int T, PwLossAgg agg)
{
    for (int b = 0; b < B; b++) {
        const float *m = mask + (size_t)b * T;
        float *wb = w + (size_t)b * T;
        int len = 0;
        for (int t = 0; t < T; t++) len += m[t] != 0.0f;
        float v = agg == PW_AGG_SEQUENCE ? (len ? (float)(1.0 / len) : 0.0f) : 1.0f;
        for (int t = 0; t < T; t++) wb[t] = m[t] != 0.0f ? v : 0.0f;
    }
}

void pw_kl_loss(PwKlLossStats *st, float *dlogp_new, const float *logp_new, const float *logp_ref,
                const float *weight, size_t n, PwKlEstimator est, double coef, double normaliser)
{
    double count, invN = pw_loss_inv_normaliser(weight, n, normaliser, &count);
    double loss = 0.0, kmean = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (weight[i] == 0.0f) {
            if (dlogp_new) dlogp_new[i] = 0.0f;
            continue;
        }
        double d = (double)logp_new[i] - (double)logp_ref[i];
        double k = pw_kl_token(est, logp_new[i], logp_ref[i]);
        /* dk/dlogp_new with d = logp_new - logp_ref: k1 1, k2 d, k3 1 - exp(-d), abs sign(d) */
        double g = est == PW_KL_K1 ? 1.0
                 : est == PW_KL_K2 ? d
                 : est == PW_KL_K3 ? -expm1(-d)
                                   : (d > 0.0) - (d < 0.0);
        loss += weight[i] * k;
        kmean += k;
        if (dlogp_new) dlogp_new[i] = (float)(coef * weight[i] * g * invN);
    }
    st->loss = coef * loss * invN;
    st->kl_mean = count > 0.0 ? kmean / count : 0.0;
    st->count = count;
}
