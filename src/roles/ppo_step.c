/* ppo_step.c: the schedule of one PPO step: which role sends what to whom, phase by phase.
 * Every rank walks the same phases in the same order and does its part of each for every role
 * it holds, so roles sharing a rank and roles spread over ranks run the same code. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "pw_algo.h"
#include "pw_device.h" /* pw_device_peak_bytes */
#include "pw_trace.h"
#include "roles.h"

/* The phases (docs/roles.md):
 *   1 generate     producer (generator, or the actor without one) samples its block; tokens
 *                  go to actor, reference, critic and every reward member's ranks
 *   2 evaluate     actor logp_old, reference logp_ref, critic values, reward scores -> actor
 *   3 advantages   actor: scores, KL, rewards, GAE, whitening; returns -> critic
 *   4 train        actor then critic (their in-role collectives never interleave)
 *   5 weights      actor rank 0 -> every generator rank, one broadcast of the whole buffer;
 *                  every rank of every role -> actor rank 0: timings (and critic stats) */

/* The prompt width of the step: the longest prompt of the global batch (every rank sees it). */
static int step_width(PwRun *r, int64_t step)
{
    int P = 1;
    for (int i = 0; i < r->s.N; i++) {
        int id = pw_prompts_pick(&r->data, r->s.seed, step * r->s.N + i);
        if (r->data.ds.prompt_len[id] > P) P = r->data.ds.prompt_len[id];
    }
    return P;
}

/* (n) tags: every row of a batch carries the version of the weights that sampled it. */
static int *version_tags(int n, int64_t version)
{
    int *v = pw_roles_alloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    for (int i = 0; i < n; i++) v[i] = (int)version;
    return v;
}

/* Rows of `role`'s block (or a member's block) with this step's prompts. */
static void block_rows(PwRun *r, PwRows *rows, int64_t step, int parts, int part)
{
    PwBlock blk = pw_block(r->s.N, parts, part);
    pw_rows_prompts(rows, &r->data, r->s.seed, step, r->s.N, r->s.group, blk.start, (int)blk.count,
                    r->P, r->R);
}

void pw_ppo_block_rows(PwRun *r, PwRows *rows, int64_t step, PwRole role)
{
    int P = r->P;
    r->P = step_width(r, step);
    block_rows(r, rows, step, pw_run_nranks(r, role), r->w.role_rank[role]);
    r->P = P;
}

