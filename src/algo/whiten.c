/* whiten.c: advantage whitening over the real tokens of the global batch, split into local
 * partial sums (all-reduced by the runtime) and the application of the global statistics. */
#include <math.h>

#include "pw_algo.h"

/* Same epsilon as TRL's masked_whiten: keeps a constant batch finite. */
#define PW_WHITEN_EPS 1e-8

void pw_whiten_partial(PwWhitenStats *s, const float *x, const float *mask, size_t n)
{
    double sum = 0.0, sumsq = 0.0, count = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (mask[i] == 0.0f) continue;
        double v = x[i];
        sum += v;
        sumsq += v * v;
        count += 1.0;
    }
    s->sum = sum;
    s->sumsq = sumsq;
    s->count = count;
}

void pw_whiten_stats_add(PwWhitenStats *acc, const PwWhitenStats *other)
{
    acc->sum += other->sum;
    acc->sumsq += other->sumsq;
    acc->count += other->count;
}

void pw_whiten_moments(const PwWhitenStats *s, double *mean, double *var)
{
    double m = s->count > 0.0 ? s->sum / s->count : 0.0;
    double v = 0.0;
    if (s->count > 1.0) {
        /* One all-reduce of (sum, sumsq, count) instead of two passes; in double the
         * cancellation costs about eps * (mean/std)^2, negligible for advantages. */
        v = (s->sumsq - s->sum * m) / (s->count - 1.0);
        if (v < 0.0) v = 0.0;
    }
    *mean = m;
    *var = v;
}

void pw_whiten_apply(float *x, const float *mask, size_t n, const PwWhitenStats *global,
                     int shift_mean)
{
    double mean, var;
    pw_whiten_moments(global, &mean, &var);
    double inv = 1.0 / sqrt(var + PW_WHITEN_EPS);
    double back = shift_mean ? 0.0 : mean;
    for (size_t i = 0; i < n; i++)
        x[i] = mask[i] != 0.0f ? (float)(((double)x[i] - mean) * inv + back) : 0.0f;
}

void pw_whiten(float *x, const float *mask, size_t n, int shift_mean)
{
    PwWhitenStats s;
    pw_whiten_partial(&s, x, mask, n);
    pw_whiten_apply(x, mask, n, &s, shift_mean);
}
