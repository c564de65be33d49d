/* generate.c: batched generation from a GPT-2 model with a KV cache: one trunk pass over the
 * real prompt tokens, then one token per unfinished row per step, sampled by sampling.c. */
#include "pw_generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pw_kernels.h"

/* A prefill pass packs the real tokens of whole rows; this many full-width rows bound the
 * packed tokens of one pass, so the per-pass buffers stay small next to the cache. */
#define PW_GEN_PREFILL_ROWS 4

/* ------------------------------------------------------------------------------------------ */
/* life cycle: a table of sizes, one allocation, sliced in the order of the table */

enum { F_K, F_V, F_X, F_LN, F_MEAN, F_RSTD, F_QKV, F_ATTY, F_PROJ, F_FC, F_SCORES, F_HEAD,
       F_LOGITS, F_LOGP, F_LOGPF, NUM_F };
enum { I_LEN, I_TOK, I_POS, I_SEGROW, I_SEGOFF, I_NEXT, I_LIVE, I_TOKENS, I_RMASK, I_LENGTHS,
       I_STOPPED, I_WORK, NUM_I };

PwGen *pw_gen_create(const PwGPT2 *model, int maxB, int maxT, PwErr *err)
{
    const PwGPT2Config *cfg = &model->config;
    if (maxB <= 0 || maxT <= 0)
        return pw_errf(err, "generator capacity must be positive, got B=%d T=%d", maxB, maxT),
               NULL;
    if (maxT > cfg->n_positions)
        return pw_errf(err, "generator length %d (prompt + new tokens) exceeds the model's "
                       "n_positions %d", maxT, cfg->n_positions), NULL;
    const size_t L = cfg->n_layer, C = cfg->n_embd, NH = cfg->n_head, V = cfg->vocab_size;
    const size_t B = maxB, T = maxT;
    size_t prefill = T * (maxB < PW_GEN_PREFILL_ROWS ? maxB : PW_GEN_PREFILL_ROWS);
    const size_t N = prefill > B ? prefill : B;

    size_t fs[NUM_F] = {
        [F_K] = L * B * T * C, [F_V] = L * B * T * C, [F_X] = N * C, [F_LN] = N * C,
        [F_MEAN] = N, [F_RSTD] = N, [F_QKV] = N * 3 * C, [F_ATTY] = N * C, [F_PROJ] = N * C,
        [F_FC] = N * 4 * C, [F_SCORES] = B * NH * T, [F_HEAD] = B * V,
        [F_LOGITS] = B * V, [F_LOGP] = B * T,
        [F_LOGPF] = B * T,
    };
    size_t is[NUM_I] = {
        [I_LEN] = B, [I_TOK] = N, [I_POS] = N, [I_SEGROW] = B, [I_SEGOFF] = B + 1,
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
        return pw_errf(err, "out of memory for a generator of B=%d T=%d (%zu MiB)", maxB, maxT,
                       bytes >> 20), NULL;
    }
    g->memory = mem;
    g->model = model;
    g->maxB = maxB;
    g->maxT = maxT;
    g->maxN = (int)N;
    g->prob = mem;
    g->rng = (uint64_t *)(g->prob + V);
    float *f = (float *)(g->rng + B);
    float **fp[NUM_F] = {&g->kcache, &g->vcache, &g->x, &g->ln, &g->ln_mean, &g->ln_rstd,
                         &g->qkv, &g->atty, &g->proj, &g->fc, &g->scores, &g->head, &g->logits,
                         &g->logp, &g->logp_full};
    for (int i = 0; i < NUM_F; i++) {
        *fp[i] = f;
        f += fs[i];
    }
    int *n = (int *)f;
    int **ip[NUM_I] = {&g->len, &g->tok, &g->pos, &g->seg_row, &g->seg_off, &g->next, &g->live, &g->tokens,
                       &g->resp_mask, &g->lengths, &g->stopped, &g->work};
    for (int i = 0; i < NUM_I; i++) {
        *ip[i] = n;
        n += is[i];
    }
    return g;
}

void pw_gen_free(PwGen *g)
{
    if (!g) return;
    free(g->memory);
    free(g);
}

/* ------------------------------------------------------------------------------------------ */
/* one trunk pass over the packed tokens of nseg segments: segment s appends the tokens
 * seg_off[s]..seg_off[s+1]-1 to row seg_row[s]'s cache, from slot len[row] on */

/* Write this layer's k and v of every packed token into its row's cache slots, then let each
 * query attend causally over its row's cache: the prompt's earlier tokens, and in a decode step
 * everything cached before. No key in the cache is padding, so no mask is needed. */
