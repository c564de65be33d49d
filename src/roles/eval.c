/* eval.c: evaluation every eval.every steps: the producer samples responses to the evaluation
 * prompts, the reward ensemble (and model.gold) scores them, actor rank 0 writes eval.jsonl. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "pw_algo.h"
#include "roles.h"

static const int gold_idx[1] = {0}; /* model.gold lives on reward rank 0 */

typedef struct Eval {
    PwRows prod, act, gold;
    float *logp, *scores, *score, *gold_act, *gold_score;
} Eval;

static int has_gold(const PwRun *r) { return r->s.gold && *r->s.gold; }
/* Whether this rank scores model.gold: reward rank 0, with the gold model or a gold verifier. */
static int gold_here(const PwRun *r)
{
    return r->gold || ((r->gold_task || r->gold_token >= 0) && has_gold(r) &&
                       r->w.role_rank[PW_ROLE_REWARD] == 0);
}

/* Phase 1: sample on the producer's block, tokens to the actor, the members, the gold model. */
static void eval_generate(PwRun *r, Eval *ev, PwPrompts *d, int P, int64_t step, PwXfer *x)
{
    PwWorld *w = &r->w;
    int E = r->eval_n, R = r->R;
    PwRole pr = r->producer;
    PwGroup prod = pw_run_group(r, pr), act = pw_run_group(r, PW_ROLE_ACTOR);
    PwGroup gold = {PW_ROLE_REWARD, 1, gold_idx};
    if (pw_run_has(r, pr)) {
        PwBlock b = pw_block(E, prod.n, w->role_rank[pr]);
        pw_rows_prompts(&ev->prod, d, r->s.seed, 0, 0, b.start, (int)b.count, P, R);
        ev->logp = pw_roles_alloc((size_t)b.count * R * sizeof(float));
        /* its own sampling streams: a negative step never meets a training batch */
        pw_generator_generate(r, pr == PW_ROLE_GENERATOR ? r->gen : r->actor, &ev->prod, ev->logp,
                              -(step + 1));
        PwTensor tok = pw_tensor2(ev->prod.tokens, PW_DTYPE_I32, b.count, R);
        int me = w->role_rank[pr];
        pw_xfer_send_rows(x, w, prod, me, act, PW_MSG_TOKENS, step, E, &tok);
        for (int k = 0; k < r->K; k++)
            pw_xfer_send_rows(x, w, prod, me, pw_member_group(&r->member[k]), PW_MSG_TOKENS, step,
                              E, &tok);
        if (has_gold(r)) pw_xfer_send_rows(x, w, prod, me, gold, PW_MSG_TOKENS, step, E, &tok);
    }
    if (pw_run_has(r, PW_ROLE_ACTOR)) {
        PwBlock b = pw_block(E, act.n, w->role_rank[PW_ROLE_ACTOR]);
        pw_rows_prompts(&ev->act, d, r->s.seed, 0, 0, b.start, (int)b.count, P, R);
        PwTensor tok = pw_tensor2(ev->act.tokens, PW_DTYPE_I32, b.count, R);
        pw_xfer_recv_rows(x, w, prod, act, w->role_rank[PW_ROLE_ACTOR], PW_MSG_TOKENS, step, E,
                          &tok);
    }
    for (int k = 0; k < r->K; k++) {
        PwMember *m = &r->member[k];
        if (m->me < 0) continue;
        PwBlock b = pw_block(E, m->nranks, m->me);
        pw_rows_prompts(&m->rows, d, r->s.seed, 0, 0, b.start, (int)b.count, P, R);
        m->score = pw_roles_alloc((size_t)b.count * sizeof(float));
        PwTensor tok = pw_tensor2(m->rows.tokens, PW_DTYPE_I32, b.count, R);
        pw_xfer_recv_rows(x, w, prod, pw_member_group(m), m->me, PW_MSG_TOKENS, step, E, &tok);
    }
    if (gold_here(r)) {
        pw_rows_prompts(&ev->gold, d, r->s.seed, 0, 0, 0, E, P, R);
        ev->gold_score = pw_roles_alloc((size_t)E * sizeof(float));
        PwTensor tok = pw_tensor2(ev->gold.tokens, PW_DTYPE_I32, E, R);
        pw_xfer_recv_rows(x, w, prod, gold, 0, PW_MSG_TOKENS, step, E, &tok);
    }
    pw_xfer_wait(x, w);
    if (pw_run_has(r, PW_ROLE_ACTOR)) pw_rows_finish(&ev->act, r->stop_id);
    for (int k = 0; k < r->K; k++)
        if (r->member[k].me >= 0) pw_rows_finish(&r->member[k].rows, r->stop_id);
    if (gold_here(r)) pw_rows_finish(&ev->gold, r->stop_id);
}