static void start_blocks(PwRun *r, int64_t step)
{
    int R = r->R;
    size_t nr;
    if (pw_run_has(r, r->producer) && r->queue_n) { /* async: sampled in an earlier step */
        PwQueued q = r->queue[0];
        if (q.batch != step)
            pw_comm_fatal(__FILE__, __LINE__, "generator: queue holds batch %lld at step %lld",
                          (long long)q.batch, (long long)step);
        memmove(r->queue, r->queue + 1, (size_t)--r->queue_n * sizeof r->queue[0]);
        r->gen_rows = q.rows;
        r->gen_logp = q.logp;
        r->gen_ver = version_tags(q.rows.n, q.version);
    } else if (pw_run_has(r, r->producer)) {
        block_rows(r, &r->gen_rows, step, pw_run_nranks(r, r->producer),
                   r->w.role_rank[r->producer]);
        r->gen_logp = pw_roles_alloc((size_t)r->gen_rows.n * R * sizeof(float));
        /* sampled in this step: by the actor itself (its own updates) or the generator */
        r->gen_ver = version_tags(r->gen_rows.n,
                                  r->producer == PW_ROLE_ACTOR ? step : r->gen_version);
    }
    if (pw_run_has(r, PW_ROLE_ACTOR)) {
        block_rows(r, &r->act_rows, step, pw_run_nranks(r, PW_ROLE_ACTOR),
                   r->w.role_rank[PW_ROLE_ACTOR]);
        nr = (size_t)r->act_rows.n * R;
        r->logp_old = pw_roles_alloc(nr * sizeof(float));
        r->ent_old = pw_roles_alloc(nr * sizeof(float));
        r->logp_ref = pw_roles_alloc(nr * sizeof(float));
        r->values = pw_roles_alloc(nr * sizeof(float));
        r->gen_logp_act = pw_roles_alloc(nr * sizeof(float));
        r->act_ver = pw_roles_alloc((size_t)(r->act_rows.n > 0 ? r->act_rows.n : 1) * sizeof(int));
        if (r->s.off_policy != PW_OFFPOL_NONE) r->iw = pw_roles_alloc(nr * sizeof(float));
        r->kl = pw_roles_alloc(nr * sizeof(float));
        r->rewards = pw_roles_alloc(nr * sizeof(float));
        r->adv = pw_roles_alloc(nr * sizeof(float));
        r->ret = pw_roles_alloc(nr * sizeof(float));
        r->scores_k = pw_roles_alloc((size_t)r->K * r->act_rows.n * sizeof(float));
        r->score = pw_roles_alloc((size_t)r->act_rows.n * sizeof(float));
    }
    if (pw_run_has(r, PW_ROLE_REFERENCE)) {
        block_rows(r, &r->ref_rows, step, pw_run_nranks(r, PW_ROLE_REFERENCE),
                   r->w.role_rank[PW_ROLE_REFERENCE]);
        r->ref_logp = pw_roles_alloc((size_t)r->ref_rows.n * R * sizeof(float));
    }
    if (pw_run_has(r, PW_ROLE_CRITIC)) {
        block_rows(r, &r->crit_rows, step, pw_run_nranks(r, PW_ROLE_CRITIC),
                   r->w.role_rank[PW_ROLE_CRITIC]);
        r->vold = pw_roles_alloc((size_t)r->crit_rows.n * R * sizeof(float));
        r->vret = pw_roles_alloc((size_t)r->crit_rows.n * R * sizeof(float));
    }
    for (int k = 0; k < r->K; k++) {
        PwMember *m = &r->member[k];
        if (m->me < 0) continue;
        block_rows(r, &m->rows, step, m->nranks, m->me);
        m->score = pw_roles_alloc((size_t)m->rows.n * sizeof(float));
    }
}

static void end_blocks(PwRun *r)
{
    pw_rows_free(&r->gen_rows);
    pw_rows_free(&r->act_rows);
    pw_rows_free(&r->ref_rows);
    pw_rows_free(&r->crit_rows);
    float **bufs[] = {&r->gen_logp, &r->logp_old, &r->ent_old, &r->logp_ref, &r->values,
                      &r->gen_logp_act, &r->kl, &r->rewards, &r->adv, &r->ret, &r->scores_k,
                      &r->score, &r->ref_logp, &r->vold, &r->vret};
    for (size_t i = 0; i < PW_ARRAY_LEN(bufs); i++) {
        free(*bufs[i]);
        *bufs[i] = NULL;
    }
    free(r->gen_ver);
    free(r->act_ver);
    free(r->iw);
    r->gen_ver = r->act_ver = NULL;
    r->iw = NULL;
    for (int k = 0; k < r->K; k++) {
        pw_rows_free(&r->member[k].rows);
        free(r->member[k].score);
        r->member[k].score = NULL;
    }
}

/* Adds the wait of a phase to the idle time of every role that received in it. */
static void idle(PwRun *r, double secs, const int *roles)
{
    for (int i = 0; roles[i] >= 0; i++)
        if (pw_run_has(r, (PwRole)roles[i])) r->time[roles[i]][PW_PH_IDLE] += secs;
}

/* Adds the seconds since t0 to a role's phase, and the span to the trace when there is one. */
static void spent(PwRun *r, int role, int phase, double t0)
{
    double t1 = pw_now();
    r->time[role][phase] += t1 - t0;
    if (r->w.trace) pw_trace_span(&r->w, role, PW_TRACE_PHASE, pw_phase_names[phase], t0, t1);
}

#define TIMED(role, phase, stmt)                                                             \
    do {                                                                                     \
        double t0_ = pw_now();                                                               \
        stmt;                                                                                \
        spent(r, role, phase, t0_);                                                          \
    } while (0)

