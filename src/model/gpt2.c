/* gpt2.c: the GPT-2 model on the kernels of pw_kernels.h: memory layout, init, forward and
 * backward through the LM, score and value heads, the weighted LM loss and AdamW. */
#include "pw_model.h"
#include "pw_rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pw_kernels.h"

/* ------------------------------------------------------------------------------------------ */
/* config */

int pw_gpt2_config_check(const PwGPT2Config *c, PwErr *err)
{
    if (c->n_layer <= 0) return pw_errf(err, "n_layer must be positive, got %d", c->n_layer);
    if (c->n_head <= 0) return pw_errf(err, "n_head must be positive, got %d", c->n_head);
    if (c->n_embd <= 0) return pw_errf(err, "n_embd must be positive, got %d", c->n_embd);
    if (c->vocab_size <= 0)
        return pw_errf(err, "vocab_size must be positive, got %d", c->vocab_size);
    if (c->n_positions <= 0)
        return pw_errf(err, "n_positions must be positive, got %d", c->n_positions);
    if (c->n_embd % c->n_head != 0)
        return pw_errf(err, "n_embd (%d) is not a multiple of n_head (%d)", c->n_embd,
                       c->n_head);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* memory layout: a table of sizes, one allocation, sliced into the struct of pointers */

static const char *const param_names[PW_GPT2_NUM_PARAM_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb", "ln2w", "ln2b",
    "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb", "scorew", "scoreb", "valuew", "valueb",
};

const char *pw_gpt2_param_name(int i)
{
    return (i >= 0 && i < PW_GPT2_NUM_PARAM_TENSORS) ? param_names[i] : "?";
}

/* Which tensors weight decay applies to: the 2D ones (embeddings and Linear weights). */
static const int param_decays[PW_GPT2_NUM_PARAM_TENSORS] = {
    1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0,
};

static void param_sizes(size_t *s, const PwGPT2Config *cfg, int heads)
{
    size_t L = cfg->n_layer, C = cfg->n_embd, V = cfg->vocab_size, P = cfg->n_positions;
    s[0] = V * C;
    s[1] = P * C;
    s[2] = L * C;
    s[3] = L * C;
    s[4] = L * 3 * C * C;
    s[5] = L * 3 * C;
    s[6] = L * C * C;
    s[7] = L * C;
    s[8] = L * C;
    s[9] = L * C;
    s[10] = L * 4 * C * C;
    s[11] = L * 4 * C;
    s[12] = L * C * 4 * C;
    s[13] = L * C;
    s[14] = C;
    s[15] = C;
    s[16] = (heads & PW_HEAD_SCORE) ? C : 0;
    s[17] = (heads & PW_HEAD_SCORE) ? 1 : 0;
    s[18] = (heads & PW_HEAD_VALUE) ? C : 0;
    s[19] = (heads & PW_HEAD_VALUE) ? 1 : 0;
}

/* Point each member of a struct made only of float pointers at its slice of memory (NULL for an
 * empty slice, so that a missing head reads as absent). */
static void slice(float **ptrs, const size_t *sizes, int n, float *memory)
{
    float *p = memory;
    for (int i = 0; i < n; i++) {
        ptrs[i] = sizes[i] ? p : NULL;
        p += sizes[i];
    }
}

static size_t sum_sizes(const size_t *sizes, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) total += sizes[i];
    return total;
}

