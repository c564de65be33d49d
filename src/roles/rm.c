/* rm.c: `ppo_world rm`: reward-model training with the Bradley-Terry loss on (chosen, rejected)
 * pairs, L = -log sigmoid(s_chosen - s_rejected), data parallel over every rank of the job. */
#include <math.h>
#include <stdlib.h>

#include "pw_train.h"
#include "train.h"

/* Scores of a prefs batch (2n rows: chosen then rejected) into sc (2n). */
static void score_batch(PwTrainer *t, const PwDataset *d, PwBatch *b, const int *idx, int n,
                        int T, float *sc)
{
    PwErr err;
    if (pw_batch_build(b, d, idx, n, T, 0.0, &err))
        pw_comm_fatal(__FILE__, __LINE__, "rm: %s", err.msg);
    PwModelInput in = {b->tokens, b->mask, NULL, b->B, b->T, 1.0f};
    PwOutputs out = {.score = sc};
    if (pw_model_forward(t->model, &in, &out, &err))
        pw_comm_fatal(__FILE__, __LINE__, "rm: %s", err.msg);
}

/* Validation loss (mean over pairs) and accuracy (s_chosen > s_rejected; ties are wrong). */
static void validate(PwTrainer *t, PwBatch *b, int *idx, float *sc, double *loss, double *acc)
{
    *loss = *acc = NAN;
    if (!t->have_valid) return;
    int64_t s, c;
    pw_data_shard(t->valid.n, t->nranks, t->rank, &s, &c);
    double sums[3] = {0.0, 0.0, 0.0}; /* loss sum, correct pairs, pairs */
    for (int64_t i = s; i < s + c; i += t->local_max) {
        int n = (int)(s + c - i < t->local_max ? s + c - i : t->local_max);
        for (int j = 0; j < n; j++) idx[j] = (int)i + j;
        score_batch(t, &t->valid, b, idx, n, 0, sc);
        PwBtStats st;
        pw_bt_loss(&st, NULL, NULL, sc, sc + n, (size_t)n, 1.0); /* normaliser 1: the sum */
        sums[0] += st.loss;
        sums[1] += st.accuracy * st.count;
        sums[2] += st.count;
    }
    pw_train_sum(t, sums, 3);
    if (sums[2] > 0) {
        *loss = sums[0] / sums[2];
        *acc = sums[1] / sums[2];
    }
}

/* One optimizer step on the global batch of `step`; out = {loss, accuracy} of the batch.
 * Returns what pw_train_optimize says (0 stepped, 1 skipped, -1 stop). */
static int train_step(PwTrainer *t, long step, PwBatch *b, int *rows, float *sc,
                      float *dscore, double *out)
{
    int64_t s, c;
    pw_train_rows(t, step, rows, &s, &c);
    int n = (int)c, B = t->a.batch;
    PwErr err;
    if (pw_model_zero_grad(t->model, &err)) pw_comm_fatal(__FILE__, __LINE__, "rm: %s", err.msg);
    double st2[2] = {0.0, 0.0};
    PwGradSync *gs = pw_grads_begin(&t->w, t->role, t->model, t->a.grad_bucket);
    if (n == 0) pw_grads_idle(t->model, gs);
    if (n > 0) {
        /* The global width and the global pair count as normaliser: the per-rank losses and
         * gradients add up to those of the whole batch. */
        score_batch(t, &t->train, b, rows + s, n, pw_data_width(&t->train, rows, B), sc);
        PwBtStats st;
        pw_bt_loss(&st, dscore, dscore + n, sc, sc + n, (size_t)n, (double)B);
        PwOutputGrads g = {.dscore = dscore, .ready = gs ? pw_grad_sync_ready : NULL,
                           .ready_ctx = gs};
        if (pw_model_backward(t->model, &g, &err))
            pw_comm_fatal(__FILE__, __LINE__, "rm: %s", err.msg);
        st2[0] = st.loss;
        st2[1] = st.accuracy * st.count / B;
    }
    pw_grads_even(t->model, n > 0 ? 0 : 1, "rm"); /* a global batch has pairs */
    pw_train_sum(t, st2, 2);
    out[0] = st2[0];
    out[1] = st2[1];
    return pw_train_optimize(t, gs, step, st2[0], "the Bradley-Terry loss of the global batch");
}

