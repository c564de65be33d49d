/* optim.c: the optimizer step shared by the two trained roles (actor, critic): learning-rate
 * schedule, gradient sum over the ranks of the role, global-norm clipping and AdamW, and what
 * a NaN or infinite loss, gradient or weight does to the run (runtime.on_nonfinite). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "pw_algo.h"
#include "pw_collective.h"
#include "roles.h"
#include "shard.h"

double pw_roles_lr(const PwSettings *s, double lr, double min_lr, int64_t step)
{
    PwLrSchedule sc = {(PwLrDecay)s->decay, lr, min_lr, (long)s->warmup,
                       (long)(s->steps * s->epochs * s->minibatches)};
    return pw_lr_at(&sc, (long)step);
}

/* The rollout statistics of this step that are not finite, for the actor's message: a NaN loss
 * is usually their doing (a reward of -1e308 is -inf in float, and whitening turns it into NaN).
 * They are sums over the actor role, so every actor rank writes the same text. */
static void rollout_causes(const PwRun *r, PwRole role, char *buf, size_t n)
{
    static const struct {
        int st;
        const char *name;
    } stats[] = {{PW_ST_SCORE, "objective/scores"}, {PW_ST_KL, "objective/kl"},
                 {PW_ST_RLHF, "objective/rlhf_reward"}, {PW_ST_ENTROPY, "objective/entropy"}};
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; role == PW_ROLE_ACTOR && i < PW_ARRAY_LEN(stats) && k < n; i++) {
        double v = r->stats[stats[i].st];
        if (!isfinite(v))
            k += (size_t)snprintf(buf + k, n - k, "; this step's %s is %s", stats[i].name,
                                  isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
    }
}

/* A NaN or infinite loss or gradient norm: stop, or count a skipped update (returns 1). Every
 * rank of the role gets here alike; in stop mode each ends the job through the runtime's fatal
 * path (MPI_Abort), so the ranks of the other roles, waiting for the next message, end too. */
static int nonfinite(PwRun *r, PwRole role, const char *what, double v, const char *where)
{
    const char *name = pw_role_name(role), *val = isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf";
    char causes[200];
    rollout_causes(r, role, causes, sizeof causes);
    if (!r->s.skip_nonfinite)
        pw_comm_fatal(__FILE__, __LINE__, "step %lld: %s %s is %s (%s%s); stopping: "
                      "runtime.on_nonfinite is stop", (long long)r->step, name, what, val, where,
                      causes);
    if (++r->skip_run[role] >= r->s.max_skipped)
        pw_comm_fatal(__FILE__, __LINE__, "step %lld: %s %s is %s (%s%s); stopping: %lld "
                      "optimiser steps in a row were skipped (runtime.max_skipped_steps)",
                      (long long)r->step, name, what, val, where, causes,
                      (long long)r->skip_run[role]);
    /* said once per role, and never silently: the metrics count it as runtime/skipped_steps */
    if (r->w.role_rank[role] == 0) {
        fprintf(stderr, "[ppo_world] step %lld: %s %s is %s (%s%s); the update is skipped "
                "(runtime.on_nonfinite is skip_step)\n", (long long)r->step, name, what, val,
                where, causes);
        fflush(stderr);
    }
    return 1;
}

PwGradSync *pw_grads_begin(PwWorld *w, PwRole role, PwModel *m, size_t bucket_bytes)
{
    /* split gradients are summed by every backward itself (pw_grads_even) */
    if (w->map.role[role].nranks < 2 || pw_model_grads_are_split(m)) return NULL;
    PwErr err;
    PwTensor g = pw_model_grads(m);
    PwGradSync *gs = pw_grad_sync_begin(w, role, &g, bucket_bytes, &err);
    if (!gs) pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    return gs;
}

