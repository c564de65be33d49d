/* kl_control.c: the KL-penalty coefficient beta, fixed or adapted towards a target KL with the
 * proportional controller of Ziegler et al. (2019). */
#include "pw_algo.h"

void pw_kl_controller_fixed(PwKlController *c, double beta)
{
    c->adaptive = 0;
    c->beta = beta;
    c->target = 0.0;
    c->horizon = 0.0;
}

int pw_kl_controller_adaptive(PwKlController *c, double beta, double target, double horizon,
                              PwErr *err)
{
    if (!(target > 0.0)) return pw_errf(err, "ppo.target_kl must be > 0, got %g", target);
    if (!(horizon > 0.0)) return pw_errf(err, "ppo.kl_horizon must be > 0, got %g", horizon);
    if (!(beta >= 0.0))
        return pw_errf(err, "ppo.initial_policy_kl_penalty must be >= 0, got %g", beta);
    c->adaptive = 1;
    c->beta = beta;
    c->target = target;
    c->horizon = horizon;
    return 0;
}

double pw_kl_controller_update(PwKlController *c, double current_kl, double n_steps)
{
    if (!c->adaptive) return c->beta;
    double e = current_kl / c->target - 1.0;
    /* The +-20% clamp bounds the change per batch, so one outlier batch cannot blow beta up. */
    if (e < -0.2) e = -0.2;
    if (e > 0.2) e = 0.2;
    c->beta *= 1.0 + e * n_steps / c->horizon;
    return c->beta;
}
