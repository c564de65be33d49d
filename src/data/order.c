/* order.c: which rows go where: the train/valid split, the per-epoch shuffle, the training
 * stream of global batches, and the block of a global batch each data-parallel rank takes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pw_data.h"
#include "pw_rng.h"

void pw_data_epoch_order(int *perm, int n, uint64_t seed, int64_t epoch)
{
    pw_rng_shuffle(perm, n, pw_rng_tuple(seed, 0x0e90c4ull, (uint64_t)epoch));
}

/* ------------------------------------------------------------------------------ subsets */

int pw_dataset_subset(PwDataset *out, const PwDataset *src, const int *idx, int n, PwErr *err)
{
    memset(out, 0, sizeof *out);
    out->shape = src->shape;
    out->nresp = src->nresp;
    out->pad_id = src->pad_id;
    snprintf(out->path, sizeof out->path, "%s", src->path);
    size_t ntok = 0;
    for (int i = 0; i < n; i++) {
        if (idx[i] < 0 || idx[i] >= src->n)
            return pw_errf(err, "%s: subset row %d out of range [0, %d)", src->path, idx[i],
                           src->n);
        ntok += (size_t)src->prompt_len[idx[i]];
        for (int k = 0; k < src->nresp; k++) ntok += (size_t)src->resp_len[idx[i] * src->nresp + k];
    }
    size_t nr = (size_t)n * (size_t)src->nresp;
    out->prompt_off = malloc(((size_t)n + 1) * sizeof(int));
    out->prompt_len = malloc(((size_t)n + 1) * sizeof(int));
    out->resp_off = malloc((nr + 1) * sizeof(int));
    out->resp_len = malloc((nr + 1) * sizeof(int));
    out->tok = malloc((ntok + 1) * sizeof(int));
    out->line = malloc(((size_t)n + 1) * sizeof(int));
    if (!out->prompt_off || !out->prompt_len || !out->resp_off || !out->resp_len || !out->tok ||
        !out->line) {
        pw_dataset_free(out);
        return pw_errf(err, "%s: out of memory", src->path);
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        int r = idx[i], total = src->prompt_len[r];
        out->prompt_off[i] = (int)at;
        out->prompt_len[i] = src->prompt_len[r];
        out->line[i] = src->line[r];
        memcpy(out->tok + at, src->tok + src->prompt_off[r], (size_t)src->prompt_len[r] * sizeof(int));
        at += (size_t)src->prompt_len[r];
        for (int k = 0; k < src->nresp; k++) {
            int s = r * src->nresp + k, t = i * src->nresp + k;
            out->resp_off[t] = (int)at;
            out->resp_len[t] = src->resp_len[s];
            memcpy(out->tok + at, src->tok + src->resp_off[s], (size_t)src->resp_len[s] * sizeof(int));
            at += (size_t)src->resp_len[s];
            if (src->prompt_len[r] + src->resp_len[s] > total)
                total = src->prompt_len[r] + src->resp_len[s];
        }
        if (total > out->max_total) out->max_total = total;
    }
    out->ntok = at;
    out->n = n;
    out->lines = n;
    return 0;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int pw_dataset_split(const PwDataset *all, double valid_fraction, uint64_t seed,
                     PwDataset *train, PwDataset *valid, PwErr *err)
{
    memset(train, 0, sizeof *train);
    memset(valid, 0, sizeof *valid);
    if (!(valid_fraction > 0.0 && valid_fraction < 1.0))
        return pw_errf(err, "%s: validation fraction %g: expected a number in (0, 1)", all->path,
                       valid_fraction);
    if (all->n < 2)
        return pw_errf(err, "%s: %d example(s): a split needs at least 2", all->path, all->n);
    int n = all->n;
    int nv = (int)lround(valid_fraction * n);
    if (nv < 1) nv = 1;
    if (nv > n - 1) nv = n - 1;
    int *perm = malloc((size_t)n * sizeof *perm);
    if (!perm) return pw_errf(err, "out of memory");
    pw_rng_shuffle(perm, n, pw_rng_tuple(seed, 0x5b117ull, (uint64_t)n));
    /* Both parts back in file order: a split must not also be a shuffle of the training set. */
    qsort(perm, (size_t)nv, sizeof *perm, cmp_int);
    qsort(perm + nv, (size_t)(n - nv), sizeof *perm, cmp_int);
    int rc = pw_dataset_subset(valid, all, perm, nv, err);
    if (!rc) rc = pw_dataset_subset(train, all, perm + nv, n - nv, err);
    free(perm);
    if (rc) {
        pw_dataset_free(train);
        pw_dataset_free(valid);
        return -1;
    }
    snprintf(valid->path, sizeof valid->path, "%.500s[valid]", all->path);
    snprintf(train->path, sizeof train->path, "%.500s[train]", all->path);
    return 0;
}

/* ------------------------------------------------------------------------------ sampler */

int pw_sampler_init(PwSampler *s, int n, uint64_t seed, PwErr *err)
{
    memset(s, 0, sizeof *s);
    if (n < 1) return pw_errf(err, "a sampler needs at least one row");
    s->perm = malloc((size_t)n * sizeof *s->perm);
    if (!s->perm) return pw_errf(err, "out of memory");
    s->n = n;
    s->seed = seed;
    s->epoch = -1;
    return 0;
}

void pw_sampler_free(PwSampler *s)
{
    free(s->perm);
    memset(s, 0, sizeof *s);
}

int pw_sampler_row(PwSampler *s, int64_t p)
{
    int64_t epoch = p / s->n;
    if (epoch != s->epoch) {
        pw_data_epoch_order(s->perm, s->n, s->seed, epoch);
        s->epoch = epoch;
    }
    return s->perm[p % s->n];
}

void pw_sampler_batch(PwSampler *s, int64_t step, int B, int *rows)
{
    for (int i = 0; i < B; i++) rows[i] = pw_sampler_row(s, step * (int64_t)B + i);
}

/* ----------------------------------------------------------------------------- sharding */

void pw_data_shard(int64_t nrows, int nranks, int rank, int64_t *start, int64_t *count)
{
    int64_t base = nrows / nranks, extra = nrows % nranks;
    *count = base + (rank < extra ? 1 : 0);
    *start = rank * base + (rank < extra ? rank : extra);
}
