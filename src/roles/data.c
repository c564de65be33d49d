/* data.c: the prompt data set (JSONL of token ids, or text through a tokenizer), its per-epoch
 * order, the random streams of the roles, and the rollout rows every role builds for its block. */
#include <stdlib.h>
#include <string.h>

#include "pw_algo.h"
#include "pw_data.h"
#include "pw_rng.h"
#include "roles.h"

void *pw_roles_alloc(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) pw_comm_fatal(__FILE__, __LINE__, "out of memory (%zu bytes)", bytes);
    return p;
}

/* ------------------------------------------------------------------------------ prompts */

int pw_prompts_load(PwPrompts *d, const char *key, const char *path, const PwTokenizer *tok,
                    const char *tmpl, int vocab, int max_len, int context, PwErr *err)
{
    memset(d, 0, sizeof *d);
    d->perm_epoch = -1;
    PwDataOpts o = {PW_DATA_PROMPTS, tok, max_len, 0, 0, PW_OVERLONG_DROP, vocab, tmpl};
    PwErr e;
    if (pw_dataset_load(&d->ds, path, &o, &e)) return pw_errf(err, "%s: %s", key, e.msg);
    int rc = 0;
    for (int i = 0; i < d->ds.n && !rc; i++)
        if (d->ds.prompt_len[i] > context)
            rc = pw_errf(err, "%s: %s:%d: the prompt has %d tokens but the model context leaves "
                         "room for at most %d (n_positions minus generation.max_new_tokens); "
                         "lower data.max_prompt_len to skip it", key, path, d->ds.line[i],
                         d->ds.prompt_len[i], context);
    if (!rc) d->perm = malloc((size_t)d->ds.n * sizeof *d->perm);
    if (!rc && !d->perm) rc = pw_errf(err, "%s: out of memory", path);
    if (rc) pw_prompts_free(d);
    return rc;
}

void pw_prompts_free(PwPrompts *d)
{
    pw_dataset_free(&d->ds);
    free(d->perm);
    memset(d, 0, sizeof *d);
}

int pw_prompts_pick(PwPrompts *d, uint64_t seed, int64_t episode)
{
    int n = d->ds.n;
    int64_t epoch = episode / n;
    if (epoch != d->perm_epoch) { /* Fisher-Yates from (seed, epoch): the same on every rank */
        pw_rng_shuffle(d->perm, n, pw_rng_tuple(seed, 0x5eedda7aull, (uint64_t)epoch));
        d->perm_epoch = epoch;
    }
    return d->perm[episode % n];
}

/* --------------------------------------------------------------------------------- rows */

void pw_rows_free(PwRows *r)
{
    free(r->prompt);
    free(r->pmask);
    free(r->tokens);
    free(r->rmask);
    free(r->lengths);
    free(r->stopped);
    free(r->seq);
    free(r->smask);
    free(r->tgt);
    memset(r, 0, sizeof *r);
}

int pw_rows_prompts(PwRows *r, PwPrompts *d, uint64_t seed, int64_t step, int N, int G,
                    int64_t r0, int n, int P, int R)
{
    pw_rows_free(r);
    r->r0 = r0;
    r->n = n;
    r->P = P;
    r->R = R;
    r->T = P + R;
    size_t np = (size_t)n * P, nr = (size_t)n * R, nt = (size_t)n * r->T;
    r->prompt = pw_roles_alloc(np * sizeof(int));
    r->pmask = pw_roles_alloc(np * sizeof(int));
    r->tokens = pw_roles_alloc(nr * sizeof(int));
    r->rmask = pw_roles_alloc(nr * sizeof(float));
    r->lengths = pw_roles_alloc((size_t)n * sizeof(int));
    r->stopped = pw_roles_alloc((size_t)n * sizeof(int));
    r->seq = pw_roles_alloc(nt * sizeof(int));
    r->smask = pw_roles_alloc(nt * sizeof(int));
    r->tgt = pw_roles_alloc(nt * sizeof(int));
    for (int b = 0; b < n; b++) {
        /* a step draws N / G prompts; global row g holds prompt g / G of the draw (G = 1: row
         * g is draw g, as without groups) */
        int64_t g = r0 + b;
        int id = N > 0 ? pw_prompts_pick(d, seed, step * (int64_t)(N / G) + g / G) : (int)g;
        int len = d->ds.prompt_len[id], pad = P - len;
        for (int t = 0; t < P; t++) {
            r->prompt[(size_t)b * P + t] =
                t < pad ? d->ds.pad_id : d->ds.tok[d->ds.prompt_off[id] + t - pad];
            r->pmask[(size_t)b * P + t] = t >= pad;
        }
    }
    return 0;
}