static void attention_over_cache(PwGen *g, int l)
{
    const PwGPT2Config *cfg = &g->model->config;
    const int C = cfg->n_embd, NH = cfg->n_head, hs = C / NH, T = g->maxT;
    const size_t layer = (size_t)g->maxB * NH * T * hs;
    const float scale = 1.0f / sqrtf((float)hs);

#pragma omp parallel for schedule(dynamic)
    for (int sh = 0; sh < g->nseg * NH; sh++) {
        int s = sh / NH, h = sh % NH, b = g->seg_row[s];
        int off = g->seg_off[s], n = g->seg_off[s + 1] - off, slot0 = g->len[b];
        float *K = g->kcache + l * layer + ((size_t)b * NH + h) * T * hs;
        float *Vc = g->vcache + l * layer + ((size_t)b * NH + h) * T * hs;
        float *sc = g->scores + (size_t)sh * T;
        for (int j = 0; j < n; j++) {
            const float *qkv = g->qkv + (size_t)(off + j) * 3 * C + h * hs;
            memcpy(K + (size_t)(slot0 + j) * hs, qkv + C, hs * sizeof(float));
            memcpy(Vc + (size_t)(slot0 + j) * hs, qkv + 2 * C, hs * sizeof(float));
        }
        for (int j = 0; j < n; j++) {
            const float *q = g->qkv + (size_t)(off + j) * 3 * C + h * hs;
            int keys = slot0 + j + 1; /* causal: up to and including this token */
            float mx = -INFINITY;
            for (int t = 0; t < keys; t++) {
                const float *k = K + (size_t)t * hs;
                float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                for (int i = 0; i < hs; i++) dot += q[i] * k[i];
                sc[t] = dot * scale;
                mx = sc[t] > mx ? sc[t] : mx;
            }
            float z = 0.0f;
            for (int t = 0; t < keys; t++) {
                sc[t] = expf(sc[t] - mx);
                z += sc[t];
            }
            float *out = g->atty + (size_t)(off + j) * C + h * hs;
            for (int i = 0; i < hs; i++) out[i] = 0.0f;
            for (int t = 0; t < keys; t++) {
                const float *v = Vc + (size_t)t * hs;
                float w = sc[t] / z;
#pragma omp simd
                for (int i = 0; i < hs; i++) out[i] += w * v[i];
            }
        }
    }
}

/* The transformer blocks over the N packed tokens in g->tok / g->pos, then the final LayerNorm
 * and the LM head on the last token of each segment only: logits of row seg_row[s] go to
 * g->logits[seg_row[s]]. Advances len[] of every segment's row. */
static void trunk_pass(PwGen *g)
{
    const PwGPT2 *m = g->model;
    const PwGPT2Params *p = &m->params;
    const int L = m->config.n_layer, C = m->config.n_embd, V = m->config.vocab_size;
    const int N = g->seg_off[g->nseg];
    const size_t CC = (size_t)C * C;

    pw_encoder_forward(g->x, g->tok, g->pos, p->wte, p->wpe, 1, N, C);
    for (int l = 0; l < L; l++) {
        /* attention half: x += proj(attn(ln1(x))) */
        pw_layernorm_forward(g->ln, g->ln_mean, g->ln_rstd, g->x, p->ln1w + l * C,
                             p->ln1b + l * C, N, C);
        pw_matmul_forward(g->qkv, g->ln, p->qkvw + 3 * CC * l, p->qkvb + 3 * C * l, N, C,
                          3 * C);
        attention_over_cache(g, l);
        pw_matmul_forward(g->proj, g->atty, p->attprojw + CC * l, p->attprojb + C * l, N, C, C);
        pw_residual_forward(g->x, g->x, g->proj, (size_t)N * C);
        /* MLP half: x += fcproj(gelu(fc(ln2(x)))) */
        pw_layernorm_forward(g->ln, g->ln_mean, g->ln_rstd, g->x, p->ln2w + l * C,
                             p->ln2b + l * C, N, C);
        pw_matmul_forward(g->fc, g->ln, p->fcw + 4 * CC * l, p->fcb + 4 * C * l, N, C, 4 * C);
        pw_gelu_forward(g->fc, g->fc, (size_t)N * 4 * C);
        pw_matmul_forward(g->proj, g->fc, p->fcprojw + 4 * CC * l, p->fcprojb + C * l, N,
                          4 * C, C);
        pw_residual_forward(g->x, g->x, g->proj, (size_t)N * C);
    }
    /* only the last token of each segment predicts anything we sample: gather those rows of x
     * (into atty, free now) so that the LM head is one (nseg, C) x (C, V) product */
    for (int s = 0; s < g->nseg; s++)
        memcpy(g->atty + (size_t)s * C, g->x + (size_t)(g->seg_off[s + 1] - 1) * C,
               C * sizeof(float));
    pw_layernorm_forward(g->ln, g->ln_mean, g->ln_rstd, g->atty, p->lnfw, p->lnfb, g->nseg, C);
    pw_matmul_forward(g->head, g->ln, p->wte, NULL, g->nseg, C, V);
    /* rows outside this pass keep their logits: an earlier prefill pass wrote them, or the row
     * has finished */
    for (int s = 0; s < g->nseg; s++) {
        int b = g->seg_row[s];
        memcpy(g->logits + (size_t)b * V, g->head + (size_t)s * V, V * sizeof(float));
        g->len[b] += g->seg_off[s + 1] - g->seg_off[s];
    }
}

