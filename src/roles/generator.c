/* generator.c: the generator role: sample responses y ~ pi_gen(.|x) for its block of prompts
 * with temperature / top-k / top-p, stopping at the stop token or max_new_tokens (ppo.md 1). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "roles.h"

typedef struct Sampler {
    double temperature, top_p;
    int top_k, V;
    double *z, *sorted; /* (V) scratch */
} Sampler;

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* One token from one row of logits. The filters keep every token at least as likely as the
 * cut-off, so ties are never split and the result does not depend on token numbering.
 * *logp_full gets log softmax(logits / temperature) of the token, unfiltered: what the actor
 * recomputes, so that generator/logprob_diff measures the kernels and not the filters. */
static int sample_row(Sampler *s, const float *logits, uint64_t *rng, float *logp_full)
{
    int V = s->V;
    double mx = -INFINITY;
    for (int v = 0; v < V; v++) {
        s->z[v] = (double)logits[v] / s->temperature;
        if (s->z[v] > mx) mx = s->z[v];
    }
    double sum = 0.0;
    for (int v = 0; v < V; v++) sum += exp(s->z[v] - mx);
    double logz = mx + log(sum);

    double cut = -INFINITY; /* keep z >= cut */
    if (s->top_k > 0 && s->top_k < V) {
        memcpy(s->sorted, s->z, (size_t)V * sizeof *s->z);
        qsort(s->sorted, (size_t)V, sizeof *s->sorted, cmp_desc);
        cut = s->sorted[s->top_k - 1];
    }
    if (s->top_p < 1.0) {
        int n = 0;
        double kept = 0.0;
        for (int v = 0; v < V; v++)
            if (s->z[v] >= cut) {
                s->sorted[n++] = s->z[v];
                kept += exp(s->z[v] - mx);
            }
        qsort(s->sorted, (size_t)n, sizeof *s->sorted, cmp_desc);
        double mass = 0.0;
        for (int i = 0; i < n; i++) {
            mass += exp(s->sorted[i] - mx) / kept;
            if (mass >= s->top_p - 1e-6 || i == n - 1) {
                cut = s->sorted[i];
                break;
            }
        }
    }
    double total = 0.0;
    for (int v = 0; v < V; v++) total += s->z[v] >= cut ? exp(s->z[v] - mx) : 0.0;
    double u = pw_roles_uniform(rng) * total, run = 0.0;
    int tok = -1;
    for (int v = 0; v < V; v++) {
        if (s->z[v] < cut) continue;
        tok = v; /* the last kept token catches rounding at the top end */
        run += exp(s->z[v] - mx);
        if (u < run) break;
    }
    *logp_full = (float)(s->z[tok] - logz);
    return tok;
}

/* Plain repeated forward passes over the growing sequence: O(R^2) work, fine for the small
 * models of the tests; the KV-cache generator of the model layer replaces this loop. */
static void generate_chunk(PwRun *r, PwGPT2 *m, PwRows *rows, int i0, int nb, int64_t step,
                           Sampler *smp)
{
    int P = rows->P, R = rows->R, V = r->V, Tmax = P + R;
    int *inp = pw_roles_alloc((size_t)nb * Tmax * sizeof(int));
    int *mask = pw_roles_alloc((size_t)nb * Tmax * sizeof(int));
    int *done = pw_roles_alloc((size_t)nb * sizeof(int));
    uint64_t *rng = pw_roles_alloc((size_t)nb * sizeof(uint64_t));
    for (int b = 0; b < nb; b++) /* one stream per global row: placement does not matter */
        rng[b] = pw_roles_mix(r->s.seed, (uint64_t)step, (uint64_t)(rows->r0 + i0 + b));
    for (int t = 0; t < R; t++) {
        int T = P + t, active = 0;
        for (int b = 0; b < nb; b++) {
            int g = i0 + b;
            for (int c = 0; c < P; c++) {
                inp[b * T + c] = rows->prompt[(size_t)g * P + c];
                mask[b * T + c] = rows->pmask[(size_t)g * P + c];
            }
            for (int c = 0; c < t; c++) {
                inp[b * T + P + c] = rows->tokens[(size_t)g * R + c];
                mask[b * T + P + c] = 1;
            }
            active += !done[b];
        }
        if (!active) {
            for (int b = 0; b < nb; b++) rows->tokens[(size_t)(i0 + b) * R + t] = r->pad_id;
            continue;
        }
        PwErr err;
        if (pw_gpt2_forward(m, inp, mask, NULL, nb, T, &err))
            pw_comm_fatal(__FILE__, __LINE__, "generation forward: %s", err.msg);
        for (int b = 0; b < nb; b++) {
            size_t o = (size_t)(i0 + b) * R + t;
            if (done[b]) {
                rows->tokens[o] = r->pad_id;
                r->gen_logp[o] = 0.0f;
                continue;
            }
            const float *lg = m->acts.logits + ((size_t)b * T + T - 1) * V;
            rows->tokens[o] = sample_row(smp, lg, &rng[b], &r->gen_logp[o]);
            if (rows->tokens[o] == r->stop_id) done[b] = 1;
        }
    }
    free(inp);
    free(mask);
    free(done);
    free(rng);
}

void pw_generator_generate(PwRun *r, PwGPT2 *m, int64_t step)
{
    PwRows *rows = &r->gen_rows;
    Sampler smp = {r->s.temperature, r->s.top_p, r->s.top_k, r->V, NULL, NULL};
    smp.z = pw_roles_alloc((size_t)r->V * sizeof(double));
    smp.sorted = pw_roles_alloc((size_t)r->V * sizeof(double));
    for (int i0 = 0; i0 < rows->n; i0 += r->s.micro) {
        int nb = rows->n - i0 < r->s.micro ? rows->n - i0 : r->s.micro;
        generate_chunk(r, m, rows, i0, nb, step, &smp);
    }
    free(smp.z);
    free(smp.sorted);
    pw_rows_finish(rows, r->stop_id);
}
