/* gae.c: generalised advantage estimation and returns, one backward sweep per response.
 * gamma and lambda come from ppo.discount_factor and ppo.gae_lambda. */
#include "pw_algo.h"

void pw_gae(float *adv, float *ret, const float *rewards, const float *values, const float *mask,
            int B, int T, double gamma, double lambda)
{
    for (int b = 0; b < B; b++) {
        size_t o = (size_t)b * T;
        /* The state after the last real token is terminal: its value is 0, not whatever the
         * critic printed at the padding position. */
        double next_v = 0.0, next_a = 0.0;
        for (int t = T - 1; t >= 0; t--) {
            if (mask[o + t] == 0.0f) {
                adv[o + t] = 0.0f;
                ret[o + t] = 0.0f;
                next_v = 0.0;
                next_a = 0.0;
                continue;
            }
            double v = values[o + t];
            double delta = (double)rewards[o + t] + gamma * next_v - v;
            double a = delta + gamma * lambda * next_a;
            adv[o + t] = (float)a;
            ret[o + t] = (float)(a + v);
            next_v = v;
            next_a = a;
        }
    }
}
