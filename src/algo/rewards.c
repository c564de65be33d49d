/* rewards.c: per-token rewards = KL penalty on every real token + the sequence score at the
 * last real token, and the per-sequence sums the metrics report. */
#include "pw_algo.h"

int pw_rewards_with_kl(float *rewards, float *kl_sum, float *non_score, float *rlhf,
                       const float *kl, const float *scores, const float *mask, int B, int T,
                       double beta, PwErr *err)
{
    for (int b = 0; b < B; b++) {
        const float *k = kl + (size_t)b * T;
        const float *m = mask + (size_t)b * T;
        float *r = rewards + (size_t)b * T;
        double sum = 0.0;
        int last = -1;
        for (int t = 0; t < T; t++) {
            if (m[t] != 0.0f) {
                r[t] = (float)(-beta * (double)k[t]);
                sum += k[t];
                last = t;
            } else {
                r[t] = 0.0f;
            }
        }
        if (last < 0)
            return pw_errf(err, "rewards: response %d of %d has no real token, so its score "
                                "has no token to go to", b, B);
        /* Added in double then rounded once, so the score is not perturbed twice. */
        r[last] = (float)(-beta * (double)k[last] + (double)scores[b]);
        if (kl_sum) kl_sum[b] = (float)sum;
        if (non_score) non_score[b] = (float)(-beta * sum);
        if (rlhf) rlhf[b] = (float)((double)scores[b] - beta * sum);
    }
    return 0;
}
