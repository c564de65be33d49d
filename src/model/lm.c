/* lm.c: the language-modelling loss on host arrays (SFT, tests, benchmarks): next-token targets
 * the way Hugging Face shifts labels, mean weights, and the weighted loss of gathered log-probs. */
#include "pw_model.h"

void pw_lm_next_token_targets(int *targets, const int *inp, const int *mask, int B, int T)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int i = b * T + t;
            int real = t + 1 < T && (!mask || (mask[i] && mask[i + 1]));
            targets[i] = real ? inp[i + 1] : -1;
        }
}

int pw_lm_mean_weights(float *w, const int *targets, int N)
{
    int count = 0;
    for (int i = 0; i < N; i++) count += targets[i] >= 0;
    for (int i = 0; i < N; i++) w[i] = (targets[i] >= 0 && count) ? 1.0f / count : 0.0f;
    return count;
}

double pw_lm_loss(const float *logp, const float *w, const int *targets, int N)
{
    double loss = 0.0;
    for (int i = 0; i < N; i++)
        if (targets[i] >= 0) loss -= (double)w[i] * logp[i];
    return loss;
}
