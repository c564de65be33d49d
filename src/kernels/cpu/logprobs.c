/* logprobs.c: what PPO and pre-training read off the LM head on the CPU: log-probabilities and
 * entropies of chosen tokens, softmax cross-entropy, and their backward, one row at a time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "pw_bf16.h"
#include "pw_kernels.h"
#include "vecmath.h"

/* What one row of logits x(V) needs so that no softmax row is ever stored: its max m,
 * log Z = log sum exp(x - m), and the entropy H = log Z - E_p[x - m]. */
typedef struct RowStats {
    float max, logz, entropy;
} RowStats;

/* Z and E[x - m] are summed in blocks of this many logits in float (vectorised), the blocks'
 * sums in double. One float running sum over a 50257-logit row loses about 1e-5 of H (and so
 * of every gradient the entropy term reaches); blocks keep the error near float's own, as the
 * GPU's per-thread partials merged in a tree do. */
#define LP_BLOCK 256

static RowStats row_stats(const float *x, int V)
{
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int v = 0; v < V; v++) m = x[v] > m ? x[v] : m;
    double z = 0.0, w = 0.0;
    for (int v0 = 0; v0 < V; v0 += LP_BLOCK) {
        int v1 = v0 + LP_BLOCK < V ? v0 + LP_BLOCK : V;
        float zb = 0.0f, wb = 0.0f;
#pragma omp simd reduction(+ : zb, wb)
        for (int v = v0; v < v1; v++) {
            float e = pw_vexpf(x[v] - m);
            zb += e;
            wb += e * (x[v] - m);
        }
        z += zb;
        w += wb;
    }
    double logz = log(z);
    RowStats s = {m, (float)logz, (float)(logz - w / z)};
    return s;
}

/* dx_v = g ([v = t] - p_v) - h p_v (log p_v + H) for the loss g log p_t + h H, and 0 in the
 * padding columns V..ld-1. dx may be x: x[v] is read before dx[v] is written and nothing else
 * of the row is read afterwards. */
static void row_backward(float *dx, const float *x, const float *stats, int target, float g,
                         float h, int V, int ld)
{
    for (int v = V; v < ld; v++) dx[v] = 0.0f;
    if (target < 0 || (g == 0.0f && h == 0.0f)) {
        for (int v = 0; v < V; v++) dx[v] = 0.0f;
        return;
    }
    RowStats s = stats ? (RowStats){stats[0], stats[1], stats[2]} : row_stats(x, V);
    /* (x - max) - log Z, not x - (max + log Z): logits far from 0 would round the sum */
#pragma omp simd
    for (int v = 0; v < V; v++) {
        float lp = (x[v] - s.max) - s.logz;
        float p = pw_vexpf(lp);
        dx[v] = -p * (g + h * (lp + s.entropy));
    }
    dx[target] += g;
}

/* row i's statistics kept by the forward, or NULL */
static const float *row_kept(const float *stats, int i)
{
    return stats ? stats + (size_t)i * PW_LP_STATS : NULL;
}

void pw_logprobs_forward(float *logp, float *entropy, float *stats, const float *logits,
                         const int *targets, int N, int V, int ld)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        RowStats s = {0.0f, 0.0f, 0.0f};
        if (targets[i] < 0) {
            logp[i] = 0.0f;
            if (entropy) entropy[i] = 0.0f;
        } else {
            const float *x = logits + (size_t)i * ld;
            s = row_stats(x, V);
            logp[i] = (x[targets[i]] - s.max) - s.logz;
            if (entropy) entropy[i] = s.entropy;
        }
        if (stats) {
            float *k = stats + (size_t)i * PW_LP_STATS;
            k[0] = s.max, k[1] = s.logz, k[2] = s.entropy;
        }
    }
}

void pw_logprobs_backward(float *dlogits, const float *logits, const float *stats,
                          const int *targets, const float *dlogp, const float *dentropy, int N,
                          int V, int ld)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++)
        row_backward(dlogits + (size_t)i * ld, logits + (size_t)i * ld, row_kept(stats, i),
                     targets[i], dlogp ? dlogp[i] : 0.0f, dentropy ? dentropy[i] : 0.0f, V, ld);
}

void pw_logprobs_backward_bf16(uint16_t *dlogits16, const float *logits, const float *stats,
                               const int *targets, const float *dlogp, const float *dentropy,
                               int N, int V, int ld, float mul)
{
#pragma omp parallel
    {
        /* a row's float32 gradient, then rounded over the row it came from */
        float *row = malloc(sizeof(float) * (size_t)(ld > 0 ? ld : 1));
        if (!row) {
            fprintf(stderr, "pw_logprobs_backward_bf16: out of host memory\n");
            abort();
        }
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) {
            row_backward(row, logits + (size_t)i * ld, row_kept(stats, i), targets[i],
                         dlogp ? dlogp[i] : 0.0f, dentropy ? dentropy[i] : 0.0f, V, ld);
            uint16_t *d = dlogits16 + (size_t)i * 2 * ld;
            for (int v = 0; v < ld; v++) d[v] = pw_bf16_from_f32(row[v] * mul);
        }
        free(row);
    }
}

void pw_crossentropy_forward(float *losses, const float *logits, const int *targets, int N, int V)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        if (targets[i] < 0) {
            losses[i] = 0.0f;
            continue;
        }
        const float *x = logits + (size_t)i * V;
        RowStats s = row_stats(x, V);
        losses[i] = (s.max - x[targets[i]]) + s.logz;
    }
}

/* the cross-entropy is -log p_t, so its backward is the log-prob one with g = -dloss */
void pw_crossentropy_backward(float *dlogits, const float *logits, const int *targets,
                              const float *dlosses, int N, int V)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++)
        row_backward(dlogits + (size_t)i * V, logits + (size_t)i * V, NULL, targets[i],
                     -dlosses[i], 0.0f, V, V);
}
