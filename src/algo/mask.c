/* mask.c: the response mask, lengths and stop flags from sampled tokens, and the token weights'
 * normaliser of the losses. Everything downstream (KL sums, rewards, GAE, losses) trusts this mask. */
#include "pw_algo.h"

void pw_response_mask(float *mask, int *lengths, int *stopped, const int *tokens, int B, int T,
                      int stop_token_id)
{
    for (int b = 0; b < B; b++) {
        const int *row = tokens + (size_t)b * T;
        float *m = mask + (size_t)b * T;
        /* The stop token itself is a real token: its log-prob is part of the policy's choice
         * and the score is attached to it. */
        int len = T, stop = 0;
        for (int t = 0; t < T; t++) {
            if (row[t] == stop_token_id) {
                len = t + 1;
                stop = 1;
                break;
            }
        }
        for (int t = 0; t < T; t++) m[t] = t < len ? 1.0f : 0.0f;
        if (lengths) lengths[b] = len;
        if (stopped) stopped[b] = stop;
    }
}

double pw_loss_inv_normaliser(const float *w, size_t n, double normaliser, double *count)
{
    double c = 0.0, sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        c += w[i] != 0.0f;
        sum += w[i];
    }
    *count = c;
    double N = normaliser > 0.0 ? normaliser : sum;
    return N > 0.0 ? 1.0 / N : 0.0;
}