static void act_sizes(size_t *s, const PwGPT2Config *cfg, int heads, int maxB, int maxT)
{
    size_t L = cfg->n_layer, C = cfg->n_embd, V = cfg->vocab_size, NH = cfg->n_head;
    size_t B = maxB, T = maxT, BT = B * T;
    s[0] = BT * C;           /* encoded */
    s[1] = L * BT * C;       /* ln1 */
    s[2] = L * BT;           /* ln1_mean */
    s[3] = L * BT;           /* ln1_rstd */
    s[4] = L * BT * 3 * C;   /* qkv */
    s[5] = L * BT * C;       /* atty */
    s[6] = L * B * NH * T * T; /* att */
    s[7] = L * BT * C;       /* attproj */
    s[8] = L * BT * C;       /* residual2 */
    s[9] = L * BT * C;       /* ln2 */
    s[10] = L * BT;          /* ln2_mean */
    s[11] = L * BT;          /* ln2_rstd */
    s[12] = L * BT * 4 * C;  /* fch */
    s[13] = L * BT * 4 * C;  /* fch_gelu */
    s[14] = L * BT * C;      /* fcproj */
    s[15] = L * BT * C;      /* residual3 */
    s[16] = BT * C;          /* lnf */
    s[17] = BT;              /* lnf_mean */
    s[18] = BT;              /* lnf_rstd */
    s[19] = (heads & PW_HEAD_LM) ? BT * V : 0; /* logits */
    s[20] = (heads & PW_HEAD_LM) ? BT : 0;     /* logp */
    s[21] = (heads & PW_HEAD_LM) ? BT : 0;     /* entropy */
    s[22] = (heads & PW_HEAD_VALUE) ? BT : 0;  /* value */
    s[23] = (heads & PW_HEAD_SCORE) ? B : 0;   /* score */
}

/* Backward needs gradients of one layer's activations at a time, never all layers at once:
 * dres (B,T,C) carries the residual stream's gradient down the layers, the rest is reused by
 * every layer. */
enum { SCR_DRES, SCR_DLN, SCR_DATTY, SCR_DQKV, SCR_DFCH, SCR_DFCHG, SCR_COUNT };
static void scratch_sizes(size_t *s, const PwGPT2Config *cfg, int maxB, int maxT)
{
    size_t BT = (size_t)maxB * maxT, C = cfg->n_embd;
    s[SCR_DRES] = BT * C;
    s[SCR_DLN] = BT * C;
    s[SCR_DATTY] = BT * C;
    s[SCR_DQKV] = BT * 3 * C;
    s[SCR_DFCH] = BT * 4 * C;
    s[SCR_DFCHG] = BT * 4 * C;
}

PwGPT2 *pw_gpt2_create(const PwGPT2Config *cfg, int heads, int maxB, int maxT, PwErr *err)
{
    if (pw_gpt2_config_check(cfg, err)) return NULL;
    if (heads & ~(PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE)) {
        pw_errf(err, "unknown head bits 0x%x", (unsigned)heads);
        return NULL;
    }
    if (maxB <= 0 || maxT <= 0 || maxT > cfg->n_positions) {
        pw_errf(err, "activation capacity B=%d T=%d must be positive with T <= n_positions=%d",
                maxB, maxT, cfg->n_positions);
        return NULL;
    }
    PwGPT2 *m = calloc(1, sizeof *m);
    if (!m) {
        pw_errf(err, "out of memory for the model struct");
        return NULL;
    }
    m->config = *cfg;
    m->heads = heads;
    m->maxB = maxB;
    m->maxT = maxT;

    param_sizes(m->param_sizes, cfg, heads);
    m->num_params = sum_sizes(m->param_sizes, PW_GPT2_NUM_PARAM_TENSORS);
    m->params_memory = calloc(m->num_params, sizeof(float));

    act_sizes(m->act_sizes, cfg, heads, maxB, maxT);
    m->num_acts = sum_sizes(m->act_sizes, PW_GPT2_NUM_ACT_TENSORS);
    m->acts_memory = calloc(m->num_acts, sizeof(float));

    size_t BT = (size_t)maxB * maxT;
    m->int_memory = calloc(4 * BT + maxB, sizeof(int));
    if (!m->params_memory || !m->acts_memory || !m->int_memory) {
        pw_errf(err, "out of memory: %zu parameters, %zu activation floats", m->num_params,
                m->num_acts);
        pw_gpt2_free(m);
        return NULL;
    }
    slice((float **)&m->params, m->param_sizes, PW_GPT2_NUM_PARAM_TENSORS, m->params_memory);
    slice((float **)&m->acts, m->act_sizes, PW_GPT2_NUM_ACT_TENSORS, m->acts_memory);
    m->inputs = m->int_memory;
    m->mask = m->inputs + BT;
    m->pos = m->mask + BT;
    m->targets = m->pos + BT;
    m->last = m->targets + BT;
    return m;
}

