/* sft.c: `ppo_world sft`: supervised fine-tuning, the mean next-token loss over response tokens
 * only (prompt targets weigh 0), data parallel over every rank of the job. */
#include <math.h>
#include <stdlib.h>

#include "pw_train.h"
#include "train.h"

/* The model's per-position log-probs of a batch's targets (B,T), and the batch's loss. */
static double lm_forward(PwTrainer *t, const PwBatch *b, float *logp, const char *what)
{
    PwErr err;
    PwModelInput in = {b->tokens, b->mask, b->targets, b->B, b->T, 1.0f};
    PwOutputs out = {.col0 = 0, .width = b->T, .logp = logp};
    if (pw_model_forward(t->model, &in, &out, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s: %s", what, err.msg);
    return pw_lm_loss(logp, b->weights, b->targets, b->B * b->T);
}

/* Validation loss: -sum log p over every response target of the validation set divided by
 * their number, each rank taking its block of the set. */
static double valid_loss(PwTrainer *t, PwBatch *b, int *idx, float *logp)
{
    if (!t->have_valid) return NAN;
    int64_t s, c;
    pw_data_shard(t->valid.n, t->nranks, t->rank, &s, &c);
    double acc[2] = {0.0, 0.0};
    PwErr err;
    for (int64_t i = s; i < s + c; i += t->local_max) {
        int n = (int)(s + c - i < t->local_max ? s + c - i : t->local_max);
        for (int j = 0; j < n; j++) idx[j] = (int)i + j;
        /* Normaliser 1: every response target weighs 1, so the loss is the sum. */
        if (pw_batch_build(b, &t->valid, idx, n, 0, 1.0, &err))
            pw_comm_fatal(__FILE__, __LINE__, "sft validation: %s", err.msg);
        acc[0] += lm_forward(t, b, logp, "sft validation");
        acc[1] += b->count;
    }
    pw_train_sum(t, acc, 2);
    return acc[1] > 0 ? acc[0] / acc[1] : NAN;
}

/* One optimizer step on the global batch of `step`: *loss gets the batch's mean loss; returns
 * what pw_train_optimize says (0 stepped, 1 skipped, -1 stop). */
static int train_step(PwTrainer *t, long step, PwBatch *b, int *rows, float *logp, double *out)
{
    int64_t s, c;
    pw_train_rows(t, step, rows, &s, &c);
    /* Width and normaliser come from the global rows, so every rank pads alike and the
     * per-rank losses add up to the loss of the whole batch. */
    int T = pw_data_width(&t->train, rows, t->a.batch);
    double norm = pw_data_response_targets(&t->train, rows, t->a.batch);
    PwErr err;
    if (pw_batch_build(b, &t->train, rows + s, (int)c, T, norm, &err))
        pw_comm_fatal(__FILE__, __LINE__, "sft: %s", err.msg);
    if (pw_model_zero_grad(t->model, &err)) pw_comm_fatal(__FILE__, __LINE__, "sft: %s", err.msg);
    double loss = 0.0;
    PwGradSync *gs = pw_grads_begin(&t->w, t->role, t->model, t->a.grad_bucket);
    if (c == 0) pw_grads_idle(t->model, gs);
    if (c > 0) {
        loss = lm_forward(t, b, logp, "sft");
        /* d(-sum w logp) / d logp = -w, over the whole (B,T) the forward gathered; the logp
         * buffer is free again and takes it */
        for (int i = 0; i < b->B * b->T; i++) logp[i] = -b->weights[i];
        PwOutputGrads g = {.dlogp = logp, .ready = gs ? pw_grad_sync_ready : NULL,
                           .ready_ctx = gs};
        if (pw_model_backward(t->model, &g, &err))
            pw_comm_fatal(__FILE__, __LINE__, "sft: %s", err.msg);
    }
    pw_grads_even(t->model, c > 0 ? 0 : 1, "sft"); /* a global batch has rows */
    pw_train_sum(t, &loss, 1);
    *out = loss;
    return pw_train_optimize(t, gs, step, loss, "the mean next-token loss of the global batch");
}

int pw_sft_main(int argc, char **argv, MPI_Comm comm, int nranks, int local_rank)
{
    PwTrainer t = {.mode = "sft", .shape = PW_DATA_SFT, .role = PW_ROLE_ACTOR, .heads = PW_HEAD_LM};
    int code;
    if (!pw_train_open(&t, argc, argv, comm, nranks, local_rank, &code)) return code;
    int *rows = malloc((size_t)(t.a.batch + t.local_max) * sizeof *rows);
    float *logp = malloc((size_t)t.maxB * t.maxT * sizeof *logp);
    if (!rows || !logp) pw_comm_fatal(__FILE__, __LINE__, "out of memory");
    PwBatch b = {0};
    double first = valid_loss(&t, &b, rows, logp), last = first, sum = 0.0, tstep = 0.0;
    long nsum = 0, skipped = 0;
    int stopped = 0;
    /* the count of skipped steps only where steps can be skipped (runtime.on_nonfinite) */
    static const char *const keys[] = {"train/loss", "valid/loss", "lr", "time/step_s",
                                       "runtime/skipped_steps"};
    int nkeys = t.a.skip_nonfinite ? 5 : 4;
    /* bit i: key i has no value; the first line has no training step yet */
    unsigned none = t.have_valid ? 0u : 1u << 1;
    double v0[] = {NAN, first, 0.0, NAN, 0.0};
    pw_train_log(&t, 0, keys, v0, nkeys, none | 1u << 0 | 1u << 3);
    for (long step = 0; step < t.a.steps; step++) {
        double t0 = pw_now(), loss;
        int st = train_step(&t, step, &b, rows, logp, &loss);
        if (st < 0) { /* said by rank 0; nothing is saved over the last good model */
            stopped = 1;
            break;
        }
        skipped += st;
        sum += loss;
        tstep += pw_now() - t0;
        nsum++;
        long done = step + 1;
        if ((t.a.eval_every > 0 && done % t.a.eval_every == 0) || done == t.a.steps) {
            PwLrSchedule sc = {t.a.decay, t.a.lr, t.a.min_lr, t.a.warmup, t.a.steps};
            last = valid_loss(&t, &b, rows, logp);
            double v[] = {sum / nsum, last, pw_lr_at(&sc, step), tstep / nsum, (double)skipped};
            pw_train_log(&t, done, keys, v, nkeys, none);
            if (t.rank == 0) {
                printf("sft step %ld: train/loss %.4f valid/loss %.4f (%.1f ms/step)\n", done,
                       sum / nsum, last, 1e3 * tstep / nsum);
                fflush(stdout);
            }
            sum = tstep = 0.0;
            nsum = skipped = 0;
        }
    }
    if (!stopped) pw_train_save(&t);
    if (t.rank == 0 && !stopped)
        printf("ppo_world sft: done: %ld steps, valid/loss %.4f (start %.4f), saved %s\n",
               t.a.steps, last, first, t.a.out);
    pw_batch_free(&b);
    free(rows);
    free(logp);
    pw_train_end(&t);
    return stopped ? 1 : 0;
}
