/* sample.c: how one row of next-token logits becomes a token: temperature, top-k, top-p,
 * a draw from the row's own random stream, and the log-probs the generator reports; and n rows
 * at once for the kernel table (pw_sample.h). */
#include "pw_sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "pw_rng.h"

int pw_sample_config_check(const PwSampleConfig *sc, PwErr *err)
{
    if (!(sc->temperature > 0.0f) || isinf(sc->temperature))
        return pw_errf(err, "sampling temperature must be positive and finite, got %g",
                       (double)sc->temperature);
    if (sc->top_k < 0)
        return pw_errf(err, "sampling top_k must be >= 0 (0 = off), got %d", sc->top_k);
    if (!(sc->top_p > 0.0f && sc->top_p <= 1.0f))
        return pw_errf(err, "sampling top_p must be in (0, 1] (1 = off), got %g",
                       (double)sc->top_p);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* random streams: the project's splitmix64 (pw_rng.h), so one seed reads the same on every
 * machine and compiler */

uint64_t pw_sample_stream(uint64_t seed, uint64_t id)
{
    /* mixing the seed before the id keeps (seed, id) and (seed + 1, id - 1) apart */
    return pw_rng_mix(pw_rng_mix(seed + 0x9e3779b97f4a7c15ULL) ^ (id * 0xd1b54a32d192ed03ULL + 1));
}

double pw_sample_uniform(uint64_t *state) { return pw_rng_uniform(state); }

/* ------------------------------------------------------------------------------------------ */
/* ordering token ids by key, descending, ties by id: a strict total order, so that the kept
 * sets and the walk of top-p never depend on how a sort happened to treat equal keys */

static int before(int a, int b, const double *key)
{
    return key[a] > key[b] || (key[a] == key[b] && a < b);
}

static void swap_ids(int *id, int i, int j)
{
    int t = id[i];
    id[i] = id[j];
    id[j] = t;
}

/* Hoare partition of id[lo..hi] around the median of three; returns (i, j) such that
 * id[lo..j] come before id[i..hi] and anything between equals the pivot. */
static void partition(int *id, int lo, int hi, const double *key, int *pi, int *pj)
{
    int mid = lo + (hi - lo) / 2;
    if (before(id[mid], id[lo], key)) swap_ids(id, mid, lo);
    if (before(id[hi], id[lo], key)) swap_ids(id, hi, lo);
    if (before(id[hi], id[mid], key)) swap_ids(id, hi, mid);
    int pivot = id[mid], i = lo, j = hi;
    while (i <= j) {
        while (before(id[i], pivot, key)) i++;
        while (before(pivot, id[j], key)) j--;
        if (i <= j) swap_ids(id, i++, j--);
    }
    *pi = i;
    *pj = j;
}

/* Leave in id[k] the element that belongs there in sorted order, the ones before it in id[0..k). */
static void select_kth(int *id, int n, int k, const double *key)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int i, j;
        partition(id, lo, hi, key, &i, &j);
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return;
    }
}

static void sort_ids(int *id, int lo, int hi, const double *key)
{
    while (hi - lo > 16) {
        int i, j;
        partition(id, lo, hi, key, &i, &j);
        /* recurse into the smaller side so the stack stays O(log n) */
        if (j - lo < hi - i) {
            sort_ids(id, lo, j, key);
            lo = i;
        } else {
            sort_ids(id, i, hi, key);
            hi = j;
        }
    }
    for (int a = lo + 1; a <= hi; a++)
        for (int b = a; b > lo && before(id[b], id[b - 1], key); b--) swap_ids(id, b, b - 1);
}

/* ------------------------------------------------------------------------------------------ */
/* the distribution and the draw */

