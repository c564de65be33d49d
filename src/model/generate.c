/* generate.c: batched generation from any model through its KV cache (pw_model.h): one pass over
 * the real prompt tokens, then one token per unfinished row per step, drawn where the model
 * computes by the kernel table's sampler (pw_sample.h) from the logits the cache leaves there. */
#include "pw_generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* life cycle: a table of sizes, one allocation, sliced in the order of the table */

enum { F_LOGP, F_LOGPF, NUM_F };
enum { I_NEXT, I_LIVE, I_TOKENS, I_RMASK, I_LENGTHS, I_STOPPED, I_OUT, NUM_I };

PwGen *pw_gen_create(PwModel *model, int maxB, int maxT, PwErr *err)
{
    PwKVCache *cache = pw_kv_create(model, maxB, maxT, err);
    if (!cache) return NULL;
    const size_t V = pw_model_arch(model)->vocab_size, B = maxB, T = maxT;
    size_t fs[NUM_F] = {[F_LOGP] = B * T, [F_LOGPF] = B * T};
    size_t is[NUM_I] = {
        [I_NEXT] = B, [I_LIVE] = B, [I_TOKENS] = B * T, [I_RMASK] = B * T, [I_LENGTHS] = B,
        [I_STOPPED] = B, [I_OUT] = 3 * B,
    };
    /* 64-bit words first, then floats, then ints: each part stays aligned */
    size_t nf = 0, ni = 0;
    for (int i = 0; i < NUM_F; i++) nf += fs[i];
    for (int i = 0; i < NUM_I; i++) ni += is[i];
    size_t bytes = B * sizeof(uint64_t) + nf * sizeof(float) + ni * sizeof(int);
    /* on the device: rng (B), then rows and out (4 B ints), then the first logits (B V) */
    size_t dbytes = B * sizeof(uint64_t) + 4 * B * sizeof(int) + B * V * sizeof(float);

    PwGen *g = calloc(1, sizeof *g);
    void *mem = g ? malloc(bytes) : NULL;
    const PwOps *o = model->ops;
    void *dmem = mem ? o->alloc(o, dbytes) : NULL;
    if (!dmem) {
        if (mem && !dmem) pw_model_no_room(model, "a generator's sampler", dbytes, err);
        else pw_errf(err, "out of memory for a generator of B=%d T=%d (%zu MiB)", maxB, maxT,
                     bytes >> 20);
        free(mem);
        free(g);
        pw_kv_free(cache);
        return NULL;
    }
    cache->device_only = 1; /* the sampler reads the decode passes' logits where they are */
    g->memory = mem;
    g->d_memory = dmem;
    g->cache = cache;
    g->maxB = maxB;
    g->maxT = maxT;
    g->V = (int)V;
    g->d_rng = dmem;
    g->d_rows = (int *)(g->d_rng + B);
    g->d_out = g->d_rows + B;
    g->d_first = (float *)(g->d_out + 3 * B);
    g->rng = mem;
    float *f = (float *)(g->rng + B);
    float **fp[NUM_F] = {&g->logp, &g->logp_full};
    for (int i = 0; i < NUM_F; i++) {
        *fp[i] = f;
        f += fs[i];
    }
    int *n = (int *)f;
    int **ip[NUM_I] = {&g->next, &g->live, &g->tokens, &g->resp_mask, &g->lengths, &g->stopped,
                       &g->h_out};
    for (int i = 0; i < NUM_I; i++) {
        *ip[i] = n;
        n += is[i];
    }
    for (int b = 0; b < maxB; b++) g->h_out[b] = b;
    o->copy(o, g->d_rows, g->h_out, B * sizeof(int), PW_COPY_H2D);
    return g;
}

void pw_gen_free(PwGen *g)
{
    if (!g) return;
    const PwOps *o = g->cache->m->ops;
    o->free(o, g->d_memory);
    pw_kv_free(g->cache);
    free(g->memory);
    free(g);
}

/* Draws one token for each of n rows of logits (row i at logits + i * ld, its stream
 * d_rng[rows[i]]) on the model's device and brings back the draws: h_out[i] the token,
 * h_out[maxB + i] and h_out[2 maxB + i] the bits of logp and logp_full. */
static void draw(PwGen *g, const float *logits, int ld, int n, const int *rows,
                 const PwSampleConfig *sc)
{
    const PwOps *o = g->cache->m->ops;
    const int mb = g->maxB;
    int *d = g->d_out;
    o->sample(o, logits, ld, n, g->V, rows, sc, g->d_rng, d, (float *)(d + mb),
              (float *)(d + 2 * mb));
    o->copy(o, g->h_out, d, 3 * (size_t)mb * sizeof(int), PW_COPY_D2H);
}

/* ------------------------------------------------------------------------------------------ */
/* the sampling loop */

