/* value_loss.c: the critic's clipped squared-error loss, its gradient with respect to the
 * predicted values, and the value clip fraction. c = critic.loss_clip_val. */
#include "pw_algo.h"

void pw_value_loss(PwValueStats *st, float *dvalue, const float *values, const float *values_old,
                   const float *returns, const float *mask, size_t n, double clip,
                   double normaliser)
{
    double count = 0.0;
    for (size_t i = 0; i < n; i++) count += mask[i] != 0.0f;
    double N = normaliser > 0.0 ? normaliser : count;
    double invN = N > 0.0 ? 1.0 / N : 0.0;

    double loss = 0.0, clipped = 0.0, vsum = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (mask[i] == 0.0f) {
            if (dvalue) dvalue[i] = 0.0f;
            continue;
        }
        double v = values[i], r = returns[i];
        double e1 = (v - r) * (v - r);
        double e = e1;
        int clip_wins = 0;
        if (clip > 0.0) {
            double vo = values_old[i];
            double vc = v < vo - clip ? vo - clip : (v > vo + clip ? vo + clip : v);
            double e2 = (vc - r) * (vc - r);
            /* Strictly larger only when V was clamped; the clamped value does not depend on V,
             * so that branch carries no gradient. */
            if (e2 > e1) {
                e = e2;
                clip_wins = 1;
            }
        }
        loss += 0.5 * e;
        clipped += clip_wins;
        vsum += v;
        if (dvalue) dvalue[i] = clip_wins ? 0.0f : (float)((v - r) * invN);
    }
    double invc = count > 0.0 ? 1.0 / count : 0.0;
    st->loss = loss * invN;
    st->clipfrac = clipped * invc;
    st->value_mean = vsum * invc;
    st->count = count;
}