int pw_rm_main(int argc, char **argv, MPI_Comm comm, int nranks, int local_rank)
{
    PwTrainer t = {.mode = "rm", .shape = PW_DATA_PREFS, .role = PW_ROLE_REWARD,
                   .heads = PW_HEAD_SCORE};
    int code;
    if (!pw_train_open(&t, argc, argv, comm, nranks, local_rank, &code)) return code;
    int *rows = malloc((size_t)(t.a.batch + t.local_max) * sizeof *rows);
    float *dscore = malloc((size_t)(2 * t.local_max) * sizeof *dscore);
    float *sc = malloc((size_t)(2 * t.local_max) * sizeof *sc); /* scores of a batch */
    if (!rows || !dscore || !sc) pw_comm_fatal(__FILE__, __LINE__, "out of memory");
    PwBatch b = {0};
    double loss0, acc0, loss, acc, sum[2] = {0.0, 0.0}, tstep = 0.0;
    long nsum = 0, skipped = 0;
    int stopped = 0;
    validate(&t, &b, rows, sc, &loss0, &acc0);
    loss = loss0;
    acc = acc0;
    /* the count of skipped steps only where steps can be skipped (runtime.on_nonfinite) */
    static const char *const keys[] = {"train/loss", "train/accuracy", "valid/loss",
                                       "valid/accuracy", "lr", "time/step_s",
                                       "runtime/skipped_steps"};
    int nkeys = t.a.skip_nonfinite ? 7 : 6;
    /* bit i: key i has no value; the first line has no training step yet */
    unsigned none = t.have_valid ? 0u : 1u << 2 | 1u << 3;
    double v0[] = {NAN, NAN, loss0, acc0, 0.0, NAN, 0.0};
    pw_train_log(&t, 0, keys, v0, nkeys, none | 1u << 0 | 1u << 1 | 1u << 5);
    for (long step = 0; step < t.a.steps; step++) {
        double t0 = pw_now(), out[2];
        int st = train_step(&t, step, &b, rows, sc, dscore, out);
        if (st < 0) { /* said by rank 0; nothing is saved over the last good model */
            stopped = 1;
            break;
        }
        skipped += st;
        tstep += pw_now() - t0;
        sum[0] += out[0];
        sum[1] += out[1];
        nsum++;
        long done = step + 1;
        if ((t.a.eval_every > 0 && done % t.a.eval_every == 0) || done == t.a.steps) {
            PwLrSchedule lrs = {t.a.decay, t.a.lr, t.a.min_lr, t.a.warmup, t.a.steps};
            validate(&t, &b, rows, sc, &loss, &acc);
            double v[] = {sum[0] / nsum, sum[1] / nsum, loss, acc, pw_lr_at(&lrs, step),
                          tstep / nsum, (double)skipped};
            pw_train_log(&t, done, keys, v, nkeys, none);
            if (t.rank == 0) {
                printf("rm step %ld: train/loss %.4f valid/loss %.4f valid/accuracy %.3f "
                       "(%.1f ms/step)\n", done, sum[0] / nsum, loss, acc, 1e3 * tstep / nsum);
                fflush(stdout);
            }
            sum[0] = sum[1] = tstep = 0.0;
            nsum = skipped = 0;
        }
    }
    if (!stopped) pw_train_save(&t);
    if (t.rank == 0 && !stopped)
        printf("ppo_world rm: done: %ld steps, valid/loss %.4f valid/accuracy %.3f (start %.4f, "
               "%.3f), saved %s\n", t.a.steps, loss, acc, loss0, acc0, t.a.out);
    pw_batch_free(&b);
    free(rows);
    free(dscore);
    free(sc);
    pw_train_end(&t);
    return stopped ? 1 : 0;
}