void pw_gpt2_free(PwGPT2 *m)
{
    if (!m) return;
    free(m->params_memory);
    free(m->grads_memory);
    free(m->adam_m);
    free(m->adam_v);
    free(m->acts_memory);
    free(m->scratch_memory);
    free(m->int_memory);
    free(m);
}

size_t pw_gpt2_num_params(const PwGPT2 *m) { return m->num_params; }

double pw_gpt2_flops_per_token(const PwGPT2 *m, int T)
{
    double L = m->config.n_layer, C = m->config.n_embd, V = m->config.vocab_size;
    /* every matmul weight is used once per token forward (2 flops per weight) and twice in
     * backward (4); attention adds q.k and att.v over T keys: 2*2*T*C forward, twice that back */
    double matmul_params = 12.0 * L * C * C;
    if (m->heads & PW_HEAD_LM) matmul_params += V * C;
    return 6.0 * matmul_params + 12.0 * L * C * T;
}

/* ------------------------------------------------------------------------------------------ */
/* init: the project's portable generator, so that a seed means the same weights everywhere */

static void fill_normal(float *x, size_t n, double std, uint64_t seed, int stream)
{
    /* one stream per tensor index: a tensor's values depend on (seed, tensor) only */
    uint64_t s = seed ^ (0xd1b54a32d192ed03ULL * (uint64_t)(stream + 1));
    for (size_t i = 0; i < n; i += 2) {
        double u1 = ((pw_rng_next(&s) >> 11) + 1.0) * (1.0 / 9007199254740993.0); /* (0, 1] */
        double u2 = (pw_rng_next(&s) >> 11) * (1.0 / 9007199254740992.0);
        double r = sqrt(-2.0 * log(u1)) * std;
        x[i] = (float)(r * cos(6.283185307179586 * u2));
        if (i + 1 < n) x[i + 1] = (float)(r * sin(6.283185307179586 * u2));
    }
}

static void fill_const(float *x, size_t n, float v)
{
    for (size_t i = 0; i < n; i++) x[i] = v;
}

void pw_gpt2_init_heads(PwGPT2 *m, int heads, uint64_t seed)
{
    double std = 1.0 / sqrt(m->config.n_embd + 1.0);
    if ((heads & PW_HEAD_SCORE) && m->params.scorew) {
        fill_normal(m->params.scorew, m->param_sizes[16], std, seed, 16);
        m->params.scoreb[0] = 0.0f;
    }
    if ((heads & PW_HEAD_VALUE) && m->params.valuew) {
        fill_normal(m->params.valuew, m->param_sizes[18], std, seed, 18);
        m->params.valueb[0] = 0.0f;
    }
}

void pw_gpt2_init_random(PwGPT2 *m, uint64_t seed)
{
    float **p = (float **)&m->params;
    const double std = 0.02;
    /* GPT-2 scales the projections that write into the residual stream by 1/sqrt(2L), since
     * each layer adds two of them to it */
    const double std_res = 0.02 / sqrt(2.0 * m->config.n_layer);
    for (int i = 0; i < 16; i++) {
        size_t n = m->param_sizes[i];
        switch (i) {
        case 0: case 1: case 4: case 10: fill_normal(p[i], n, std, seed, i); break;
        case 6: case 12: fill_normal(p[i], n, std_res, seed, i); break;
        case 2: case 8: case 14: fill_const(p[i], n, 1.0f); break; /* LayerNorm weights */
        default: fill_const(p[i], n, 0.0f); break;                 /* biases */
        }
    }
    pw_gpt2_init_heads(m, PW_HEAD_SCORE | PW_HEAD_VALUE, seed);
}