/* Async with k = async.max_staleness (docs/roles.md, Async): batch b is sampled with the
 * weights of update max(0, b - k). At step s the generator sends batch s from its queue, takes
 * the weights of update s (the actor sent them at the end of step s - 1) and samples batch
 * s + k; at step 0 it samples batches 1..k with the initial weights. So it takes new weights at
 * every step s >= 1 that has a batch s + k to sample. */
static int weights_in_async(const PwRun *r, int64_t step)
{
    return step >= 1 && step + r->k < r->s.steps;
}

/* Samples batch `batch` with the generator's weights into the queue's tail. */
static void queue_push(PwRun *r, int64_t batch)
{
    PwQueued *q = &r->queue[r->queue_n];
    memset(q, 0, sizeof *q);
    q->batch = batch;
    q->version = r->gen_version;
    pw_ppo_block_rows(r, &q->rows, batch, PW_ROLE_GENERATOR);
    q->logp = pw_roles_alloc((size_t)(q->rows.n > 0 ? q->rows.n : 1) * r->R * sizeof(float));
    TIMED(PW_ROLE_GENERATOR, PW_PH_GENERATE,
          pw_generator_generate(r, r->gen, &q->rows, q->logp, batch));
    r->queue_n++;
}

static void phase_generate(PwRun *r, PwXfer *x, int64_t step)
{
    PwWorld *w = &r->w;
    int64_t N = r->s.N;
    int R = r->R;
    PwRole pr = r->producer;
    PwGroup prod = pw_run_group(r, pr), act = pw_run_group(r, PW_ROLE_ACTOR);
    /* async from step 1 on (a resumed run too): sampled in an earlier step, and start_blocks
     * took it from the queue */
    int queued = r->async && step > 0;
    if (pw_run_has(r, pr)) {
        PwModel *m = pr == PW_ROLE_GENERATOR ? r->gen : r->actor;
        if (!queued)
            TIMED(pr, PW_PH_GENERATE, pw_generator_generate(r, m, &r->gen_rows, r->gen_logp, step));
        int me = w->role_rank[pr];
        PwTensor tok = pw_tensor2(r->gen_rows.tokens, PW_DTYPE_I32, r->gen_rows.n, R);
        PwTensor lp = pw_tensor2(r->gen_logp, PW_DTYPE_F32, r->gen_rows.n, R);
        PwTensor ver = pw_tensor2(r->gen_ver, PW_DTYPE_I32, r->gen_rows.n, 0);
        if (pr != PW_ROLE_ACTOR) {
            pw_xfer_send_rows(x, w, prod, me, act, PW_MSG_TOKENS, step, N, &tok);
            pw_xfer_send_rows(x, w, prod, me, act, PW_MSG_LOGP_GEN, step, N, &lp);
            pw_xfer_send_rows(x, w, prod, me, act, PW_MSG_VERSIONS, step, N, &ver);
        }
        if (pw_run_nranks(r, PW_ROLE_REFERENCE))
            pw_xfer_send_rows(x, w, prod, me, pw_run_group(r, PW_ROLE_REFERENCE), PW_MSG_TOKENS,
                              step, N, &tok);
        pw_xfer_send_rows(x, w, prod, me, pw_run_group(r, PW_ROLE_CRITIC), PW_MSG_TOKENS, step, N,
                          &tok);
        for (int k = 0; k < r->K; k++)
            pw_xfer_send_rows(x, w, prod, me, pw_member_group(&r->member[k]), PW_MSG_TOKENS, step,
                              N, &tok);
    }
    if (pw_run_has(r, PW_ROLE_ACTOR)) {
        int n = r->act_rows.n;
        if (pr == PW_ROLE_ACTOR) { /* the actor generated its own block */
            memcpy(r->act_rows.tokens, r->gen_rows.tokens, (size_t)n * R * sizeof(int));
            memcpy(r->gen_logp_act, r->gen_logp, (size_t)n * R * sizeof(float));
            memcpy(r->act_ver, r->gen_ver, (size_t)n * sizeof(int));
        } else {
            int me = w->role_rank[PW_ROLE_ACTOR];
            PwTensor tok = pw_tensor2(r->act_rows.tokens, PW_DTYPE_I32, n, R);
            PwTensor lp = pw_tensor2(r->gen_logp_act, PW_DTYPE_F32, n, R);
            PwTensor ver = pw_tensor2(r->act_ver, PW_DTYPE_I32, n, 0);
            pw_xfer_recv_rows(x, w, prod, act, me, PW_MSG_TOKENS, step, N, &tok);
            pw_xfer_recv_rows(x, w, prod, act, me, PW_MSG_LOGP_GEN, step, N, &lp);
            pw_xfer_recv_rows(x, w, prod, act, me, PW_MSG_VERSIONS, step, N, &ver);
        }
    }
    if (pw_run_has(r, PW_ROLE_REFERENCE)) {
        PwTensor tok = pw_tensor2(r->ref_rows.tokens, PW_DTYPE_I32, r->ref_rows.n, R);
        pw_xfer_recv_rows(x, w, prod, pw_run_group(r, PW_ROLE_REFERENCE),
                          w->role_rank[PW_ROLE_REFERENCE], PW_MSG_TOKENS, step, N, &tok);
    }
    if (pw_run_has(r, PW_ROLE_CRITIC)) {
        PwTensor tok = pw_tensor2(r->crit_rows.tokens, PW_DTYPE_I32, r->crit_rows.n, R);
        pw_xfer_recv_rows(x, w, prod, pw_run_group(r, PW_ROLE_CRITIC), w->role_rank[PW_ROLE_CRITIC],
                          PW_MSG_TOKENS, step, N, &tok);
    }
    for (int k = 0; k < r->K; k++) {
        PwMember *m = &r->member[k];
        if (m->me < 0) continue;
        PwTensor tok = pw_tensor2(m->rows.tokens, PW_DTYPE_I32, m->rows.n, R);
        pw_xfer_recv_rows(x, w, prod, pw_member_group(m), m->me, PW_MSG_TOKENS, step, N, &tok);
    }
    /* an evaluation after the last step may have handed these weights over already */
    if (r->async && pw_run_has(r, PW_ROLE_GENERATOR) && weights_in_async(r, step) &&
        r->gen_version < step) {
        PwTensor p = pw_model_weights_in(r->gen);
        pw_xfer_fanout_recv(x, w, &r->weights, PW_MSG_WEIGHTS, step - 1, &p);
        r->gen_version = step;
    }
    static const int receivers[] = {PW_ROLE_ACTOR,  PW_ROLE_REFERENCE, PW_ROLE_CRITIC,
                                    PW_ROLE_REWARD, PW_ROLE_GENERATOR, -1};
    idle(r, pw_xfer_wait(x, w) + pw_xfer_wait(&r->carry, w), receivers);
    /* Async: the queue is filled up to batch step + k now, with the weights of the last update,
     * while the other roles of other ranks evaluate and train on this batch. */
    if (r->async && pw_run_has(r, PW_ROLE_GENERATOR)) {
        int64_t last = r->queue_n ? r->queue[r->queue_n - 1].batch : step;
        for (; last < step + r->k && last + 1 < r->s.steps; last++) queue_push(r, last + 1);
    }
    if (pw_run_has(r, PW_ROLE_ACTOR)) pw_rows_finish(&r->act_rows, r->stop_id);
    if (pw_run_has(r, PW_ROLE_REFERENCE)) pw_rows_finish(&r->ref_rows, r->stop_id);
    if (pw_run_has(r, PW_ROLE_CRITIC)) pw_rows_finish(&r->crit_rows, r->stop_id);
    for (int k = 0; k < r->K; k++)
        if (r->member[k].me >= 0) pw_rows_finish(&r->member[k].rows, r->stop_id);
}