/* ------------------------------------------------------------------------------------------ */
/* prefill and decode */

static int check_prompt(const PwGen *g, const int *prompt, const int *mask, int B, int P,
                        PwErr *err)
{
    const int V = g->model->config.vocab_size;
    if (B <= 0 || B > g->maxB)
        return pw_errf(err, "generation batch B=%d is outside the generator's capacity [1, %d]",
                       B, g->maxB);
    if (P <= 0 || P > g->maxT)
        return pw_errf(err, "prompt width P=%d is outside the generator's capacity [1, %d] "
                       "tokens", P, g->maxT);
    for (int b = 0; b < B; b++) {
        int seen = 0;
        for (int t = 0; t < P; t++) {
            int real = mask ? mask[b * P + t] != 0 : 1;
            if (!real && seen)
                return pw_errf(err, "prompt row %d is not left-padded: padding at column %d "
                               "after a real token", b, t);
            if (real && (prompt[b * P + t] < 0 || prompt[b * P + t] >= V))
                return pw_errf(err, "prompt token %d at (b=%d, t=%d) is outside the vocabulary "
                               "[0, %d)", prompt[b * P + t], b, t, V);
            seen += real;
        }
        if (!seen) return pw_errf(err, "prompt row %d has no real token", b);
    }
    return 0;
}

int pw_gen_prefill(PwGen *g, const int *prompt, const int *mask, int B, int P, PwErr *err)
{
    if (check_prompt(g, prompt, mask, B, P, err)) return -1;
    for (int b = 0; b < B; b++) g->len[b] = 0;
    /* passes of whole rows, as many as fit in maxN packed tokens (one always does: P <= maxT) */
    int b = 0;
    while (b < B) {
        int n = 0;
        g->nseg = 0;
        for (; b < B; b++) {
            int first = 0;
            while (mask && !mask[b * P + first]) first++;
            if (n + P - first > g->maxN) break;
            g->seg_row[g->nseg] = b;
            g->seg_off[g->nseg++] = n;
            for (int t = first; t < P; t++, n++) {
                g->tok[n] = prompt[b * P + t];
                g->pos[n] = t - first;
            }
        }
        g->seg_off[g->nseg] = n;
        trunk_pass(g);
    }
    return 0;
}

int pw_gen_decode(PwGen *g, const int *tokens, const int *active, int B, PwErr *err)
{
    const int V = g->model->config.vocab_size;
    if (B <= 0 || B > g->maxB)
        return pw_errf(err, "decode batch B=%d is outside the generator's capacity [1, %d]", B,
                       g->maxB);
    g->nseg = 0;
    for (int b = 0; b < B; b++) {
        if (active && !active[b]) continue;
        if (tokens[b] < 0 || tokens[b] >= V)
            return pw_errf(err, "decode token %d of row %d is outside the vocabulary [0, %d)",
                           tokens[b], b, V);
        if (g->len[b] >= g->maxT)
            return pw_errf(err, "row %d already holds %d tokens, the generator's capacity", b,
                           g->len[b]);
        /* a row's next position is the number of real tokens it holds: its cache length */
        g->tok[g->nseg] = tokens[b];
        g->pos[g->nseg] = g->len[b];
        g->seg_row[g->nseg] = b;
        g->seg_off[g->nseg] = g->nseg;
        g->nseg++;
    }
    g->seg_off[g->nseg] = g->nseg;
    if (g->nseg) trunk_pass(g);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the sampling loop */

int pw_generate(PwGen *g, const int *prompt, const int *mask, int B, int P,
                const uint64_t *sample_ids, const PwGenConfig *cfg, PwErr *err)
{
    const int V = g->model->config.vocab_size, R = cfg->max_new_tokens;
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
                       "capacity of %d tokens (the model's n_positions is %d)", P, R, P + R,
                       g->maxT, g->model->config.n_positions);
    if (pw_gen_prefill(g, prompt, mask, B, P, err)) return -1;

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
        if (r > 0 && pw_gen_decode(g, next, live, B, err)) return -1;
        for (int b = 0; b < B; b++) {
            if (!live[b]) continue;
            PwSample s = pw_sample_row(g->prob, g->work, g->logits + (size_t)b * V, V,
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
