/* bt_loss.c: the Bradley-Terry pairwise loss for reward-model training, evaluated so that it
 * neither overflows nor loses precision for large score margins. */
#include <math.h>

#include "pw_algo.h"

/* log(1 + exp(x)) without overflow for large x or a rounded-away tail for very negative x. */
static double softplus(double x)
{
    return x > 0.0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static double sigmoid(double x)
{
    if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

void pw_bt_loss(PwBtStats *st, float *dchosen, float *drejected, const float *s_chosen,
                const float *s_rejected, size_t n, double normaliser)
{
    double N = normaliser > 0.0 ? normaliser : (double)n;
    double invN = N > 0.0 ? 1.0 / N : 0.0;
    double loss = 0.0, correct = 0.0, msum = 0.0;
    for (size_t i = 0; i < n; i++) {
        double m = (double)s_chosen[i] - (double)s_rejected[i];
        /* -log sigmoid(m) = softplus(-m) */
        loss += softplus(-m);
        correct += m > 0.0;
        msum += m;
        /* d softplus(-m)/dm = -sigmoid(-m) */
        double g = sigmoid(-m) * invN;
        if (dchosen) dchosen[i] = (float)-g;
        if (drejected) drejected[i] = (float)g;
    }
    double invc = n > 0 ? 1.0 / (double)n : 0.0;
    st->loss = loss * invN;
    st->accuracy = correct * invc;
    st->margin_mean = msum * invc;
    st->count = (double)n;
}