static void phase_evaluate(PwRun *r, PwXfer *x, int64_t step)
{
    PwWorld *w = &r->w;
    int64_t N = r->s.N;
    int R = r->R;
    PwGroup act = pw_run_group(r, PW_ROLE_ACTOR);
    if (pw_run_has(r, PW_ROLE_ACTOR)) TIMED(PW_ROLE_ACTOR, PW_PH_EVALUATE, pw_actor_logprobs(r));
    if (pw_run_has(r, PW_ROLE_REFERENCE)) {
        TIMED(PW_ROLE_REFERENCE, PW_PH_EVALUATE, pw_reference_evaluate(r));
        PwTensor t = pw_tensor2(r->ref_logp, PW_DTYPE_F32, r->ref_rows.n, R);
        pw_xfer_send_rows(x, w, pw_run_group(r, PW_ROLE_REFERENCE), w->role_rank[PW_ROLE_REFERENCE],
                          act, PW_MSG_LOGP_REF, step, N, &t);
    }
    if (pw_run_has(r, PW_ROLE_CRITIC)) {
        TIMED(PW_ROLE_CRITIC, PW_PH_EVALUATE, pw_critic_evaluate(r));
        PwTensor t = pw_tensor2(r->vold, PW_DTYPE_F32, r->crit_rows.n, R);
        pw_xfer_send_rows(x, w, pw_run_group(r, PW_ROLE_CRITIC), w->role_rank[PW_ROLE_CRITIC], act,
                          PW_MSG_VALUES, step, N, &t);
    }
    if (pw_run_has(r, PW_ROLE_REWARD)) {
        TIMED(PW_ROLE_REWARD, PW_PH_EVALUATE, pw_reward_evaluate(r));
        for (int k = 0; k < r->K; k++) {
            PwMember *m = &r->member[k];
            if (m->me < 0) continue;
            PwTensor t = pw_tensor2(m->score, PW_DTYPE_F32, m->rows.n, 0);
            pw_xfer_send_rows(x, w, pw_member_group(m), m->me, act, PW_MSG_SCORES, step, N, &t);
        }
    }
    if (pw_run_has(r, PW_ROLE_ACTOR)) {
        int me = w->role_rank[PW_ROLE_ACTOR], n = r->act_rows.n;
        if (pw_run_nranks(r, PW_ROLE_REFERENCE)) {
            PwTensor t = pw_tensor2(r->logp_ref, PW_DTYPE_F32, n, R);
            pw_xfer_recv_rows(x, w, pw_run_group(r, PW_ROLE_REFERENCE), act, me, PW_MSG_LOGP_REF,
                              step, N, &t);
        }
        if (pw_run_nranks(r, PW_ROLE_CRITIC)) { /* grpo, rloo: no critic, no values */
            PwTensor v = pw_tensor2(r->values, PW_DTYPE_F32, n, R);
            pw_xfer_recv_rows(x, w, pw_run_group(r, PW_ROLE_CRITIC), act, me, PW_MSG_VALUES, step,
                              N, &v);
        }
        for (int k = 0; k < r->K; k++) {
            PwTensor t = pw_tensor2(r->scores_k + (size_t)k * n, PW_DTYPE_F32, n, 0);
            pw_xfer_recv_rows(x, w, pw_member_group(&r->member[k]), act, me, PW_MSG_SCORES, step, N,
                              &t);
        }
    }
    static const int receivers[] = {PW_ROLE_ACTOR, -1};
    idle(r, pw_xfer_wait(x, w), receivers);
    /* Without a reference the policy is its own reference: KL is 0 (beta must be 0, run.c). */
    if (pw_run_has(r, PW_ROLE_ACTOR) && !pw_run_nranks(r, PW_ROLE_REFERENCE))
        memcpy(r->logp_ref, r->logp_old, (size_t)r->act_rows.n * R * sizeof(float));
}

