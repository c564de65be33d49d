/* generate.c: batched generation from any model through its KV cache (pw_model.h): one pass over
 * the real prompt tokens, then one token per unfinished row per step, sampled by sampling.c. */
#include "pw_generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* life cycle: a table of sizes, one allocation, sliced in the order of the table */

enum { F_LOGP, F_LOGPF, NUM_F };
enum { I_NEXT, I_LIVE, I_TOKENS, I_RMASK, I_LENGTHS, I_STOPPED, I_WORK, NUM_I };

PwGen *pw_gen_create(PwModel *model, int maxB, int maxT, PwErr *err)
{
    PwKVCache *cache = pw_kv_create(model, maxB, maxT, err);
    if (!cache) return NULL;
    const size_t V = pw_model_arch(model)->vocab_size, B = maxB, T = maxT;
    size_t fs[NUM_F] = {[F_LOGP] = B * T, [F_LOGPF] = B * T};
    size_t is[NUM_I] = {
        [I_NEXT] = B, [I_LIVE] = B, [I_TOKENS] = B * T, [I_RMASK] = B * T, [I_LENGTHS] = B,
        [I_STOPPED] = B, [I_WORK] = V,
    };
    /* doubles and 64-bit words first, then floats, then ints: each part stays aligned */
    size_t nf = 0, ni = 0;
    for (int i = 0; i < NUM_F; i++) nf += fs[i];
    for (int i = 0; i < NUM_I; i++) ni += is[i];
    size_t bytes = V * sizeof(double) + B * sizeof(uint64_t) + nf * sizeof(float) +
                   ni * sizeof(int);

    PwGen *g = calloc(1, sizeof *g);
    void *mem = g ? malloc(bytes) : NULL;
    if (!mem) {
        free(g);
        pw_kv_free(cache);
        return pw_errf(err, "out of memory for a generator of B=%d T=%d (%zu MiB)", maxB, maxT,
                       bytes >> 20), NULL;
    }
    g->memory = mem;
    g->cache = cache;
    g->maxB = maxB;
    g->maxT = maxT;
    g->V = (int)V;
    g->prob = mem;
    g->rng = (uint64_t *)(g->prob + V);
    float *f = (float *)(g->rng + B);
    float **fp[NUM_F] = {&g->logp, &g->logp_full};
    for (int i = 0; i < NUM_F; i++) {
        *fp[i] = f;
        f += fs[i];
    }
    int *n = (int *)f;
    int **ip[NUM_I] = {&g->next, &g->live, &g->tokens, &g->resp_mask, &g->lengths, &g->stopped,
                       &g->work};
    for (int i = 0; i < NUM_I; i++) {
        *ip[i] = n;
        n += is[i];
    }
    return g;
}

void pw_gen_free(PwGen *g)
{
    if (!g) return;
    pw_kv_free(g->cache);
    free(g->memory);
    free(g);
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
     * through one decode step, and a row that emitted the stop token leaves for good */
    int *next = g->next, *live = g->live, nlive = B;
    for (int b = 0; b < B; b++) live[b] = 1;
    for (int r = 0; r < R && nlive > 0; r++) {
        if (r > 0 && pw_kv_decode(g->cache, next, live, B, err)) return -1;
        for (int b = 0; b < B; b++) {
            if (!live[b]) continue;
            PwSample s = pw_sample_row(g->prob, g->work, pw_kv_logits(g->cache, b), V,
                                       &cfg->sample, &g->rng[b]);
            g->tokens[b * R + r] = s.token;
            g->resp_mask[b * R + r] = 1;
            g->logp[b * R + r] = s.logp;
            g->logp_full[b * R + r] = s.logp_full;
            g->lengths[b]++;
            next[b] = s.token;
            if (s.token == cfg->stop_token) {
                g->stopped[b] = 1;
                live[b] = 0;
                nlive--;
            }
        }
    }
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