void pw_rows_finish(PwRows *r, int stop_id)
{
    int P = r->P, R = r->R, T = r->T;
    pw_response_mask(r->rmask, r->lengths, r->stopped, r->tokens, r->n, R, stop_id);
    for (int b = 0; b < r->n; b++) {
        int len = r->lengths[b];
        int *seq = r->seq + (size_t)b * T, *sm = r->smask + (size_t)b * T,
            *tg = r->tgt + (size_t)b * T;
        for (int t = 0; t < P; t++) {
            seq[t] = r->prompt[(size_t)b * P + t];
            sm[t] = r->pmask[(size_t)b * P + t];
        }
        for (int t = 0; t < R; t++) {
            seq[P + t] = t < len ? r->tokens[(size_t)b * R + t] : 0;
            sm[P + t] = t < len;
        }
        for (int t = 0; t < T; t++) tg[t] = -1;
        for (int t = 0; t < len; t++) tg[P - 1 + t] = r->tokens[(size_t)b * R + t];
    }
}

void pw_rows_forward(const PwRun *run, PwModel *m, const PwRows *r, int i0, int nb, float *logp,
                     float *entropy, float *value, float *score)
{
    PwErr err;
    int T = r->T;
    size_t o = (size_t)i0 * T;
    /* the response token t is predicted at column P - 1 + t; the targets are -1 after a row's
     * end, so the gathered outputs are 0 there */
    PwModelInput b = {r->seq + o, r->smask + o, r->tgt + o, nb, T, (float)run->s.temperature};
    PwOutputs out = {.col0 = r->P - 1, .width = r->R, .logp = logp, .entropy = entropy,
                     .value = value, .score = score};
    if (pw_model_forward(m, &b, &out, &err))
        pw_comm_fatal(__FILE__, __LINE__, "forward of rows %lld..%lld: %s",
                      (long long)(r->r0 + i0), (long long)(r->r0 + i0 + nb - 1), err.msg);
}

void pw_rows_backward(PwModel *m, const float *dlogp, const float *dentropy, const float *dvalue,
                      PwGradSync *gs, const char *who)
{
    PwErr err;
    PwOutputGrads g = {.dlogp = dlogp, .dentropy = dentropy, .dvalue = dvalue,
                       .ready = gs ? pw_grad_sync_ready : NULL, .ready_ctx = gs};
    if (pw_model_backward(m, &g, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s: backward: %s", who, err.msg);
}

int pw_chunks(int n, int minibatches, int micro, int **start, int **count)
{
    int k = 0;
    for (int mb = 0; mb < minibatches; mb++) k += (int)((pw_block(n, minibatches, mb).count +
                                                          micro - 1) / micro);
    *start = pw_roles_alloc((size_t)k * sizeof(int));
    *count = pw_roles_alloc((size_t)k * sizeof(int));
    k = 0;
    for (int mb = 0; mb < minibatches; mb++) {
        PwBlock blk = pw_block(n, minibatches, mb);
        for (int64_t i = 0; i < blk.count; i += micro, k++) {
            (*start)[k] = (int)(blk.start + i);
            (*count)[k] = (int)(blk.count - i < micro ? blk.count - i : micro);
        }
    }
    return k;
}

void pw_minibatch_order(const PwRun *r, const PwRows *rows, int epoch, int *perm)
{
    if (epoch == 0) {
        for (int i = 0; i < rows->n; i++) perm[i] = i;
        return;
    }
    /* The block's first global row names the block: with the same data-parallel degree every
     * placement has the same blocks, hence the same orders. */
    pw_rng_shuffle(perm, rows->n,
                   pw_rng_tuple(pw_rng_tuple(r->s.seed, 0x6d696e69ull, (uint64_t)r->step),
                                (uint64_t)epoch, (uint64_t)rows->r0));
}

static void gather_rows(void *dst, const void *src, const int *perm, int n, size_t row_bytes)
{
    for (int i = 0; i < n; i++)
        memcpy((char *)dst + (size_t)i * row_bytes, (const char *)src + (size_t)perm[i] * row_bytes,
               row_bytes);
}

void pw_rows_permuted(PwRows *dst, const PwRows *src, const int *perm)
{
    pw_rows_free(dst);
    int n = src->n, T = src->T, R = src->R;
    *dst = (PwRows){.r0 = src->r0, .n = n, .P = src->P, .R = R, .T = T};
    dst->rmask = pw_roles_alloc((size_t)n * R * sizeof(float));
    dst->lengths = pw_roles_alloc((size_t)n * sizeof(int));
    dst->stopped = pw_roles_alloc((size_t)n * sizeof(int));
    dst->seq = pw_roles_alloc((size_t)n * T * sizeof(int));
    dst->smask = pw_roles_alloc((size_t)n * T * sizeof(int));
    dst->tgt = pw_roles_alloc((size_t)n * T * sizeof(int));
    gather_rows(dst->rmask, src->rmask, perm, n, (size_t)R * sizeof(float));
    gather_rows(dst->lengths, src->lengths, perm, n, sizeof(int));
    gather_rows(dst->stopped, src->stopped, perm, n, sizeof(int));
    gather_rows(dst->seq, src->seq, perm, n, (size_t)T * sizeof(int));
    gather_rows(dst->smask, src->smask, perm, n, (size_t)T * sizeof(int));
    gather_rows(dst->tgt, src->tgt, perm, n, (size_t)T * sizeof(int));
}

void pw_permute_f32(float *dst, const float *src, const int *perm, int n, int R)
{
    gather_rows(dst, src, perm, n, (size_t)R * sizeof(float));
}
