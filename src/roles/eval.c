/* eval.c: evaluation of the initial policy and every eval.every steps: the producer samples the
 * evaluation prompts, the ensemble (and model.gold) scores them, the reference gives KL. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pw_algo.h"
#include "pw_metrics.h" /* a NaN score is written "nan", never dropped */
#include "pw_trace.h"
#include "roles.h"

static const int gold_idx[1] = {0}; /* model.gold lives on reward rank 0 */

typedef struct Eval {
    PwRows prod, act, gold, ref;
    float *logp, *scores, *score, *gold_act, *gold_score;
    float *act_logp, *act_logp_ref, *ref_logp; /* (n, R) for eval/kl */
} Eval;

static int has_gold(const PwRun *r) { return r->s.gold && *r->s.gold; }
/* Whether this rank scores model.gold: reward rank 0, with the gold model or a gold verifier. */
static int gold_here(const PwRun *r)
{
    return r->gold || ((r->gold_task || r->gold_token >= 0) && has_gold(r) &&
                       r->w.role_rank[PW_ROLE_REWARD] == 0);
}

/* Log-probs of a block's responses in micro batches of ppo.micro_batch_size: the actor
 * and the reference cut their blocks alike, so with equal weights and equal blocks the two
 * forwards are the same computation and eval/kl is exactly 0 (the initial evaluation). */
static void eval_logp(PwRun *r, PwModel *m, const PwRows *rows, float *logp)
{
    for (int i0 = 0; i0 < rows->n; i0 += r->s.micro) {
        int nb = rows->n - i0 < r->s.micro ? rows->n - i0 : r->s.micro;
        pw_rows_forward(r, m, rows, i0, nb, logp + (size_t)i0 * r->R, NULL, NULL, NULL);
    }
}

/* Phase 1: sample on the producer's block, tokens to the actor, the reference, the members and
 * the gold model. */
static void eval_generate(PwRun *r, Eval *ev, PwPrompts *d, int P, int64_t step, PwXfer *x)
{
    PwWorld *w = &r->w;
    int E = r->eval_n, R = r->R;
    PwRole pr = r->producer;
    PwGroup prod = pw_run_group(r, pr), act = pw_run_group(r, PW_ROLE_ACTOR);
    PwGroup gold = {PW_ROLE_REWARD, 1, gold_idx}, ref = pw_run_group(r, PW_ROLE_REFERENCE);
    if (pw_run_has(r, pr)) {
        PwBlock b = pw_block(E, prod.n, w->role_rank[pr]);
        pw_rows_prompts(&ev->prod, d, r->s.seed, 0, 0, 1, b.start, (int)b.count, P, R);
        ev->logp = pw_roles_alloc((size_t)b.count * R * sizeof(float));
        /* its own sampling streams: a negative step never meets a training batch, and the
         * initial evaluation (step -1) takes INT64_MIN, which no other evaluation reaches */
        int64_t stream = step >= 0 ? -(step + 1) : INT64_MIN;
        pw_generator_generate(r, pr == PW_ROLE_GENERATOR ? r->gen : r->actor, &ev->prod, ev->logp,
                              stream);
        PwTensor tok = pw_tensor2(ev->prod.tokens, PW_DTYPE_I32, b.count, R);
        int me = w->role_rank[pr];
        pw_xfer_send_rows(x, w, prod, me, act, PW_MSG_TOKENS, step, E, &tok);
        if (ref.n) pw_xfer_send_rows(x, w, prod, me, ref, PW_MSG_TOKENS, step, E, &tok);
        for (int k = 0; k < r->K; k++)
            pw_xfer_send_rows(x, w, prod, me, pw_member_group(&r->member[k]), PW_MSG_TOKENS, step,
                              E, &tok);
        if (has_gold(r)) pw_xfer_send_rows(x, w, prod, me, gold, PW_MSG_TOKENS, step, E, &tok);
    }
    if (pw_run_has(r, PW_ROLE_ACTOR)) {
        PwBlock b = pw_block(E, act.n, w->role_rank[PW_ROLE_ACTOR]);
        pw_rows_prompts(&ev->act, d, r->s.seed, 0, 0, 1, b.start, (int)b.count, P, R);
        PwTensor tok = pw_tensor2(ev->act.tokens, PW_DTYPE_I32, b.count, R);
        pw_xfer_recv_rows(x, w, prod, act, w->role_rank[PW_ROLE_ACTOR], PW_MSG_TOKENS, step, E,
                          &tok);
    }
    if (pw_run_has(r, PW_ROLE_REFERENCE)) {
        PwBlock b = pw_block(E, ref.n, w->role_rank[PW_ROLE_REFERENCE]);
        pw_rows_prompts(&ev->ref, d, r->s.seed, 0, 0, 1, b.start, (int)b.count, P, R);
        PwTensor tok = pw_tensor2(ev->ref.tokens, PW_DTYPE_I32, b.count, R);
        pw_xfer_recv_rows(x, w, prod, ref, w->role_rank[PW_ROLE_REFERENCE], PW_MSG_TOKENS, step,
                          E, &tok);
    }
    for (int k = 0; k < r->K; k++) {
        PwMember *m = &r->member[k];
        if (m->me < 0) continue;
        PwBlock b = pw_block(E, m->nranks, m->me);
        pw_rows_prompts(&m->rows, d, r->s.seed, 0, 0, 1, b.start, (int)b.count, P, R);
        m->score = pw_roles_alloc((size_t)b.count * sizeof(float));
        PwTensor tok = pw_tensor2(m->rows.tokens, PW_DTYPE_I32, b.count, R);
        pw_xfer_recv_rows(x, w, prod, pw_member_group(m), m->me, PW_MSG_TOKENS, step, E, &tok);
    }
    if (gold_here(r)) {
        pw_rows_prompts(&ev->gold, d, r->s.seed, 0, 0, 1, 0, E, P, R);
        ev->gold_score = pw_roles_alloc((size_t)E * sizeof(float));
        PwTensor tok = pw_tensor2(ev->gold.tokens, PW_DTYPE_I32, E, R);
        pw_xfer_recv_rows(x, w, prod, gold, 0, PW_MSG_TOKENS, step, E, &tok);
    }
    pw_xfer_wait(x, w);
    if (pw_run_has(r, PW_ROLE_ACTOR)) pw_rows_finish(&ev->act, r->stop_id);
    if (pw_run_has(r, PW_ROLE_REFERENCE)) pw_rows_finish(&ev->ref, r->stop_id);
    for (int k = 0; k < r->K; k++)
        if (r->member[k].me >= 0) pw_rows_finish(&r->member[k].rows, r->stop_id);
    if (gold_here(r)) pw_rows_finish(&ev->gold, r->stop_id);
}