int pw_generate(PwGen *g, const int *prompt, const int *mask, int B, int P,
                const uint64_t *sample_ids, const PwGenConfig *cfg, PwErr *err)
{
    const int V = g->V, R = cfg->max_new_tokens;
    if (pw_sample_config_check(&cfg->sample, err)) return -1;
    if (R <= 0) return pw_errf(err, "max_new_tokens must be positive, got %d", R);
    if (cfg->pad_token < 0 || cfg->pad_token >= V)
        return pw_errf(err, "pad token %d is outside the vocabulary [0, %d)", cfg->pad_token, V);
    if (cfg->stop_token < -1 || cfg->stop_token >= V)
        return pw_errf(err, "stop token %d is outside the vocabulary [0, %d) (-1 = none)",
                       cfg->stop_token, V);
    if (P > g->maxT)
        return pw_errf(err, "prompt width P=%d exceeds the generator's capacity of %d tokens", P,
                       g->maxT);
    if (P + R > g->maxT)
        return pw_errf(err, "prompt width P=%d + max_new_tokens=%d = %d exceeds the generator's "
                       "capacity of %d tokens", P, R, P + R, g->maxT);
    if (pw_kv_prefill(g->cache, prompt, mask, B, P, err)) return -1;

    g->B = B;
    g->R = R;
    for (int b = 0; b < B; b++) {
        g->rng[b] = pw_sample_stream(cfg->seed, sample_ids ? sample_ids[b] : (uint64_t)b);
        g->lengths[b] = 0;
        g->stopped[b] = 0;
    }
    for (int i = 0; i < B * R; i++) {
        g->tokens[i] = cfg->pad_token;
        g->resp_mask[i] = 0;
        g->logp[i] = g->logp_full[i] = 0.0f;
    }
    /* every live row samples from its logits; the rows still live then feed their token back
     * through one decode step, and a row that emitted the stop token leaves for good. The first
     * tokens are drawn from the prefill's logits (on the host after its passes: uploaded once),
     * the others from each decode pass's logits where the model left them. */
    const PwOps *o = g->cache->m->ops;
    o->copy(o, g->d_rng, g->rng, (size_t)B * sizeof(uint64_t), PW_COPY_H2D);
    o->copy(o, g->d_first, pw_kv_logits(g->cache, 0), (size_t)B * V * sizeof(float),
            PW_COPY_H2D);
    int *next = g->next, *live = g->live, nlive = B;
    for (int b = 0; b < B; b++) live[b] = 1;
    for (int r = 0; r < R && nlive > 0; r++) {
        const int *h_rows = NULL; /* the rows of the draws; NULL: 0..B-1 */
        int n = B;
        if (r == 0) {
            draw(g, g->d_first, V, B, g->d_rows, &cfg->sample);
        } else {
            if (pw_kv_decode(g->cache, next, live, B, err)) return -1;
            const int *d_rows;
            const float *head = pw_kv_head(g->cache, &n, &d_rows, &h_rows);
            draw(g, head, (int)g->cache->m->Vp, n, d_rows, &cfg->sample);
        }
        const float *lp = (const float *)(g->h_out + g->maxB), *lpf = lp + g->maxB;
        for (int i = 0; i < n; i++) {
            int b = h_rows ? h_rows[i] : i, tok = g->h_out[i];
            g->tokens[b * R + r] = tok;
            g->resp_mask[b * R + r] = 1;
            g->logp[b * R + r] = lp[i];
            g->logp_full[b * R + r] = lpf[i];
            g->lengths[b]++;
            next[b] = tok;
            if (tok == cfg->stop_token) {
                g->stopped[b] = 1;
                live[b] = 0;
                nlive--;
            }
        }
    }
    o->copy(o, g->rng, g->d_rng, (size_t)B * sizeof(uint64_t), PW_COPY_D2H);
    return 0;
}

void pw_gen_sequences(int *seq, int *seq_mask, int *targets, const int *prompt,
                      const int *prompt_mask, int P, const int *resp, const int *resp_mask, int R,
                      int B, int pad_token)
{
    const int W = P + R;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < P; t++) {
            int real = prompt_mask ? prompt_mask[b * P + t] != 0 : 1;
            seq[b * W + t] = real ? prompt[b * P + t] : pad_token;
            seq_mask[b * W + t] = real;
        }
        for (int t = 0; t < R; t++) {
            int real = resp_mask[b * R + t] != 0;
            seq[b * W + P + t] = real ? resp[b * R + t] : pad_token;
            seq_mask[b * W + P + t] = real;
        }
        if (!targets) continue;
        for (int t = 0; t < W; t++) targets[b * W + t] = -1;
        for (int t = 0; t < R; t++)
            if (resp_mask[b * R + t]) targets[b * W + P - 1 + t] = resp[b * R + t];
    }
}