int pw_gpt2_copy_score_to_value(PwGPT2 *m, PwErr *err)
{
    if (!m->params.scorew || !m->params.valuew)
        return pw_errf(err, "copying the score head into the value head needs both heads");
    memcpy(m->params.valuew, m->params.scorew, m->param_sizes[16] * sizeof(float));
    m->params.valueb[0] = m->params.scoreb[0];
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* forward */

int pw_gpt2_forward(PwGPT2 *m, const int *inp, const int *mask, const int *targets, int B, int T,
                    PwErr *err)
{
    const PwGPT2Config *cfg = &m->config;
    if (B <= 0 || T <= 0 || B > m->maxB || T > m->maxT)
        return pw_errf(err, "forward of B=%d T=%d exceeds the model's capacity B=%d T=%d", B, T,
                       m->maxB, m->maxT);
    const int L = cfg->n_layer, C = cfg->n_embd, NH = cfg->n_head, V = cfg->vocab_size;
    const int BT = B * T;
    for (int i = 0; i < BT; i++) {
        if (inp[i] < 0 || inp[i] >= V)
            return pw_errf(err, "token id %d at (b=%d, t=%d) is outside the vocabulary [0, %d)",
                           inp[i], i / T, i % T, V);
        if (targets && targets[i] >= V)
            return pw_errf(err, "target %d at (b=%d, t=%d) is outside the vocabulary [0, %d)",
                           targets[i], i / T, i % T, V);
    }
    /* keep our own copies: backward runs later, after the caller may have reused its arrays */
    memcpy(m->inputs, inp, (size_t)BT * sizeof(int));
    for (int i = 0; i < BT; i++) {
        m->mask[i] = mask ? (mask[i] != 0) : 1;
        m->targets[i] = targets ? targets[i] : -1;
    }
    m->B = B;
    m->T = T;
    pw_positions_from_mask(m->pos, m->mask, B, T);

    PwGPT2Params *p = &m->params;
    PwGPT2Acts *a = &m->acts;
    /* per-layer strides follow the capacity, not this batch, so that slices do not move */
    const size_t sBTC = (size_t)m->maxB * m->maxT * C, sBT = (size_t)m->maxB * m->maxT;
    const size_t sATT = (size_t)m->maxB * NH * m->maxT * m->maxT;

    pw_encoder_forward(a->encoded, m->inputs, m->pos, p->wte, p->wpe, B, T, C);
    for (int l = 0; l < L; l++) {
        const float *residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * sBTC;
        float *ln1 = a->ln1 + l * sBTC, *ln1_mean = a->ln1_mean + l * sBT;
        float *ln1_rstd = a->ln1_rstd + l * sBT, *qkv = a->qkv + l * 3 * sBTC;
        float *atty = a->atty + l * sBTC, *att = a->att + l * sATT;
        float *attproj = a->attproj + l * sBTC, *residual2 = a->residual2 + l * sBTC;
        float *ln2 = a->ln2 + l * sBTC, *ln2_mean = a->ln2_mean + l * sBT;
        float *ln2_rstd = a->ln2_rstd + l * sBT, *fch = a->fch + l * 4 * sBTC;
        float *fch_gelu = a->fch_gelu + l * 4 * sBTC, *fcproj = a->fcproj + l * sBTC;
        float *residual3 = a->residual3 + l * sBTC;

        pw_layernorm_forward(ln1, ln1_mean, ln1_rstd, residual, p->ln1w + l * C,
                             p->ln1b + l * C, BT, C);
        pw_matmul_forward(qkv, ln1, p->qkvw + (size_t)l * 3 * C * C, p->qkvb + l * 3 * C, BT, C,
                          3 * C);
        pw_attention_forward(atty, att, qkv, m->mask, B, T, C, NH);
        pw_matmul_forward(attproj, atty, p->attprojw + (size_t)l * C * C, p->attprojb + l * C,
                          BT, C, C);
        pw_residual_forward(residual2, residual, attproj, (size_t)BT * C);
        pw_layernorm_forward(ln2, ln2_mean, ln2_rstd, residual2, p->ln2w + l * C,
                             p->ln2b + l * C, BT, C);
        pw_matmul_forward(fch, ln2, p->fcw + (size_t)l * 4 * C * C, p->fcb + l * 4 * C, BT, C,
                          4 * C);
        pw_gelu_forward(fch_gelu, fch, (size_t)BT * 4 * C);
        pw_matmul_forward(fcproj, fch_gelu, p->fcprojw + (size_t)l * C * 4 * C,
                          p->fcprojb + l * C, BT, 4 * C, C);
        pw_residual_forward(residual3, residual2, fcproj, (size_t)BT * C);
    }
    pw_layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, a->residual3 + (L - 1) * sBTC,
                         p->lnfw, p->lnfb, BT, C);

    if (m->heads & PW_HEAD_LM) {
        pw_matmul_forward(a->logits, a->lnf, p->wte, NULL, BT, C, V);
        pw_logprobs_forward(a->logp, a->entropy, a->logits, m->targets, BT, V);
        m->logits_valid = 1;
    }
    if (m->heads & PW_HEAD_VALUE)
        pw_matmul_forward(a->value, a->lnf, p->valuew, p->valueb, BT, C, 1);
    /* the score is read at the last real token, wherever padding put it */
    for (int b = 0; b < B; b++) {
        int last = -1;
        for (int t = T - 1; t >= 0; t--)
            if (m->mask[b * T + t]) {
                last = t;
                break;
            }
        m->last[b] = last;
        if (!(m->heads & PW_HEAD_SCORE)) continue;
        if (last < 0)
            a->score[b] = 0.0f; /* a row of padding only has no score */
        else
            pw_matmul_forward(a->score + b, a->lnf + ((size_t)b * T + last) * C, p->scorew,
                              p->scoreb, 1, C, 1);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* backward */

int pw_gpt2_zero_grad(PwGPT2 *m)
{
    if (!m->grads_memory) {
        size_t s[SCR_COUNT];
        scratch_sizes(s, &m->config, m->maxB, m->maxT);
        m->grads_memory = calloc(m->num_params, sizeof(float));
        m->scratch_memory = malloc(sum_sizes(s, SCR_COUNT) * sizeof(float));
        if (!m->grads_memory || !m->scratch_memory) {
            free(m->grads_memory);
            free(m->scratch_memory);
            m->grads_memory = m->scratch_memory = NULL;
            return -1;
        }
        slice((float **)&m->grads, m->param_sizes, PW_GPT2_NUM_PARAM_TENSORS, m->grads_memory);
        return 0;
    }
    memset(m->grads_memory, 0, m->num_params * sizeof(float));
    return 0;
}

static void zero(float *x, size_t n) { memset(x, 0, n * sizeof(float)); }

int pw_gpt2_backward(PwGPT2 *m, const float *dlogp, const float *dentropy, const float *dvalue,
                     const float *dscore)
{
    if (m->B == 0) return -1;
    if (!m->grads_memory && pw_gpt2_zero_grad(m)) return -1;
    const PwGPT2Config *cfg = &m->config;
    const int L = cfg->n_layer, C = cfg->n_embd, NH = cfg->n_head, V = cfg->vocab_size;
    const int B = m->B, T = m->T, BT = B * T;
    const size_t sBTC = (size_t)m->maxB * m->maxT * C, sBT = (size_t)m->maxB * m->maxT;
    const size_t sATT = (size_t)m->maxB * NH * m->maxT * m->maxT;
    PwGPT2Params *p = &m->params, *g = &m->grads;
    PwGPT2Acts *a = &m->acts;

    size_t ss[SCR_COUNT];
    scratch_sizes(ss, &m->config, m->maxB, m->maxT);
    float *scr[SCR_COUNT];
    slice(scr, ss, SCR_COUNT, m->scratch_memory);
    float *dres = scr[SCR_DRES], *dln = scr[SCR_DLN], *datty = scr[SCR_DATTY];
    float *dqkv = scr[SCR_DQKV], *dfch = scr[SCR_DFCH], *dfch_gelu = scr[SCR_DFCHG];
    const size_t nBTC = (size_t)BT * C;

    /* heads: every head's gradient lands in dln = d(lnf) */
    zero(dln, nBTC);
    if ((m->heads & PW_HEAD_LM) && (dlogp || dentropy)) {
        /* the logits are dead after this step, so their buffer takes dlogits */
        pw_logprobs_backward(a->logits, a->logits, m->targets, dlogp, dentropy, BT, V);
        m->logits_valid = 0;
        pw_matmul_backward(dln, g->wte, NULL, a->logits, a->lnf, p->wte, BT, C, V);
    }
    if ((m->heads & PW_HEAD_VALUE) && dvalue)
        pw_matmul_backward(dln, g->valuew, g->valueb, dvalue, a->lnf, p->valuew, BT, C, 1);
    if ((m->heads & PW_HEAD_SCORE) && dscore) {
        for (int b = 0; b < B; b++) {
            if (m->last[b] < 0) continue;
            size_t row = ((size_t)b * T + m->last[b]) * C;
            pw_matmul_backward(dln + row, g->scorew, g->scoreb, dscore + b, a->lnf + row,
                               p->scorew, 1, C, 1);
        }
    }
    zero(dres, nBTC);
    pw_layernorm_backward(dres, g->lnfw, g->lnfb, dln, a->residual3 + (L - 1) * sBTC, p->lnfw,
                          a->lnf_mean, a->lnf_rstd, BT, C);

    /* dres holds d(output of layer l) on entry and d(input of layer l) on exit: the residual
     * adds pass it through unchanged, each LayerNorm backward adds its branch into it */
    for (int l = L - 1; l >= 0; l--) {
        const float *residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * sBTC;
        const float *ln1 = a->ln1 + l * sBTC, *ln1_mean = a->ln1_mean + l * sBT;
        const float *ln1_rstd = a->ln1_rstd + l * sBT, *qkv = a->qkv + l * 3 * sBTC;
        const float *atty = a->atty + l * sBTC, *att = a->att + l * sATT;
        const float *residual2 = a->residual2 + l * sBTC;
        const float *ln2 = a->ln2 + l * sBTC, *ln2_mean = a->ln2_mean + l * sBT;
        const float *ln2_rstd = a->ln2_rstd + l * sBT, *fch = a->fch + l * 4 * sBTC;
        const float *fch_gelu = a->fch_gelu + l * 4 * sBTC;

        zero(dfch_gelu, 4 * nBTC);
        pw_matmul_backward(dfch_gelu, g->fcprojw + (size_t)l * C * 4 * C, g->fcprojb + l * C,
                           dres, fch_gelu, p->fcprojw + (size_t)l * C * 4 * C, BT, 4 * C, C);
        zero(dfch, 4 * nBTC);
        pw_gelu_backward(dfch, fch, dfch_gelu, 4 * nBTC);
        zero(dln, nBTC);
        pw_matmul_backward(dln, g->fcw + (size_t)l * 4 * C * C, g->fcb + l * 4 * C, dfch, ln2,
                           p->fcw + (size_t)l * 4 * C * C, BT, C, 4 * C);
        pw_layernorm_backward(dres, g->ln2w + l * C, g->ln2b + l * C, dln, residual2,
                              p->ln2w + l * C, ln2_mean, ln2_rstd, BT, C);

        zero(datty, nBTC);
        pw_matmul_backward(datty, g->attprojw + (size_t)l * C * C, g->attprojb + l * C, dres,
                           atty, p->attprojw + (size_t)l * C * C, BT, C, C);
        zero(dqkv, 3 * nBTC);
        pw_attention_backward(dqkv, datty, qkv, att, m->mask, B, T, C, NH);
        zero(dln, nBTC);
        pw_matmul_backward(dln, g->qkvw + (size_t)l * 3 * C * C, g->qkvb + l * 3 * C, dqkv, ln1,
                           p->qkvw + (size_t)l * 3 * C * C, BT, C, 3 * C);
        pw_layernorm_backward(dres, g->ln1w + l * C, g->ln1b + l * C, dln, residual,
                              p->ln1w + l * C, ln1_mean, ln1_rstd, BT, C);
    }
    pw_encoder_backward(g->wte, g->wpe, dres, m->inputs, m->pos, B, T, C);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the weighted LM loss */

void pw_gpt2_next_token_targets(int *targets, const int *inp, const int *mask, int B, int T)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int i = b * T + t;
            int real = t + 1 < T && (!mask || (mask[i] && mask[i + 1]));
            targets[i] = real ? inp[i + 1] : -1;
        }
}

int pw_gpt2_mean_weights(float *w, const int *targets, int N)
{
    int count = 0;
    for (int i = 0; i < N; i++) count += targets[i] >= 0;
    for (int i = 0; i < N; i++) w[i] = (targets[i] >= 0 && count) ? 1.0f / count : 0.0f;
    return count;
}

double pw_gpt2_lm_loss(const PwGPT2 *m, const float *w)
{
    if (!(m->heads & PW_HEAD_LM) || m->B == 0) return NAN;
    double loss = 0.0;
    for (int i = 0; i < m->B * m->T; i++)
        if (m->targets[i] >= 0) loss -= (double)w[i] * m->acts.logp[i];
    return loss;
}

double pw_gpt2_lm_loss_backward(PwGPT2 *m, const float *w)
{
    double loss = pw_gpt2_lm_loss(m, w);
    if (isnan(loss)) return loss;
    int N = m->B * m->T;
    /* d(-sum w logp) / d logp = -w */
    float *dlogp = malloc((size_t)N * sizeof(float));
    if (!dlogp) return NAN;
    for (int i = 0; i < N; i++) dlogp[i] = -w[i];
    int rc = pw_gpt2_backward(m, dlogp, NULL, NULL, NULL);
    free(dlogp);
    return rc ? NAN : loss;
}

/* ------------------------------------------------------------------------------------------ */
/* optimiser */

double pw_gpt2_grad_norm(const PwGPT2 *m)
{
    if (!m->grads_memory) return 0.0;
    return sqrt(pw_sumsq(m->grads_memory, m->num_params));
}

double pw_gpt2_adamw_step(PwGPT2 *m, const PwAdamWConfig *cfg, int t)
{
    if (!m->grads_memory) return -1.0;
    if (!m->adam_m) {
        m->adam_m = calloc(m->num_params, sizeof(float));
        m->adam_v = calloc(m->num_params, sizeof(float));
        if (!m->adam_m || !m->adam_v) {
            free(m->adam_m);
            free(m->adam_v);
            m->adam_m = m->adam_v = NULL;
            return -1.0;
        }
    }
    double norm = pw_gpt2_grad_norm(m);
    if (cfg->grad_clip > 0.0f && norm > cfg->grad_clip)
        pw_scale(m->grads_memory, (float)(cfg->grad_clip / norm), m->num_params);
    /* one update per tensor: each tensor is contiguous and decays or not as a whole */
    size_t off = 0;
    for (int i = 0; i < PW_GPT2_NUM_PARAM_TENSORS; i++) {
        size_t n = m->param_sizes[i];
        if (n)
            pw_adamw_update(m->params_memory + off, m->grads_memory + off, m->adam_m + off,
                            m->adam_v + off, n, cfg->lr, cfg->beta1, cfg->beta2, cfg->eps,
                            param_decays[i] ? cfg->weight_decay : 0.0f, t);
        off += n;
    }
    return norm;
}