/* Phase 2: scores of every member and of the gold model, and the reference's log-probs, to the
 * actor's blocks; the actor's own log-probs. */
static void eval_score(PwRun *r, Eval *ev, int64_t step, PwXfer *x)
{
    PwWorld *w = &r->w;
    int E = r->eval_n;
    PwGroup act = pw_run_group(r, PW_ROLE_ACTOR), gold = {PW_ROLE_REWARD, 1, gold_idx};
    PwGroup ref = pw_run_group(r, PW_ROLE_REFERENCE);
    if (pw_run_has(r, PW_ROLE_REFERENCE)) {
        ev->ref_logp = pw_roles_alloc((size_t)ev->ref.n * r->R * sizeof(float));
        eval_logp(r, r->ref, &ev->ref, ev->ref_logp);
        PwTensor t = pw_tensor2(ev->ref_logp, PW_DTYPE_F32, ev->ref.n, r->R);
        pw_xfer_send_rows(x, w, ref, w->role_rank[PW_ROLE_REFERENCE], act, PW_MSG_LOGP_REF, step,
                          E, &t);
    }
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
            pw_rows_forward(r, r->gold, &ev->gold, i0, nb, NULL, NULL, NULL, ev->gold_score + i0);
        }
        PwTensor t = pw_tensor2(ev->gold_score, PW_DTYPE_F32, E, 0);
        pw_xfer_send_rows(x, w, gold, 0, act, PW_MSG_SCORES, step, E, &t);
    }
    if (pw_run_has(r, PW_ROLE_ACTOR)) {
        int n = ev->act.n, me = w->role_rank[PW_ROLE_ACTOR];
        ev->scores = pw_roles_alloc((size_t)(r->K ? r->K : 1) * n * sizeof(float));
        ev->score = pw_roles_alloc((size_t)n * sizeof(float));
        ev->gold_act = pw_roles_alloc((size_t)n * sizeof(float));
        ev->act_logp = pw_roles_alloc((size_t)n * r->R * sizeof(float));
        ev->act_logp_ref = pw_roles_alloc((size_t)n * r->R * sizeof(float));
        eval_logp(r, r->actor, &ev->act, ev->act_logp);
        if (ref.n) {
            PwTensor t = pw_tensor2(ev->act_logp_ref, PW_DTYPE_F32, n, r->R);
            pw_xfer_recv_rows(x, w, ref, act, me, PW_MSG_LOGP_REF, step, E, &t);
        }
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

/* Population standard deviation of n values from their sum and sum of squares (rounding may
 * leave a tiny negative variance: that is 0). */
static double spread(double sum, double sum2, double n)
{
    double m = sum / n, v = sum2 / n - m * m;
    return v > 0.0 ? sqrt(v) : 0.0;
}

/* Token ids as text through data.tokenizer, or as a JSON array of ids without one. */
static json_t *eval_text(const PwRun *r, const int *ids, int n)
{
    if (!r->tok) {
        json_t *a = json_array();
        for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
        return a;
    }
    int need = r->tok->decode(r->tok, ids, n, NULL, 0);
    if (need < 0) return json_string("<undecodable>");
    char *buf = pw_roles_alloc((size_t)need + 1);
    r->tok->decode(r->tok, ids, n, buf, (size_t)need + 1);
    json_t *s = json_stringn(buf, (size_t)need);
    free(buf);
    return s ? s : json_string("<not UTF-8>");
}

/* The first PW_EVAL_SAMPLES responses of actor rank 0's block (global rows 0, 1, ...): prompt
 * without its padding, response up to its length, its score and gold score. */
#define PW_EVAL_SAMPLES 4
static json_t *eval_samples(const PwRun *r, const Eval *ev)
{
    const PwRows *a = &ev->act;
    json_t *arr = json_array();
    for (int b = 0; b < a->n && b < PW_EVAL_SAMPLES; b++) {
        int p0 = 0;
        while (p0 < a->P && !a->pmask[(size_t)b * a->P + p0]) p0++;
        json_t *o = json_object();
        json_object_set_new(o, "prompt", eval_text(r, a->prompt + (size_t)b * a->P + p0, a->P - p0));
        json_object_set_new(o, "response", eval_text(r, a->tokens + (size_t)b * a->R, a->lengths[b]));
        json_object_set_new(o, "score", pw_metric_json(ev->score[b]));
        if (has_gold(r)) json_object_set_new(o, "gold", pw_metric_json(ev->gold_act[b]));
        json_array_append_new(arr, o);
    }
    return arr;
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
    /* score, gold, length, stopped, verifier-correct, score^2, gold^2, KL: the squares give the
     * per-response spread, so the report's standard errors are measured, not bounded */
    double st[8] = {0};
    int R = r->R;
    PwKlEstimator est = (PwKlEstimator)r->s.kl_estimator;
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
        st[5] += (double)ev->score[b] * ev->score[b];
        st[6] += (double)ev->gold_act[b] * ev->gold_act[b];
        /* KL to the reference of the whole response, as objective/kl sums it in training */
        for (int t = 0; t < R && pw_run_nranks(r, PW_ROLE_REFERENCE); t++)
            if (ev->act.rmask[(size_t)b * R + t] != 0.0f)
                st[7] += pw_kl_token(est, ev->act_logp[(size_t)b * R + t],
                                     ev->act_logp_ref[(size_t)b * R + t]);
    }
    pw_roles_allreduce_f64(r, PW_ROLE_ACTOR, st, 8);
    if (r->w.role_rank[PW_ROLE_ACTOR] != 0) return;
    double E = r->eval_n;
    json_t *o = json_object();
    json_object_set_new(o, "step", json_integer(step));
    json_object_set_new(o, "episode", json_integer((step + 1) * r->s.N));
    json_object_set_new(o, "eval/scores", pw_metric_json(st[0] / E));
    json_object_set_new(o, "eval/scores_std", pw_metric_json(spread(st[0], st[5], E)));
    if (has_gold(r)) {
        json_object_set_new(o, "eval/gold_scores", pw_metric_json(st[1] / E));
        json_object_set_new(o, "eval/gold_scores_std", pw_metric_json(spread(st[1], st[6], E)));
    }
    /* without a reference role the policy is its own reference: no KL to report */
    if (pw_run_nranks(r, PW_ROLE_REFERENCE))
        json_object_set_new(o, "eval/kl", pw_metric_json(st[7] / E));
    if (verifier >= 0)
        json_object_set_new(o, "eval/verifiable_correct_rate", pw_metric_json(st[4] / E));
    json_object_set_new(o, "eval/sequence_lengths", pw_metric_json(st[2] / E));
    json_object_set_new(o, "eval/num_stop_token_ids", pw_metric_json(st[3]));
    json_object_set_new(o, "eval/samples", eval_samples(r, ev));
    char *line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    if (line) fprintf(r->eval_file, "%s\n", line);
    fflush(r->eval_file);
    free(line);
    pw_metrics_tb(r, step, o);
    json_decref(o);
}