/* Phase 2: scores of every member and of the gold model to the actor's blocks. */
static void eval_score(PwRun *r, Eval *ev, int64_t step, PwXfer *x)
{
    PwWorld *w = &r->w;
    int E = r->eval_n;
    PwGroup act = pw_run_group(r, PW_ROLE_ACTOR), gold = {PW_ROLE_REWARD, 1, gold_idx};
    if (pw_run_has(r, PW_ROLE_REWARD)) {
        pw_reward_evaluate(r);
        for (int k = 0; k < r->K; k++) {
            PwMember *m = &r->member[k];
            if (m->me < 0) continue;
            PwTensor t = pw_tensor2(m->score, PW_DTYPE_F32, m->rows.n, 0);
            pw_xfer_send_rows(x, w, pw_member_group(m), m->me, act, PW_MSG_SCORES, step, E, &t);
        }
    }
    if (gold_here(r)) {
        if (!r->gold) pw_verifier_score(r->gold_token, r->gold_task, &ev->gold, ev->gold_score);
        for (int i0 = 0; i0 < E && r->gold; i0 += r->s.micro) {
            int nb = E - i0 < r->s.micro ? E - i0 : r->s.micro;
            pw_rows_forward(r->gold, &ev->gold, i0, nb, NULL, NULL, NULL, ev->gold_score + i0);
        }
        PwTensor t = pw_tensor2(ev->gold_score, PW_DTYPE_F32, E, 0);
        pw_xfer_send_rows(x, w, gold, 0, act, PW_MSG_SCORES, step, E, &t);
    }
    if (pw_run_has(r, PW_ROLE_ACTOR)) {
        int n = ev->act.n, me = w->role_rank[PW_ROLE_ACTOR];
        ev->scores = pw_roles_alloc((size_t)(r->K ? r->K : 1) * n * sizeof(float));
        ev->score = pw_roles_alloc((size_t)n * sizeof(float));
        ev->gold_act = pw_roles_alloc((size_t)n * sizeof(float));
        for (int k = 0; k < r->K; k++) {
            PwTensor t = pw_tensor2(ev->scores + (size_t)k * n, PW_DTYPE_F32, n, 0);
            pw_xfer_recv_rows(x, w, pw_member_group(&r->member[k]), act, me, PW_MSG_SCORES, step,
                              E, &t);
        }
        if (has_gold(r)) {
            PwTensor t = pw_tensor2(ev->gold_act, PW_DTYPE_F32, n, 0);
            pw_xfer_recv_rows(x, w, gold, act, me, PW_MSG_SCORES, step, E, &t);
        }
    }
    pw_xfer_wait(x, w);
}

/* The ensemble objective, clip and non-stop penalty as in training (no running normalisation:
 * evaluation must not move its statistics), summed over the actor role. */
static void eval_report(PwRun *r, Eval *ev, int64_t step)
{
    PwErr err;
    int n = ev->act.n;
    if (pw_ensemble_combine(ev->score, NULL, ev->scores, r->K, n, (PwRewardObjective)r->s.objective,
                            r->s.uwo_weight, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    pw_reward_clip(ev->score, n, r->s.reward_clip);
    if (r->s.non_stop_penalty && r->stop_id >= 0)
        pw_nonstop_penalty(ev->score, ev->act.stopped, n, r->s.penalty);
    double st[5] = {0}; /* score, gold, length, stopped, verifier-correct */
    int verifier = -1;
    for (int k = 0; k < r->K && verifier < 0; k++)
        if (pw_member_is_verifier(&r->member[k])) verifier = k;
    for (int b = 0; b < n; b++) {
        st[0] += ev->score[b];
        st[1] += ev->gold_act[b];
        st[2] += ev->act.lengths[b];
        st[3] += ev->act.stopped[b];
        if (verifier >= 0)
            st[4] += pw_verifier_correct(r->member[verifier].task,
                                         ev->scores[(size_t)verifier * n + b]);
    }
    pw_roles_allreduce_f64(r, PW_ROLE_ACTOR, st, 5);
    if (r->w.role_rank[PW_ROLE_ACTOR] != 0) return;
    double E = r->eval_n;
    json_t *o = json_object();
    json_object_set_new(o, "step", json_integer(step));
    json_object_set_new(o, "episode", json_integer((step + 1) * r->s.N));
    json_object_set_new(o, "eval/scores", json_real(st[0] / E));
    if (has_gold(r)) json_object_set_new(o, "eval/gold_scores", json_real(st[1] / E));
    if (verifier >= 0) json_object_set_new(o, "eval/verifiable_correct_rate", json_real(st[4] / E));
    json_object_set_new(o, "eval/sequence_lengths", json_real(st[2] / E));
    json_object_set_new(o, "eval/num_stop_token_ids", json_real(st[3]));
    char *line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    if (line) fprintf(r->eval_file, "%s\n", line);
    fflush(r->eval_file);
    free(line);
    json_decref(o);
}

void pw_eval_run(PwRun *r, int64_t step)
{
    PwPrompts *d = r->eval_data.n ? &r->eval_data : &r->data;
    int P = 1;
    for (int i = 0; i < r->eval_n; i++)
        if (d->len[i] > P) P = d->len[i];
    Eval ev;
    memset(&ev, 0, sizeof ev);
    PwXfer x = {0};
    eval_generate(r, &ev, d, P, step, &x);
    eval_score(r, &ev, step, &x);
    if (pw_run_has(r, PW_ROLE_ACTOR)) eval_report(r, &ev, step);
    pw_xfer_free(&x);
    pw_rows_free(&ev.prod);
    pw_rows_free(&ev.act);
    pw_rows_free(&ev.gold);
    float *bufs[] = {ev.logp, ev.scores, ev.score, ev.gold_act, ev.gold_score};
    for (size_t i = 0; i < PW_ARRAY_LEN(bufs); i++) free(bufs[i]);
    for (int k = 0; k < r->K; k++) {
        pw_rows_free(&r->member[k].rows);
        free(r->member[k].score);
        r->member[k].score = NULL;
    }
}
