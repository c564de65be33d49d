/* off_policy.c: importance weights for tokens sampled by the generator's (older) weights while
 * the ratio of the clipped loss is taken against the actor's recomputed log-probs
 * (ppo.off_policy; docs/algorithm.md, Off-policy correction). */
#include <math.h>

#include "pw_algo.h"

const char *const pw_off_policy_names[] = {"none", "tis", "decoupled", NULL};

const char *pw_off_policy_name(PwOffPolicy m)
{
    return pw_name_of(pw_off_policy_names, (int)PW_ARRAY_LEN(pw_off_policy_names) - 1, (int)m);
}

void pw_off_policy_weights(float *u, PwOffPolicyStats *st, const float *logp_old,
                           const float *logp_gen, const float *mask, size_t n, PwOffPolicy mode,
                           double cap)
{
    st->weight_sum = st->capped = st->count = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (mask[i] == 0.0f) {
            u[i] = 0.0f;
            continue;
        }
        double w = 1.0;
        if (mode != PW_OFFPOL_NONE) {
            w = exp((double)logp_old[i] - (double)logp_gen[i]);
            if (mode == PW_OFFPOL_TIS && w > cap) {
                w = cap;
                st->capped += 1.0;
            } else if (mode == PW_OFFPOL_DECOUPLED && cap > 0.0 && w > cap) {
                w = 0.0;
                st->capped += 1.0;
            }
        }
        u[i] = (float)w;
        st->weight_sum += (double)u[i];
        st->count += 1.0;
    }
}