static void phase_advantages(PwRun *r, PwXfer *x, int64_t step)
{
    PwWorld *w = &r->w;
    int64_t N = r->s.N;
    int R = r->R;
    if (pw_run_has(r, PW_ROLE_ACTOR)) {
        TIMED(PW_ROLE_ACTOR, PW_PH_ADVANTAGES, {
            pw_actor_combine_scores(r);
            pw_actor_advantages(r);
        });
        if (pw_run_nranks(r, PW_ROLE_CRITIC)) {
            PwTensor t = pw_tensor2(r->ret, PW_DTYPE_F32, r->act_rows.n, R);
            pw_xfer_send_rows(x, w, pw_run_group(r, PW_ROLE_ACTOR), w->role_rank[PW_ROLE_ACTOR],
                              pw_run_group(r, PW_ROLE_CRITIC), PW_MSG_RETURNS, step, N, &t);
        }
    }
    if (pw_run_has(r, PW_ROLE_CRITIC)) {
        PwTensor t = pw_tensor2(r->vret, PW_DTYPE_F32, r->crit_rows.n, R);
        pw_xfer_recv_rows(x, w, pw_run_group(r, PW_ROLE_ACTOR), pw_run_group(r, PW_ROLE_CRITIC),
                          w->role_rank[PW_ROLE_CRITIC], PW_MSG_RETURNS, step, N, &t);
    }
    static const int receivers[] = {PW_ROLE_CRITIC, -1};
    idle(r, pw_xfer_wait(x, w), receivers);
}

