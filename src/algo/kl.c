/* kl.c: per-token estimators of KL(pi_old || pi_ref) from the sampled token's log-probs.
 * The estimators are Schulman's k1/k2/k3 plus |k1|; each is evaluated in double. */
#include <math.h>

#include "pw_algo.h"

const char *const pw_kl_estimator_names[] = {"k1", "k2", "k3", "abs", NULL};
/* the names without the NULL that ends the list */
#define NKL ((int)PW_ARRAY_LEN(pw_kl_estimator_names) - 1)

int pw_kl_estimator_parse(const char *name, PwKlEstimator *out, PwErr *err)
{
    int i = pw_name_lookup("ppo.kl_estimator", name, pw_kl_estimator_names, NKL, err);
    if (i < 0) return -1;
    *out = (PwKlEstimator)i;
    return 0;
}

const char *pw_kl_estimator_name(PwKlEstimator v)
{
    return pw_name_of(pw_kl_estimator_names, NKL, (int)v);
}

PwKlEstimator pw_kl_estimator_resolve(PwKlEstimator est, int use_absolute_kl)
{
    return use_absolute_kl ? PW_KL_ABS : est;
}

double pw_kl_token(PwKlEstimator est, double logp_old, double logp_ref)
{
    double d = logp_old - logp_ref; /* log(pi_old/pi_ref) = -log r */
    switch (est) {
    case PW_KL_K1: return d;
    case PW_KL_ABS: return fabs(d);
    case PW_KL_K2: return 0.5 * d * d;
    case PW_KL_K3:
        /* (r - 1) - log r with r = exp(-d). expm1 keeps it accurate (and >= 0) when d is tiny,
         * where exp(-d) - 1 would lose every digit to cancellation. */
        return expm1(-d) + d;
    }
    return d;
}

void pw_kl_per_token(float *kl, const float *logp_old, const float *logp_ref, const float *mask,
                     int B, int T, PwKlEstimator est)
{
    size_t n = (size_t)B * T;
    for (size_t i = 0; i < n; i++)
        kl[i] = mask[i] != 0.0f ? (float)pw_kl_token(est, logp_old[i], logp_ref[i]) : 0.0f;
}
