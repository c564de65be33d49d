/* policy_loss.c: the clipped PPO surrogate with entropy bonus, its per-token gradients (which
 * drive the actor's backward pass) and the minibatch statistics open-instruct logs. */
#include <math.h>

#include "pw_algo.h"

void pw_policy_loss(PwPolicyStats *st, float *dlogp_new, float *dentropy, const float *logp_new,
                    const float *logp_old, const float *adv, const float *entropy,
                    const float *mask, const float *iw, size_t n, double ratio_eps,
                    double entropy_bonus, double normaliser)
{
    /* A token's mask value is its weight (1 for a 0/1 mask, where every product below by it is
     * exact, so this is the plain masked mean bit for bit). */
    double count, invN = pw_loss_inv_normaliser(mask, n, normaliser, &count);
    double lo = 1.0 - ratio_eps, hi = 1.0 + ratio_eps;

    double pg = 0.0, ent = 0.0, went = 0.0, akl = 0.0, clipped = 0.0, rsum = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (mask[i] == 0.0f) {
            if (dlogp_new) dlogp_new[i] = 0.0f;
            if (dentropy) dentropy[i] = 0.0f;
            continue;
        }
        double d = (double)logp_new[i] - (double)logp_old[i];
        double ratio = exp(d);
        double a = adv[i], w = mask[i], u = iw ? iw[i] : 1.0;
        /* The clipped term is strictly the smaller one exactly when the ratio has left the
         * trust region in the direction the advantage pushes it; there the gradient is 0.
         * Deciding by this test rather than by comparing the two products keeps ties (ratio on
         * the boundary, A == 0) on the unclipped side, where the gradient is continuous. */
        int clip = (a > 0.0 && ratio > hi) || (a < 0.0 && ratio < lo);
        double r_used = clip ? (a > 0.0 ? hi : lo) : ratio;
        pg -= w * u * (r_used * a);
        clipped += clip;
        akl += 0.5 * d * d;
        rsum += ratio;
        if (dlogp_new) dlogp_new[i] = clip ? 0.0f : (float)(-ratio * a * w * u * invN);
        if (entropy) {
            ent += entropy[i];
            went += w * entropy[i];
        }
        if (dentropy) dentropy[i] = entropy ? (float)(-entropy_bonus * w * invN) : 0.0f;
    }
    double invc = count > 0.0 ? 1.0 / count : 0.0;
    st->pg_loss = pg * invN;
    st->entropy_loss = entropy ? -entropy_bonus * went * invN : 0.0;
    st->loss = st->pg_loss + st->entropy_loss;
    st->approxkl = akl * invc;
    st->clipfrac = clipped * invc;
    st->ratio_mean = rsum * invc;
    st->entropy_mean = ent * invc;
    st->count = count;
}
