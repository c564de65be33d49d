/* mask.c: the response mask, lengths and stop flags from sampled tokens.
 * Everything downstream (KL sums, rewards, GAE, losses) trusts this mask, so it lives here. */
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