void pw_grads_idle(PwModel *m, PwGradSync *gs)
{
    PwErr err;
    if (gs && pw_model_report_grads(m, pw_grad_sync_ready, gs, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
}

int pw_grads_most(PwWorld *w, PwRole role, PwModel *m, int backwards)
{
    if (!pw_model_grads_are_split(m)) return backwards;
    /* every rank's count, each in its own place of a sum */
    const int n = w->map.role[role].nranks;
    int32_t *each = calloc((size_t)n, sizeof *each);
    if (!each) pw_comm_fatal(__FILE__, __LINE__, "out of memory");
    each[w->role_rank[role]] = backwards;
    int64_t shape[1] = {n};
    PwTensor t = pw_tensor_host(each, PW_DTYPE_I32, 1, shape);
    PwErr err;
    if (pw_allreduce(w, role, &t, PW_REDUCE_SUM, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s: %s", pw_role_name(role), err.msg);
    int most = 0;
    for (int k = 0; k < n; k++) most = each[k] > most ? each[k] : most;
    free(each);
    return most;
}

void pw_grads_even(PwModel *m, int missing, const char *who)
{
    PwErr err;
    for (int i = 0; pw_model_grads_are_split(m) && i < missing; i++)
        if (pw_model_backward_idle(m, &err))
            pw_comm_fatal(__FILE__, __LINE__, "%s: %s", who, err.msg);
}

int pw_roles_optimizer_step(PwRun *r, PwRole role, PwModel *m, PwGradSync *gs, double lr,
                            int64_t t, double loss, int epoch, int mb)
{
    PwErr err;
    const char *name = pw_role_name(role);
    char where[160];
    snprintf(where, sizeof where, "%s loss of epoch %d minibatch %d, optimiser step %lld",
             role == PW_ROLE_ACTOR ? "the clipped policy" : "the clipped value", epoch, mb,
             (long long)t);
    /* The losses are divided by the minibatch's GLOBAL token count, so the sum over ranks is the
     * gradient of the whole minibatch; every rank then takes the same step on the same sum. The
     * buckets were posted during the backward: they are waited for whatever the loss is. */
    if (pw_grad_sync_end(gs, NULL, &err)) pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    /* The loss is a sum over the role's ranks: a NaN on any rank is seen by all of them, and
     * the gradient of a NaN loss is NaN anyway, so nothing is stepped. */
    if (!isfinite(loss)) return nonfinite(r, role, "loss", loss, where);
    PwAdamWConfig ac = {(float)lr, (float)r->s.beta1, (float)r->s.beta2, (float)r->s.eps,
                        (float)r->s.weight_decay, (float)r->s.grad_clip};
    double norm = 0.0;
    int rc = pw_model_adamw_step(m, &ac, (int)t, &norm, &err);
    if (rc < 0) pw_comm_fatal(__FILE__, __LINE__, "%s: %s", name, err.msg);
    if (rc == PW_ADAMW_SKIPPED) {
        snprintf(where, sizeof where, "summed over the %s's %d ranks, epoch %d minibatch %d, "
                 "optimiser step %lld", name, r->w.map.role[role].nranks, epoch, mb, (long long)t);
        return nonfinite(r, role, "gradient norm", norm, where);
    }
    /* optim.zero_stage 1: this rank updated its block; the others' come from their ranks */
    pw_shard_gather_weights(&r->w, role, m, r->shard[role]);
    /* A finite gradient can still make bad weights (a learning rate of 1e30, an eps that is 0
     * in float32); one reduction over the parameters finds them before anything uses or saves
     * them. Nothing undoes an applied update, so this stops the run in either mode. */
    if (pw_model_check_params(m, &err))
        pw_comm_fatal(__FILE__, __LINE__, "step %lld: %s weights went bad in optimiser step %lld "
                      "(epoch %d minibatch %d, learning rate %g): %s; stopping whatever "
                      "runtime.on_nonfinite says: an applied update cannot be undone",
                      (long long)r->step, name, (long long)t, epoch, mb, lr, err.msg);
    r->skip_run[role] = 0;
    return 0;
}

double pw_minibatch_weight(PwRun *r, PwRole role, const float *w, int R, PwBlock blk)
{
    double sum = 0.0;
    for (int64_t i = blk.start * R; i < (blk.start + blk.count) * R; i++) sum += w[i];
    pw_roles_allreduce_f64(r, role, &sum, 1);
    return sum > 0 ? sum : 1.0;
}
