/* score_norm.c: running mean and variance of reward scores across PPO steps, for the optional
 * score normalisation; merges a batch at a time so that a rank's batch can be folded in. */
#include <math.h>

#include "pw_algo.h"

void pw_running_moments_init(PwRunningMoments *m)
{
    m->count = 0.0;
    m->mean = 0.0;
    m->m2 = 0.0;
}

void pw_running_moments_update(PwRunningMoments *m, const float *x, int n)
{
    if (n <= 0) return;
    double bmean = 0.0, bm2 = 0.0;
    for (int i = 0; i < n; i++) bmean += x[i];
    bmean /= n;
    for (int i = 0; i < n; i++) {
        double d = x[i] - bmean;
        bm2 += d * d;
    }
    pw_running_moments_merge(m, n, bmean, bm2);
}

void pw_running_moments_merge(PwRunningMoments *m, double nb, double bmean, double bm2)
{
    if (nb <= 0) return;
    /* Chan et al.'s pairwise merge: exact for any split of the data, and stable where the
     * naive sum of squares would cancel after many steps. */
    double na = m->count, tot = na + nb;
    double delta = bmean - m->mean;
    m->m2 += bm2 + delta * delta * na * nb / tot;
    m->mean += delta * nb / tot;
    m->count = tot;
}

double pw_running_moments_var(const PwRunningMoments *m)
{
    return m->count > 1.0 ? m->m2 / (m->count - 1.0) : 0.0;
}

void pw_running_moments_normalize(const PwRunningMoments *m, float *x, int n)
{
    double sd = sqrt(pw_running_moments_var(m) + 1e-8);
    for (int i = 0; i < n; i++) x[i] = (float)((x[i] - m->mean) / sd);
}
