/* optim.c: the optimizer step shared by the two trained roles (actor, critic): learning-rate
 * schedule, gradient sum over the ranks of the role, global-norm clipping and AdamW. */
#include "pw_algo.h"
#include "pw_collective.h"
#include "roles.h"

double pw_roles_lr(const PwSettings *s, double lr, double min_lr, int64_t step)
{
    PwLrSchedule sc = {(PwLrDecay)s->decay, lr, min_lr, (long)s->warmup,
                       (long)(s->steps * s->epochs * s->minibatches)};
    return pw_lr_at(&sc, (long)step);
}

void pw_roles_optimizer_step(PwRun *r, PwRole role, PwModel *m, double lr, int64_t t)
{
    PwErr err;
    /* The losses are divided by the minibatch's GLOBAL token count, so the sum over ranks is the
     * gradient of the whole minibatch; every rank then takes the same step on the same sum. */
    if (r->w.map.role[role].nranks > 1) {
        PwTensor g = pw_model_grads(m);
        if (pw_allreduce(&r->w, role, &g, PW_REDUCE_SUM, &err))
            pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    }
    PwAdamWConfig ac = {(float)lr, (float)r->s.beta1, (float)r->s.beta2, (float)r->s.eps,
                        (float)r->s.weight_decay, (float)r->s.grad_clip};
    int rc = pw_model_adamw_step(m, &ac, (int)t, NULL, &err);
    if (rc < 0) pw_comm_fatal(__FILE__, __LINE__, "%s: %s", pw_role_name(role), err.msg);
    if (rc == PW_ADAMW_SKIPPED)
        pw_comm_fatal(__FILE__, __LINE__, "%s: the gradient is not finite", pw_role_name(role));
}

double pw_minibatch_tokens(PwRun *r, PwRole role, const PwRows *rows, PwBlock blk)
{
    double tok = 0.0;
    for (int64_t i = blk.start * rows->R; i < (blk.start + blk.count) * rows->R; i++)
        tok += rows->rmask[i];
    pw_roles_allreduce_f64(r, role, &tok, 1);
    return tok > 0 ? tok : 1.0;
}
