/* batch.c: left-padded (B,T) batches of data-set rows: token ids and mask, and for SFT the
 * next-token targets and the response-only loss weights. */
#include <stdlib.h>
#include <string.h>

#include "pw_data.h"

void pw_batch_free(PwBatch *b)
{
    free(b->tokens);
    free(b->mask);
    free(b->targets);
    free(b->weights);
    free(b->prompt_len);
    free(b->len);
    memset(b, 0, sizeof *b);
}

static int row_len(const PwDataset *d, int r, int k)
{
    return d->prompt_len[r] + (d->nresp ? d->resp_len[r * d->nresp + k] : 0);
}

int pw_data_width(const PwDataset *d, const int *idx, int n)
{
    int w = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < (d->nresp ? d->nresp : 1); k++)
            if (row_len(d, idx[i], k) > w) w = row_len(d, idx[i], k);
    return w;
}

double pw_data_response_targets(const PwDataset *d, const int *idx, int n)
{
    double c = 0.0;
    if (d->shape == PW_DATA_SFT)
        for (int i = 0; i < n; i++) c += d->resp_len[idx[i]];
    return c;
}

/* Grows the buffers to B rows of T; keeps them between batches of a training loop. */
static int reserve(PwBatch *b, int B, int T, int sft)
{
    size_t need = (size_t)B * (size_t)T;
    if (need > (size_t)b->cap || (sft && !b->targets && need)) {
        size_t cap = need > (size_t)b->cap ? need : (size_t)b->cap;
        free(b->tokens);
        free(b->mask);
        free(b->targets);
        free(b->weights);
        b->tokens = malloc(cap * sizeof(int));
        b->mask = malloc(cap * sizeof(int));
        b->targets = sft ? malloc(cap * sizeof(int)) : NULL;
        b->weights = sft ? malloc(cap * sizeof(float)) : NULL;
        if (!b->tokens || !b->mask || (sft && (!b->targets || !b->weights))) return -1;
        b->cap = (int)cap;
    }
    if (B > b->capB) {
        free(b->prompt_len);
        free(b->len);
        b->prompt_len = malloc((size_t)B * sizeof(int));
        b->len = malloc((size_t)B * sizeof(int));
        if (!b->prompt_len || !b->len) return -1;
        b->capB = B;
    }
    return 0;
}

/* Row `row` of the batch := prompt of example r then its response k, right-aligned. */
static void place(PwBatch *b, const PwDataset *d, int row, int r, int k)
{
    int T = b->T, P = d->prompt_len[r];
    int R = d->nresp ? d->resp_len[r * d->nresp + k] : 0;
    int pad = T - P - R;
    int *tok = b->tokens + (size_t)row * T, *mask = b->mask + (size_t)row * T;
    for (int t = 0; t < pad; t++) {
        tok[t] = -1; /* filled with the pad id by the caller */
        mask[t] = 0;
    }
    memcpy(tok + pad, d->tok + d->prompt_off[r], (size_t)P * sizeof(int));
    if (R) memcpy(tok + pad + P, d->tok + d->resp_off[r * d->nresp + k], (size_t)R * sizeof(int));
    for (int t = pad; t < T; t++) mask[t] = 1;
    b->prompt_len[row] = P;
    b->len[row] = P + R;
}

int pw_batch_build(PwBatch *b, const PwDataset *d, const int *idx, int n, int T,
                   double normaliser, PwErr *err)
{
    int width = pw_data_width(d, idx, n);
    if (T <= 0) T = width;
    if (width > T)
        return pw_errf(err, "%s: a row of %d tokens does not fit a batch of width %d", d->path,
                       width, T);
    for (int i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= d->n)
            return pw_errf(err, "%s: row %d out of range [0, %d)", d->path, idx[i], d->n);
    int sft = d->shape == PW_DATA_SFT;
    int B = d->shape == PW_DATA_PREFS ? 2 * n : n;
    if (reserve(b, B, T, sft)) {
        pw_batch_free(b);
        return pw_errf(err, "%s: out of memory for a batch of %d x %d", d->path, B, T);
    }
    b->B = B;
    b->T = T;
    for (int i = 0; i < n; i++) {
        if (d->shape == PW_DATA_PREFS) {
            place(b, d, i, idx[i], 0);
            place(b, d, n + i, idx[i], 1);
        } else {
            place(b, d, i, idx[i], 0);
        }
    }
    /* The pad id sits under mask 0 and is never attended; any valid id would do, the
     * tokenizer's PAD is what a reader of a dumped batch expects to see. */
    for (size_t i = 0; i < (size_t)B * T; i++)
        if (b->tokens[i] < 0) b->tokens[i] = d->pad_id;
    b->count = 0.0;
    if (!sft) return 0;
    b->count = pw_data_response_targets(d, idx, n);
    double norm = normaliser > 0 ? normaliser : b->count;
    float w = norm > 0 ? (float)(1.0 / norm) : 0.0f;
    for (int i = 0; i < B; i++) {
        int *tok = b->tokens + (size_t)i * T, *tg = b->targets + (size_t)i * T;
        float *wt = b->weights + (size_t)i * T;
        int first = T - b->len[i];                 /* first real column */
        int resp0 = first + b->prompt_len[i];      /* first response column */
        for (int t = 0; t < T; t++) {
            /* The target at t is token t+1; it is a response target when t+1 >= resp0. */
            int real = t >= first && t + 1 < T;
            tg[t] = real ? tok[t + 1] : -1;
            wt[t] = (real && t + 1 >= resp0) ? w : 0.0f;
        }
    }
    return 0;
}