/* What each rank of each role reports to actor rank 0 at the end of a step: its seconds per
 * phase for that role, then (critic) value loss, value clipfrac, critic lr, skipped updates,
 * then the rank's bytes sent and given to collectives this step (in the report of the first
 * role it holds only, so a rank is counted once), its peak resident set in MB and the most
 * device memory it has held in MB (pw_device_peak_bytes; 0 without a GPU). */
#define PW_REPORT_LEN (PW_PH_COUNT + 8)
enum { REP_SENT = PW_PH_COUNT + 4, REP_COLL, REP_PEAK, REP_DEVPEAK };

/* The process's peak resident set, which the roles of a rank share (Linux: ru_maxrss in KiB). */
static double peak_mb(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : 0.0;
}

/* What actor rank 0 hands the generators (pw_model_weights_out): at bf16 the matrices in
 * bfloat16 only, packed straight into the weights of a generator on this rank and device (the
 * broadcast's bound receiver, which then needs no copy), else into the actor's gradients'
 * memory, free until the next minibatch's zero_grad */
static PwTensor actor_weights(PwRun *r)
{
    PwErr err;
    PwTensor p;
    const PwTensor *b = &r->weights.bound;
    void *into = b->data && b->device == pw_model_device(r->actor) ? b->data : NULL;
    if (pw_model_weights_out(r->actor, into, &p, &err))
        pw_comm_fatal(__FILE__, __LINE__, "actor: the weights for the generators: %s", err.msg);
    return p;
}