void pw_eval_run(PwRun *r, int64_t step)
{
    PwPrompts *d = r->eval_data.ds.n ? &r->eval_data : &r->data;
    int P = 1;
    for (int i = 0; i < r->eval_n; i++)
        if (d->ds.prompt_len[i] > P) P = d->ds.prompt_len[i];
    Eval ev;
    memset(&ev, 0, sizeof ev);
    PwXfer x = {0};
    double t0 = pw_now();
    pw_ppo_weights_for_eval(r, step); /* async: the policy trained so far samples, not an older one */
    eval_generate(r, &ev, d, P, step, &x);
    eval_score(r, &ev, step, &x);
    if (pw_run_has(r, PW_ROLE_ACTOR)) eval_report(r, &ev, step);
    pw_xfer_free(&x);
    pw_rows_free(&ev.prod);
    pw_rows_free(&ev.act);
    pw_rows_free(&ev.gold);
    pw_rows_free(&ev.ref);
    float *bufs[] = {ev.logp,     ev.scores,       ev.score,   ev.gold_act,
                     ev.gold_score, ev.act_logp, ev.act_logp_ref, ev.ref_logp};
    for (size_t i = 0; i < PW_ARRAY_LEN(bufs); i++) free(bufs[i]);
    for (int k = 0; k < r->K; k++) {
        pw_rows_free(&r->member[k].rows);
        free(r->member[k].score);
        r->member[k].score = NULL;
    }
    if (r->w.trace) pw_trace_span(&r->w, PW_TRACE_COMM, PW_TRACE_PHASE, "eval", t0, pw_now());
}
