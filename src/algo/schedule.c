/* schedule.c: learning rate per optimizer step: linear warm-up, then constant, linear or cosine
 * decay to a floor, following the Hugging Face schedulers TRL and OpenRLHF users know. */
#include <math.h>

#include "pw_algo.h"

const char *const pw_lr_decay_names[] = {"constant", "linear", "cosine", NULL};
/* the names without the NULL that ends the list */
#define NDECAY ((int)PW_ARRAY_LEN(pw_lr_decay_names) - 1)

int pw_lr_decay_parse(const char *name, PwLrDecay *out, PwErr *err)
{
    int i = pw_name_lookup("optim.decay", name, pw_lr_decay_names, NDECAY, err);
    if (i < 0) return -1;
    *out = (PwLrDecay)i;
    return 0;
}

const char *pw_lr_decay_name(PwLrDecay v)
{
    return pw_name_of(pw_lr_decay_names, NDECAY, (int)v);
}

int pw_lr_schedule_check(const PwLrSchedule *s, PwErr *err)
{
    if (s->decay != PW_LR_CONSTANT && s->decay != PW_LR_LINEAR && s->decay != PW_LR_COSINE)
        return pw_errf(err, "lr schedule: unknown decay %d", (int)s->decay);
    if (s->warmup_steps < 0 || s->total_steps < 0)
        return pw_errf(err, "lr schedule: negative steps (warm-up %ld, total %ld)",
                       s->warmup_steps, s->total_steps);
    if (s->warmup_steps > s->total_steps)
        return pw_errf(err, "lr schedule: warm-up (%ld steps) is longer than the run (%ld)",
                       s->warmup_steps, s->total_steps);
    if (!(s->lr >= 0.0)) return pw_errf(err, "lr schedule: lr must be >= 0, got %g", s->lr);
    if (!(s->min_lr >= 0.0 && s->min_lr <= s->lr))
        return pw_errf(err, "lr schedule: min_lr %g must lie in [0, lr = %g]", s->min_lr, s->lr);
    return 0;
}

double pw_lr_at(const PwLrSchedule *s, long step)
{
    if (step < 0) step = 0;
    long W = s->warmup_steps;
    if (step < W) return s->lr * (double)step / (double)W;
    if (s->decay == PW_LR_CONSTANT) return s->lr;
    long span = s->total_steps - W;
    /* A run with no decay steps left simply sits at the floor. */
    double p = span > 0 ? (double)(step - W) / (double)span : 1.0;
    if (p > 1.0) p = 1.0;
    double f = s->decay == PW_LR_LINEAR ? 1.0 - p : 0.5 * (1.0 + cos(M_PI * p));
    return s->min_lr + (s->lr - s->min_lr) * f;
}