static void phase_weights(PwRun *r, PwXfer *x, int64_t step)
{
    PwWorld *w = &r->w;
    double t0 = pw_now();
    if (pw_run_has(r, PW_ROLE_ACTOR) && w->role_rank[PW_ROLE_ACTOR] == 0 &&
        (!r->async || weights_in_async(r, step + 1))) {
        /* The weights are one buffer (pw_model_weights_out): one broadcast to the generator
         * ranks, no per-tensor trips. Async: the send completes in the next step, before the
         * actor's next zero_grad, whose memory holds the buffer at bf16. */
        PwTensor p = actor_weights(r);
        pw_xfer_fanout_send(r->async ? &r->carry : x, w, &r->weights, PW_MSG_WEIGHTS, step, &p);
    }
    if (pw_run_has(r, PW_ROLE_GENERATOR) && !r->async) {
        PwTensor p = pw_model_weights_in(r->gen);
        pw_xfer_fanout_recv(x, w, &r->weights, PW_MSG_WEIGHTS, step, &p);
        r->gen_version = step + 1;
    }
    static const int receivers[] = {PW_ROLE_GENERATOR, -1};
    double waited = pw_xfer_wait(x, w);
    idle(r, waited, receivers);
    if (pw_run_has(r, PW_ROLE_ACTOR)) spent(r, PW_ROLE_ACTOR, PW_PH_WEIGHTS, t0);
    /* the generator's wait for the end of training is idle time, not weights time (its span
     * holds the idle span of that wait) */
    if (pw_run_has(r, PW_ROLE_GENERATOR)) {
        spent(r, PW_ROLE_GENERATOR, PW_PH_WEIGHTS, t0);
        r->time[PW_ROLE_GENERATOR][PW_PH_WEIGHTS] -= waited;
    }

    /* Reports: every rank of every role, so a role's times are its mean over its ranks (rank 0
     * alone would hide a slow or idle data-parallel rank). Actor rank 0 reports to itself too. */
    double out[PW_ROLE_COUNT][PW_REPORT_LEN];
    int first_role = 1;
    double peak = peak_mb();
    for (int role = 0; role < PW_ROLE_COUNT; role++) {
        if (!pw_run_has(r, (PwRole)role)) continue;
        memset(out[role], 0, sizeof out[role]);
        memcpy(out[role], r->time[role], sizeof r->time[role]);
        if (role == PW_ROLE_CRITIC)
            memcpy(out[role] + PW_PH_COUNT, r->critic_stats, 4 * sizeof(double));
        if (first_role) {
            out[role][REP_SENT] = (double)(w->bytes_sent - r->sent0);
            out[role][REP_COLL] = (double)(w->bytes_coll - r->coll0);
            first_role = 0;
        }
        out[role][REP_PEAK] = peak;
        out[role][REP_DEVPEAK] = (double)pw_device_peak_bytes() / 1048576.0;
        PwTensor t = pw_tensor2(out[role], PW_DTYPE_F64, PW_REPORT_LEN, 0);
        pw_xfer_send(x, w, (PwRole)role, PW_ROLE_ACTOR, 0, PW_MSG_REPORT, step, &t);
    }
    if (!pw_run_has(r, PW_ROLE_ACTOR) || w->role_rank[PW_ROLE_ACTOR] != 0) {
        pw_xfer_wait(x, w);
        return;
    }
    int total = 0;
    for (int role = 0; role < PW_ROLE_COUNT; role++) total += pw_run_nranks(r, (PwRole)role);
    double *in = pw_roles_alloc((size_t)total * PW_REPORT_LEN * sizeof(double));
    int k = 0;
    for (int role = 0; role < PW_ROLE_COUNT; role++)
        for (int i = 0; i < pw_run_nranks(r, (PwRole)role); i++, k++) {
            PwTensor t = pw_tensor2(in + (size_t)k * PW_REPORT_LEN, PW_DTYPE_F64, PW_REPORT_LEN, 0);
            pw_xfer_recv(x, w, PW_ROLE_ACTOR, (PwRole)role, i, PW_MSG_REPORT, step, &t);
        }
    pw_xfer_wait(x, w);
    k = 0;
    r->bytes_sent = r->bytes_coll = 0.0;
    for (int role = 0; role < PW_ROLE_COUNT; role++) {
        int n = pw_run_nranks(r, (PwRole)role);
        if (!n) continue;
        const double *rep = in + (size_t)k * PW_REPORT_LEN; /* role rank 0 */
        for (int ph = 0; ph < PW_PH_COUNT; ph++) {
            double sum = 0.0;
            for (int i = 0; i < n; i++) sum += rep[(size_t)i * PW_REPORT_LEN + ph];
            r->time[role][ph] = sum / n;
        }
        r->peak_mb[role] = r->device_peak_mb[role] = 0.0;
        for (int i = 0; i < n; i++) {
            const double *ri = rep + (size_t)i * PW_REPORT_LEN;
            r->bytes_sent += ri[REP_SENT];
            r->bytes_coll += ri[REP_COLL];
            if (ri[REP_PEAK] > r->peak_mb[role]) r->peak_mb[role] = ri[REP_PEAK];
            if (ri[REP_DEVPEAK] > r->device_peak_mb[role])
                r->device_peak_mb[role] = ri[REP_DEVPEAK];
        }
        if (role == PW_ROLE_CRITIC) { /* all-reduced inside the critic: rank 0 speaks for all */
            r->stats[PW_ST_VLOSS] = rep[PW_PH_COUNT];
            r->stats[PW_ST_VCLIPFRAC] = rep[PW_PH_COUNT + 1];
            r->stats[PW_ST_CRITIC_LR] = rep[PW_PH_COUNT + 2];
            r->stats[PW_ST_SKIPPED] += rep[PW_PH_COUNT + 3];
        }
        k += n;
    }
    free(in);
}