int pw_sample_distribution(double *prob, int *work, double *logz_full, const float *logits,
                           int V, const PwSampleConfig *sc)
{
    const double T = sc->temperature;
    /* prob holds the scaled logits first: they are the keys of top-k, and dividing by T > 0
     * keeps their order and their ties */
    double m = -INFINITY;
    for (int v = 0; v < V; v++) {
        prob[v] = (double)logits[v] / T;
        if (prob[v] > m) m = prob[v];
    }
    /* Without top-k the scaled logits are needed no more: each exp is made once, in place
     * (the same values the pass below makes; the exps were half the sampler's time on the CPU
     * at a vocabulary of 259, PW_PROFILE_OPS of the quickstart's generator) */
    const int topk = sc->top_k > 0 && sc->top_k < V;
    double z = 0.0;
    for (int v = 0; v < V; v++) {
        double e = exp(prob[v] - m);
        z += e;
        if (!topk) prob[v] = e;
    }
    if (logz_full) *logz_full = m + log(z);

    if (topk) {
        for (int v = 0; v < V; v++) work[v] = v;
        select_kth(work, V, sc->top_k - 1, prob);
        double kth = prob[work[sc->top_k - 1]];
        /* from here prob holds unnormalised probabilities exp(y - max), 0 for what top-k
         * dropped; equal logits give equal values, so ties stay ties */
        for (int v = 0; v < V; v++) {
            double y = (double)logits[v] / T;
            prob[v] = y >= kth ? exp(y - m) : 0.0;
        }
    }

    if (sc->top_p < 1.0f) {
        int n = 0;
        double zk = 0.0;
        for (int v = 0; v < V; v++)
            if (prob[v] > 0.0) {
                work[n++] = v;
                zk += prob[v];
            }
        /* Only tokens above (1 - p) / n can be in the nucleus: the tokens from the boundary on
         * carry more than 1 - p between them and none is above the boundary's probability. Half
         * that bound leaves room for rounding; the rest need no sorting. */
        double p = sc->top_p, floor_ = zk * (1.0 - p) / (2.0 * n);
        int c = 0;
        for (int i = 0; i < n; i++)
            if (prob[work[i]] > floor_) swap_ids(work, c++, i);
        sort_ids(work, 0, c - 1, prob);
        double cum = 0.0, boundary = prob[work[c - 1]];
        for (int i = 0; i < c; i++) {
            cum += prob[work[i]] / zk;
            if (cum >= p - PW_SAMPLE_TOP_P_SLACK) {
                boundary = prob[work[i]];
                break;
            }
        }
        for (int v = 0; v < V; v++)
            if (prob[v] < boundary) prob[v] = 0.0;
    }

    double zsum = 0.0;
    int kept = 0;
    for (int v = 0; v < V; v++) {
        zsum += prob[v];
        kept += prob[v] > 0.0;
    }
    for (int v = 0; v < V; v++) prob[v] /= zsum;
    return kept;
}

int pw_sample_pick(const double *prob, int V, double u)
{
    double cum = 0.0;
    int last = -1;
    for (int v = 0; v < V; v++) {
        if (prob[v] <= 0.0) continue;
        cum += prob[v];
        last = v;
        if (u < cum) return v;
    }
    return last;
}

PwSample pw_sample_row(double *prob, int *work, const float *logits, int V,
                       const PwSampleConfig *sc, uint64_t *state)
{
    double logz_full;
    pw_sample_distribution(prob, work, &logz_full, logits, V, sc);
    PwSample s;
    s.token = pw_sample_pick(prob, V, pw_sample_uniform(state));
    s.logp = (float)log(prob[s.token]);
    s.logp_full = (float)((double)logits[s.token] / sc->temperature - logz_full);
    return s;
}

void pw_sample_rows(const float *logits, int ld, int n, int V, const int *rows,
                    const PwSampleConfig *sc, uint64_t *rng, int *token, float *logp,
                    float *logp_full)
{
    if (n <= 0) return;
    double *prob = malloc((size_t)V * sizeof *prob);
    int *work = malloc((size_t)V * sizeof *work);
    if (!prob || !work) { /* a kernel entry has no error to return (pw_ops.h) */
        fprintf(stderr, "pw_sample_rows: out of memory for %d tokens of scratch\n", V);
        abort();
    }
    for (int i = 0; i < n; i++) {
        PwSample s = pw_sample_row(prob, work, logits + (size_t)i * ld, V, sc, &rng[rows[i]]);
        token[i] = s.token;
        logp[i] = s.logp;
        logp_full[i] = s.logp_full;
    }
    free(prob);
    free(work);
}