void pw_ppo_weights_for_eval(PwRun *r, int64_t step)
{
    /* Async: the generator holds the weights of update `step` (or older near the end of the run)
     * while the actor has made update step + 1; an evaluation samples the policy trained so far.
     * When the actor has sent those weights for the next step already (weights_in_async) the
     * generator takes that message now, and the next step does not wait for it again. */
    PwWorld *w = &r->w;
    if (!r->async || step < 0) return;
    PwXfer x = {0};
    if (pw_run_has(r, PW_ROLE_ACTOR) && w->role_rank[PW_ROLE_ACTOR] == 0 &&
        !weights_in_async(r, step + 1)) {
        PwTensor p = actor_weights(r);
        pw_xfer_fanout_send(&x, w, &r->weights, PW_MSG_WEIGHTS, step, &p);
    }
    if (pw_run_has(r, PW_ROLE_GENERATOR) && r->gen_version < step + 1) {
        PwTensor p = pw_model_weights_in(r->gen);
        pw_xfer_fanout_recv(&x, w, &r->weights, PW_MSG_WEIGHTS, step, &p);
        r->gen_version = step + 1;
    }
    pw_xfer_wait(&x, w);
    pw_xfer_free(&x);
}

/* optim.offload_adam_states: the moments go to host memory until the next update, which takes
 * them back itself (pw_model_adamw_step); a no-op for models on the CPU. */
static void offload_moments(PwRun *r)
{
    PwModel *trained[2] = {pw_run_has(r, PW_ROLE_ACTOR) ? r->actor : NULL,
                           pw_run_has(r, PW_ROLE_CRITIC) ? r->critic : NULL};
    for (int i = 0; i < 2; i++) {
        PwErr err;
        if (trained[i] && pw_model_optimizer_offload(trained[i], &err))
            pw_comm_fatal(__FILE__, __LINE__, "optim.offload_adam_states: %s", err.msg);
    }
}

void pw_ppo_step(PwRun *r, int64_t step)
{
    PwXfer x = {0};
    double t0 = pw_now();
    r->step = step;
    r->sent0 = r->w.bytes_sent;
    r->coll0 = r->w.bytes_coll;
    pw_trace_set_step(&r->w, step);
    memset(r->time, 0, sizeof r->time);
    r->P = step_width(r, step);
    start_blocks(r, step);
    r->stats[PW_ST_BETA] = r->beta;

    phase_generate(r, &x, step);
    phase_evaluate(r, &x, step);
    phase_advantages(r, &x, step);
    if (pw_run_has(r, PW_ROLE_ACTOR)) TIMED(PW_ROLE_ACTOR, PW_PH_TRAIN, pw_actor_train(r));
    if (pw_run_has(r, PW_ROLE_CRITIC)) TIMED(PW_ROLE_CRITIC, PW_PH_TRAIN, pw_critic_train(r));
    if (r->s.offload_adam) offload_moments(r);
    r->opt_step += (int64_t)r->s.epochs * r->s.minibatches;
    phase_weights(r, &x, step);

    /* The KL controller sees the global objective/kl, the same on every actor rank. */
    if (pw_run_has(r, PW_ROLE_ACTOR)) {
        r->step_seconds = pw_now() - t0;
        if (r->w.role_rank[PW_ROLE_ACTOR] == 0) {
            pw_metrics_write(r, step);
            pw_progress_line(r, step);
        }
        PwKlController c = {r->s.adaptive_kl, r->beta, r->s.target_kl, r->s.kl_horizon};
        r->beta = pw_kl_controller_update(&c, r->stats[PW_ST_KL] / r->s.N, r->s.N);
    }
    end_blocks(r);
    pw_xfer_free(&x);
    if (r->w.trace) pw_trace_span(&r->w, PW_TRACE_COMM, PW_TRACE_PHASE, "step", t0, pw_now());
}
