/* gpt2.c: the GPT-2 family on the kernel table (pw_ops.h), written once for every device: layout,
 * init, one layer loop for the batch forward and the KV-cache passes, the heads, and backward. */
#include "gpt2.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_kernels.h" /* pw_positions_from_mask: host-side preparation of the inputs */

/* ------------------------------------------------------------------------------------------ */
/* architecture and layout */

/* When backward is done with each tensor's gradient (model_internal.h): the embedding also
 * takes the tied LM head's gradient, so it is final only at the very end. */
static const unsigned char param_ready[PW_GPT2_NUM_PARAM_TENSORS] = {
    PW_READY_BOTTOM, PW_READY_BOTTOM, PW_READY_LAYER, PW_READY_LAYER, PW_READY_LAYER,
    PW_READY_LAYER,  PW_READY_LAYER,  PW_READY_LAYER, PW_READY_LAYER, PW_READY_LAYER,
    PW_READY_LAYER,  PW_READY_LAYER,  PW_READY_LAYER, PW_READY_LAYER, PW_READY_TOP,
    PW_READY_TOP,    PW_READY_TOP,    PW_READY_TOP,   PW_READY_TOP,   PW_READY_TOP,
};

/* Read by the products alone, so a frozen bf16 model keeps them in bfloat16 only: the layers'
 * matrices (wte is the LM head's too, but the embedding reads it in float32). */
static const unsigned char param_bf16_only[PW_GPT2_NUM_PARAM_TENSORS] = {
    [PW_GPT2_QKVW] = 1, [PW_GPT2_ATTPROJW] = 1, [PW_GPT2_FCW] = 1, [PW_GPT2_FCPROJW] = 1,
};

static void tensor_sizes(size_t *s, const PwArch *cfg, int heads, size_t Vp);

static int arch_check(const PwArch *c, PwErr *err)
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
    /* the Llama family's choices: GPT-2's heads are n_embd / n_head, its blocks fixed */
    if (c->head_dim || c->qk_norm || c->o_bias || c->qkv_bias)
        return pw_errf(err, "GPT-2 has no head_dim, q/k norms or separate attention biases "
                       "(head_dim %d, qk_norm %d, o_bias %d, qkv_bias %d): those are the Llama "
                       "family's", c->head_dim, c->qk_norm, c->o_bias, c->qkv_bias);
    size_t s[PW_GPT2_NUM_PARAM_TENSORS];
    tensor_sizes(s, c, PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE,
                 (size_t)c->vocab_size + PW_VOCAB_MULTIPLE_MAX);
    char what[160];
    snprintf(what, sizeof what, "n_layer %d, n_head %d, n_embd %d, vocab_size %d, n_positions %d",
             c->n_layer, c->n_head, c->n_embd, c->vocab_size, c->n_positions);
    return pw_model_check_size(s, PW_GPT2_NUM_PARAM_TENSORS, what, err);
}

static const char *const param_names[PW_GPT2_NUM_PARAM_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb", "ln2w", "ln2b",
    "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb", "scorew", "scoreb", "valuew", "valueb",
};

/* Which tensors weight decay applies to: the 2D ones (embeddings and Linear weights). */
static const unsigned char param_decays[PW_GPT2_NUM_PARAM_TENSORS] = {
    1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0,
};

static void tensor_sizes(size_t *s, const PwArch *cfg, int heads, size_t Vp)
{
    size_t L = cfg->n_layer, C = cfg->n_embd, P = cfg->n_positions;
    s[0] = Vp * C; /* the real rows, then the padding rows */
    s[1] = P * C;
    s[2] = L * C;
    s[3] = L * C;
    /* L and C are ints, so L x 4 x C cannot wrap; times C again it may */
    s[4] = pw_size_mul(L * 3 * C, C);
    s[5] = L * 3 * C;
    s[6] = pw_size_mul(L * C, C);
    s[7] = L * C;
    s[8] = L * C;
    s[9] = L * C;
    s[10] = pw_size_mul(L * 4 * C, C);
    s[11] = L * 4 * C;
    s[12] = pw_size_mul(L * 4 * C, C);
    s[13] = L * C;
    s[14] = C;
    s[15] = C;
    s[16] = (heads & PW_HEAD_SCORE) ? C : 0;
    s[17] = (heads & PW_HEAD_SCORE) ? 1 : 0;
    s[18] = (heads & PW_HEAD_VALUE) ? C : 0;
    s[19] = (heads & PW_HEAD_VALUE) ? 1 : 0;
}

static double flops_per_token(const PwModel *m, int T)
{
    double L = m->arch.n_layer, C = m->arch.n_embd, V = m->arch.vocab_size;
    /* every matmul weight is used once per token forward (2 flops per weight) and twice in
     * backward (4); attention adds q.k and att.v over T keys: 2*2*T*C forward, twice that back */
    double matmul_params = 12.0 * L * C * C;
    if (m->heads & PW_HEAD_LM) matmul_params += V * C;
    return 6.0 * matmul_params + 12.0 * L * C * T;
}

/* ------------------------------------------------------------------------------------------ */
/* activations kept by the batch forward for backward, sized for maxB x maxT; a smaller batch
 * uses the front of each per-layer slice. Allocated by the first forward, so a model that only
 * decodes (a generator) never holds them. */

#define NUM_ACTS 31
typedef struct Acts {
    float *encoded;   /* (B, T, C) */
    float *ln1;       /* (L, B, T, C); at bf16 none: made and kept as ln1_16 */
    float *ln1_mean;  /* (L, B, T) */
    float *ln1_rstd;  /* (L, B, T) */
    float *qkv;       /* (L, B, T, 3C); at bf16 none: made and kept as qkv_16 */
    float *atty;      /* (L, B, T, C); at bf16 none: made and kept as atty_16 */
    float *lse;       /* (L, B, NH, T) each query's log-sum-exp: backward recomputes the
                       * probabilities from it, so no (T, T) matrix is kept */
    float *attproj;   /* (B, T, C) one layer: added to the residual stream at once and read
                       * by no backward */
    float *residual2; /* (L, B, T, C) */
    float *ln2;       /* (L, B, T, C); at bf16 none: ln2_16 */
    float *ln2_mean;  /* (L, B, T) */
    float *ln2_rstd;  /* (L, B, T) */
    float *fch;       /* (L, B, T, 4C); at bf16 none: made and kept as fch_16 */
    float *fch_gelu;  /* (L, B, T, 4C); at bf16 none: fchg_16 */
    float *fcproj;    /* (B, T, C) one layer, as attproj */
    float *residual3; /* (L, B, T, C) */
    float *lnf;       /* (B, T, C) */
    float *lnf_mean;  /* (B, T) */
    float *lnf_rstd;  /* (B, T) */
    float *logits;    /* (B, T, Vp) LM head only, or lm_rows of them (m->lm_rows); backward
                       * overwrites it with dlogits */
    float *logp;      /* (B, T) log p(target) (0 where the target is negative) */
    float *entropy;   /* (B, T) entropy of the next-token distribution (0 where no target) */
    float *value;     /* (B, T) value head only */
    float *score;     /* (B) score head only */
    float *ln1_16;    /* (L, B, T, C) bfloat16 at bf16 (the table's _bf16 producers), else
                       * empty */
    float *ln2_16;    /* (L, B, T, C) bfloat16 at bf16, else empty */
    float *fchg_16;   /* (L, B, T, 4C) bfloat16 at bf16, else empty */
    float *fch_16;    /* (L, B, T, 4C) bfloat16 at bf16 (the GELU's input), else empty */
    float *qkv_16;    /* (L, B, T, 3C) bfloat16 at bf16 (what the attention reads), else
                       * empty */
    float *atty_16;   /* (L, B, T, C) bfloat16 at bf16 (the attention's output: what the
                       * projection and the attention's backward read), else empty */
    float *lpstats;   /* (B, T, PW_LP_STATS) each row's log-softmax statistics, kept by the
                       * forward so that the backward reads the logits once */
} Acts;

/* Backward needs gradients of one layer's activations at a time, never all layers at once:
 * dres (B,T,C) carries the residual stream's gradient down the layers, the rest is reused by
 * every layer. */
enum { SCR_DRES, SCR_DLN, SCR_DATTY, SCR_DQKV, SCR_DFCH, SCR_DFCHG, SCR_DRES16, SCR_COUNT };

typedef struct Gpt2 {
    Acts a;
    float *acts_memory;
    float *scratch_memory;
    int logits_valid; /* 1 after forward, 0 once backward reused the buffer */
} Gpt2;

static void act_sizes(size_t *s, const PwModel *m)
{
    const PwArch *cfg = &m->arch;
    const int heads = m->heads;
    const size_t C = cfg->n_embd, NH = cfg->n_head, Vp = m->Vp;
    /* L: the layers' slots of what the backward reads (one with recompute or none); Lo: of
     * their outputs */
    const size_t L = pw_model_layer_slots(m), Lo = pw_model_out_slots(m);
    const size_t B = m->maxB, T = m->maxT, BT = B * T;
    /* at bf16 the products' inputs are made and kept in bfloat16 only, and so are the qkv and
     * fc products' outputs, which the products round themselves (Lk: no float32 layer) */
    const int bf16 = m->precision == PW_PRECISION_BF16;
    const size_t Lk = bf16 ? 0 : L;
    s[0] = BT * C;             /* encoded */
    s[1] = Lk * BT * C;        /* ln1 */
    s[2] = L * BT;             /* ln1_mean */
    s[3] = L * BT;             /* ln1_rstd */
    s[4] = Lk * BT * 3 * C;    /* qkv */
    s[5] = Lk * BT * C;        /* atty */
    s[6] = L * B * NH * T;     /* lse */
    s[7] = BT * C;             /* attproj */
    s[8] = L * BT * C;         /* residual2 */
    s[9] = Lk * BT * C;        /* ln2 */
    s[10] = L * BT;            /* ln2_mean */
    s[11] = L * BT;            /* ln2_rstd */
    s[12] = Lk * BT * 4 * C;   /* fch */
    s[13] = Lk * BT * 4 * C;   /* fch_gelu */
    s[14] = BT * C;            /* fcproj */
    s[15] = Lo * BT * C;       /* residual3 */
    s[16] = BT * C;            /* lnf */
    s[17] = BT;                /* lnf_mean */
    s[18] = BT;                /* lnf_rstd */
    s[19] = (heads & PW_HEAD_LM) ? (size_t)m->lm_rows * Vp : 0; /* logits (a chunk's) */
    s[20] = (heads & PW_HEAD_LM) ? BT : 0;     /* logp */
    s[21] = (heads & PW_HEAD_LM) ? BT : 0;     /* entropy */
    s[22] = (heads & PW_HEAD_VALUE) ? BT : 0;  /* value */
    s[23] = (heads & PW_HEAD_SCORE) ? B : 0;   /* score */
    s[24] = pw_model_kept_floats(m->precision, L * BT * C);     /* ln1_16 */
    s[25] = pw_model_kept_floats(m->precision, L * BT * C);     /* ln2_16 */
    s[26] = pw_model_kept_floats(m->precision, L * BT * 4 * C); /* fchg_16 */
    s[27] = pw_model_kept_floats(m->precision, L * BT * 4 * C); /* fch_16 */
    s[28] = pw_model_kept_floats(m->precision, L * BT * 3 * C); /* qkv_16 */
    s[29] = pw_model_kept_floats(m->precision, L * BT * C);     /* atty_16 */
    s[30] = (heads & PW_HEAD_LM) ? BT * PW_LP_STATS : 0;        /* lpstats */
}

static void scratch_sizes(size_t *s, const PwModel *m)
{
    size_t BT = (size_t)m->maxB * m->maxT, C = m->arch.n_embd;
    s[SCR_DRES] = BT * C;
    s[SCR_DLN] = BT * C;
    s[SCR_DATTY] = BT * C;
    s[SCR_DQKV] = BT * 3 * C;
    s[SCR_DFCH] = BT * 4 * C;
    s[SCR_DFCHG] = BT * 4 * C;
    /* at bf16: dres rounded, the projections' dout, made by the LayerNorm backwards */
    s[SCR_DRES16] = pw_model_kept_floats(m->precision, BT * C);
}

/* the backward's scratch alone (made by the first backward) */
static size_t backward_bytes(const PwModel *m)
{
    size_t s[SCR_COUNT];
    scratch_sizes(s, m);
    return pw_model_arena_floats(s, SCR_COUNT) * sizeof(float);
}

/* what the first forward allocates (the activations it keeps for the backward) */
static size_t forward_bytes(const PwModel *m)
{
    size_t a[NUM_ACTS];
    act_sizes(a, m);
    return pw_model_arena_floats(a, NUM_ACTS) * sizeof(float);
}

static int attach(PwModel *m, PwErr *err)
{
    if (!(m->fam = calloc(1, sizeof(Gpt2)))) return pw_errf(err, "out of host memory");
    return 0;
}

static void detach(PwModel *m)
{
    Gpt2 *g = m->fam;
    if (!g) return;
    m->ops->free(m->ops, g->acts_memory);
    m->ops->free(m->ops, g->scratch_memory);
    free(g);
    m->fam = NULL;
}

static int ensure_acts(PwModel *m, PwErr *err)
{
    Gpt2 *g = m->fam;
    size_t s[NUM_ACTS];
    act_sizes(s, m);
    return pw_model_alloc_slices(m, &g->acts_memory, (float **)&g->a, s, NUM_ACTS,
                                 "the activations", err);
}

/* ------------------------------------------------------------------------------------------ */
/* init (pw_model_fill_*: the project's portable generator) */

/* Head weights N(0, 1/sqrt(C+1)), bias 0. */
static void init_heads(const PwModel *m, float *host, int heads, uint64_t seed)
{
    pw_model_init_heads(m, host, heads, seed, PW_GPT2_SCOREW, PW_GPT2_VALUEW);
}

/* GPT-2's: weights N(0, 0.02), attn.c_proj and mlp.c_proj scaled by 1/sqrt(2 L), biases 0,
 * LayerNorm weight 1 bias 0. Each tensor draws from its own stream, so adding a head does not
 * change the trunk. */
static void init_random(const PwModel *m, float *host, uint64_t seed)
{
    PwGPT2Params params = pw_gpt2_view(m, host);
    float **p = (float **)&params;
    const double std = 0.02;
    /* GPT-2 scales the projections that write into the residual stream by 1/sqrt(2L), since
     * each layer adds two of them to it */
    const double std_res = 0.02 / sqrt(2.0 * m->arch.n_layer);
    for (int i = 0; i < 16; i++) {
        size_t n = m->tensor_size[i];
        switch (i) {
        case 0: case 1: case 4: case 10: pw_model_fill_normal(p[i], n, std, seed, i); break;
        case 6: case 12: pw_model_fill_normal(p[i], n, std_res, seed, i); break;
        case 2: case 8: case 14: pw_model_fill_const(p[i], n, 1.0f); break; /* LayerNorm weights */
        default: pw_model_fill_const(p[i], n, 0.0f); break;                 /* biases */
        }
    }
    init_heads(m, host, PW_HEAD_SCORE | PW_HEAD_VALUE, seed);
}

/* ------------------------------------------------------------------------------------------ */
/* one transformer block, the same for the batch forward and the KV-cache passes */

/* Where a block reads and writes. The batch forward gives every layer buffers of its own (kept
 * for backward); a cache pass runs every layer in one set, updating the residual stream x in
 * place (in = res2 = out), reusing one LayerNorm buffer and one projection buffer. */
typedef struct Block {
    const float *in;
    float *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *lse, *attproj, *res2;
    float *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *fcproj, *out;
    /* At bf16: the products' inputs made and kept in bfloat16 instead of ln1, ln2 and fch_gelu,
     * and fch's bfloat16 rounding (the GELU's input) kept for the backward (fch_16); NULL at
     * fp32, and fch_16 in a cache pass */
    uint16_t *ln1_16, *ln2_16, *fchg_16, *fch_16;
    /* the batch forward at bf16: q, k, v in bfloat16, what the attention reads, forward and
     * backward (NULL: a cache pass, or fp32) */
    uint16_t *qkv_16;
    /* at bf16: the attention's output rounded to bfloat16 instead of atty, all the projection
     * reads (the batch forward keeps it for the attention's and the projection's backward) */
    uint16_t *atty_16;
} Block;

/* Whom the queries attend to: the rows of a left-padded batch (cache NULL), or the KV cache
 * rows of the packed tokens of a pass. */
typedef struct Attend {
    const int *mask;
    int B, T;
    const PwKVCache *cache;
} Attend;

/* A LayerNorm's output (into out, or in bfloat16 only into out16 when there is one), its
 * statistics and its weights */
typedef struct Norm {
    float *out;
    uint16_t *out16;
    float *mean, *rstd;
    const float *w, *b;
} Norm;

/* layer l's first LayerNorm, into the buffers of k */
static Norm ln1_of(const PwGPT2Params *p, const Block *k, int l, int C)
{
    const size_t lC = (size_t)l * C;
    return (Norm){k->ln1, k->ln1_16, k->ln1_mean, k->ln1_rstd, p->ln1w + lC, p->ln1b + lC};
}

static void layernorm(const PwOps *o, const Norm *n, const float *inp, int N, int C)
{
    if (n->out16)
        o->layernorm_forward_bf16(o, n->out16, n->mean, n->rstd, inp, n->w, n->b, N, C);
    else
        o->layernorm_forward(o, n->out, n->mean, n->rstd, inp, n->w, n->b, N, C);
}

/* res = a + b and, when n is given, the LayerNorm n of res: one pass where the device fuses
 * them (the residual stream is read once instead of twice, a launch fewer) */
static void residual_norm(const PwOps *o, float *res, const float *a, const float *b,
                          const Norm *n, int N, int C)
{
    if (n)
        o->residual_layernorm_forward(o, res, n->out, n->out16, n->mean, n->rstd, a, b, n->w,
                                      n->b, N, C);
    else
        o->residual_forward(o, res, a, b, (size_t)N * C);
}

/* layer l's product weights (pw_model_weight: float32 where kept, and the bfloat16 mirror) */
typedef struct LayerW {
    PwWeight qkv, proj, fc, fcproj;
} LayerW;
static LayerW layer_weights(const PwModel *m, int l)
{
    const size_t CC = (size_t)m->arch.n_embd * m->arch.n_embd;
    return (LayerW){pw_model_weight(m, PW_GPT2_QKVW, 3 * CC * l),
                    pw_model_weight(m, PW_GPT2_ATTPROJW, CC * l),
                    pw_model_weight(m, PW_GPT2_FCW, 4 * CC * l),
                    pw_model_weight(m, PW_GPT2_FCPROJW, 4 * CC * l)};
}

/* Layer l. Its first LayerNorm is made here unless the layer before made it with its last
 * residual add (ln1_done); `next` is the LayerNorm that this layer's last residual add feeds
 * (the next layer's first, or the final one), NULL for none. */
static void block_forward(const PwModel *m, const PwGPT2Params *p, int l, const Block *k, int N,
                          const Attend *at, int ln1_done, const Norm *next)
{
    const PwOps *o = m->ops;
    const int C = m->arch.n_embd, NH = m->arch.n_head;
    const size_t lC = (size_t)l * C; /* layer offsets may pass INT_MAX */
    const LayerW w = layer_weights(m, l);
    /* attention half: x + proj(attn(ln1(x))) */
    Norm ln1 = ln1_of(p, k, l, C), ln2 = {k->ln2, k->ln2_16, k->ln2_mean, k->ln2_rstd,
                                          p->ln2w + lC, p->ln2b + lC};
    if (!ln1_done) layernorm(o, &ln1, k->in, N, C);
    /* the batch forward at bf16 makes q, k, v rounded (all its attention reads) */
    pw_model_matmul_forward_out(m, k->qkv, k->qkv_16, k->ln1, k->ln1_16, w.qkv,
                                p->qkvb + 3 * lC, N, C, 3 * C);
    if (at->cache)
        pw_kv_attend(at->cache, l, k->atty, k->atty_16, k->qkv);
    else
        pw_model_attention_forward(m, k->atty, k->atty_16, k->lse, k->qkv, k->qkv_16, at->mask,
                                   at->B, at->T, NH, NH, C / NH);
    pw_model_matmul_forward(m, k->attproj, k->atty, k->atty_16, w.proj, p->attprojb + lC,
                            N, C, C);
    /* MLP half: res2 + fcproj(gelu(fc(ln2(res2)))) */
    residual_norm(o, k->res2, k->in, k->attproj, &ln2, N, C);
    /* the MLP's activations in bfloat16 at bf16, as PyTorch's autocast has them: the batch
     * forward makes fch rounded and keeps it for the backward (fch_16, fch NULL); a cache pass
     * makes it in float32 and the GELU rounds it as it reads it. The product and its GELU are
     * one entry at bf16 (the GPU may fuse them: pw_ops.h) */
    if (k->fchg_16) {
        o->matmul_gelu_forward_bf16(o, k->fchg_16, k->fch_16, k->fch, k->ln2, k->ln2_16, w.fc.f,
                                    w.fc.h, p->fcb + 4 * lC, N, C, 4 * C);
    } else {
        pw_model_matmul_forward_out(m, k->fch, k->fch_16, k->ln2, k->ln2_16, w.fc,
                                    p->fcb + 4 * lC, N, C, 4 * C);
        o->gelu_forward(o, k->fch_gelu, k->fch, (size_t)N * 4 * C);
    }
    pw_model_matmul_forward(m, k->fcproj, k->fch_gelu, k->fchg_16, w.fcproj,
                            p->fcprojb + lC, N, 4 * C, C);
    residual_norm(o, k->out, k->res2, k->fcproj, next, N, C);
}

/* Layer l's buffers of the batch forward: per-layer strides follow the capacity, not the
 * batch, so that slices do not move. At bf16 ln1, ln2 and fch_gelu exist in bfloat16 only. */
static Block batch_block(const PwModel *m, const Acts *a, int l)
{
    const size_t C = m->arch.n_embd, NH = m->arch.n_head;
    const size_t sBTC = (size_t)m->maxB * m->maxT * C, sBT = (size_t)m->maxB * m->maxT;
    const size_t sLSE = (size_t)m->maxB * NH * m->maxT;
    const int bf16 = m->precision == PW_PRECISION_BF16;
    const size_t j = pw_model_layer_slot(m, l); /* l, or the one set (PwActs) */
    return (Block){
        .in = l == 0 ? a->encoded : a->residual3 + pw_model_out_slot(m, l - 1) * sBTC,
        .ln1 = bf16 ? NULL : a->ln1 + j * sBTC, .ln1_mean = a->ln1_mean + j * sBT,
        .ln1_rstd = a->ln1_rstd + j * sBT, .qkv = bf16 ? NULL : a->qkv + j * 3 * sBTC,
        .atty = bf16 ? NULL : a->atty + j * sBTC, .lse = a->lse + j * sLSE,
        .attproj = a->attproj,
        .res2 = a->residual2 + j * sBTC, .ln2 = bf16 ? NULL : a->ln2 + j * sBTC,
        .ln2_mean = a->ln2_mean + j * sBT, .ln2_rstd = a->ln2_rstd + j * sBT,
        .fch = bf16 ? NULL : a->fch + j * 4 * sBTC,
        .fch_gelu = bf16 ? NULL : a->fch_gelu + j * 4 * sBTC,
        .fcproj = a->fcproj, .out = a->residual3 + pw_model_out_slot(m, l) * sBTC,
        .ln1_16 = bf16 ? (uint16_t *)a->ln1_16 + j * sBTC : NULL,
        .ln2_16 = bf16 ? (uint16_t *)a->ln2_16 + j * sBTC : NULL,
        .fchg_16 = bf16 ? (uint16_t *)a->fchg_16 + j * 4 * sBTC : NULL,
        .fch_16 = bf16 ? (uint16_t *)a->fch_16 + j * 4 * sBTC : NULL,
        .qkv_16 = bf16 ? (uint16_t *)a->qkv_16 + j * 3 * sBTC : NULL,
        .atty_16 = bf16 ? (uint16_t *)a->atty_16 + j * sBTC : NULL,
    };
}

/* layer l's first norm in the batch forward (made by the layer before it, l > 0) */
static Norm batch_ln1(const PwModel *m, const PwGPT2Params *p, const Acts *a, int l)
{
    Block k = batch_block(m, a, l);
    return ln1_of(p, &k, l, m->arch.n_embd);
}

/* The heads' buffers and weights (gr: their gradients, NULL in the forward). */
static PwHeads heads(const PwModel *m, const PwGPT2Params *p, const PwGPT2Params *gr,
                     const Acts *a)
{
    return (PwHeads){a->lnf, a->logits, a->logp, a->entropy, a->value, a->score, a->lpstats,
                     pw_model_weight(m, PW_GPT2_WTE, 0), p->scorew, p->scoreb, p->valuew,
                     p->valueb,
                     gr ? gr->wte : NULL, gr ? gr->scorew : NULL, gr ? gr->scoreb : NULL,
                     gr ? gr->valuew : NULL, gr ? gr->valueb : NULL};
}

/* ------------------------------------------------------------------------------------------ */
/* the batch forward */

static int forward(PwModel *m, PwErr *err)
{
    if (ensure_acts(m, err)) return -1;
    Gpt2 *g = m->fam;
    const PwOps *o = m->ops;
    const int L = m->arch.n_layer, C = m->arch.n_embd;
    const int B = m->B, T = m->T, BT = B * T;
    PwGPT2Params p = pw_gpt2_stored(m);
    Acts *a = &g->a;

    o->encoder_forward(o, a->encoded, m->d_inputs, m->d_pos, p.wte, p.wpe, B, T, C);
    Attend at = {.mask = m->d_mask, .B = B, .T = T};
    /* each layer's last residual add makes the next LayerNorm: the next layer's first, then
     * the final one */
    const Norm lnf = {a->lnf, NULL, a->lnf_mean, a->lnf_rstd, p.lnfw, p.lnfb};
    for (int l = 0; l < L; l++) {
        Block k = batch_block(m, a, l);
        Norm next = l + 1 < L ? batch_ln1(m, &p, a, l + 1) : lnf;
        block_forward(m, &p, l, &k, BT, &at, l > 0, &next);
    }

    PwHeads h = heads(m, &p, NULL, a);
    g->logits_valid = pw_model_heads_forward(m, &h);
    return 0;
}

static void outputs(PwModel *m, PwFamilyOutputs *out)
{
    Gpt2 *g = m->fam;
    *out = (PwFamilyOutputs){g->a.logp, g->a.entropy, g->a.value, g->a.score,
                             g->logits_valid ? g->a.logits : NULL};
}

/* the LM head is the embedding */
static int lm_tensor(const PwModel *m) { return (void)m, PW_GPT2_WTE; }

/* ------------------------------------------------------------------------------------------ */
/* backward */

static int backward(PwModel *m, const float *dlogp, const float *dentropy, const float *dvalue,
                    const float *dscore, PwErr *err)
{
    Gpt2 *g = m->fam;
    const PwOps *o = m->ops;
    const PwArch *cfg = &m->arch;
    const int L = cfg->n_layer, C = cfg->n_embd, NH = cfg->n_head;
    const int B = m->B, T = m->T, BT = B * T;
    const size_t sBTC = (size_t)m->maxB * m->maxT * C;
    size_t ss[SCR_COUNT];
    scratch_sizes(ss, m);
    float *scr[SCR_COUNT];
    if (pw_model_alloc_slices(m, &g->scratch_memory, scr, ss, SCR_COUNT, "the backward scratch",
                              err))
        return -1;
    /* gr: the gradients of the tensors not made layer by layer; gl below: layer l's */
    PwGPT2Params p = pw_gpt2_stored(m), gr;
    pw_model_grad_view(m, -1, (float **)&gr);
    Acts *a = &g->a;
    float *dres = scr[SCR_DRES], *dln = scr[SCR_DLN], *datty = scr[SCR_DATTY];
    float *dqkv = scr[SCR_DQKV], *dfch = scr[SCR_DFCH], *dfch_gelu = scr[SCR_DFCHG];
    /* bf16: each LayerNorm backward also writes dres rounded, the next projection's dout */
    uint16_t *dres16 = m->precision == PW_PRECISION_BF16 ? (uint16_t *)scr[SCR_DRES16] : NULL;
    const size_t nBTC = (size_t)BT * C, fBTC = nBTC * sizeof(float);

    /* heads: every head's gradient lands in dln = d(lnf) */
    PwHeads h = heads(m, &p, &gr, a);
    if (pw_model_heads_backward(m, &h, dln, dlogp, dentropy, dvalue, dscore))
        g->logits_valid = 0;
    o->zero(o, dres, fBTC);
    o->layernorm_backward(o, dres, dres16, gr.lnfw, gr.lnfb, dln,
                          a->residual3 + pw_model_out_slot(m, L - 1) * sBTC, p.lnfw, a->lnf_mean,
                          a->lnf_rstd, BT, C);
    pw_model_ready_top(m);

    /* dres holds d(output of layer l) on entry and d(input of layer l) on exit: the residual
     * adds pass it through unchanged, each LayerNorm backward adds its branch into it */
    const Attend at = {.mask = m->d_mask, .B = B, .T = T};
    for (int l = L - 1; l >= 0; l--) {
        Block k = batch_block(m, a, l);
        const LayerW w = layer_weights(m, l);
        const size_t lC = (size_t)l * C;
        PwGPT2Params gl;
        pw_model_grad_view(m, l, (float **)&gl);
        /* activation checkpointing: the layer's activations made again from its kept input,
         * into the one set, its first LayerNorm included (the forward's came fused with the
         * layer below: the same numbers from the same input) */
        if (m->acts == PW_ACTS_RECOMPUTE) block_forward(m, &p, l, &k, BT, &at, 0, NULL);
        /* the layer's input gradients of the products are set, not added to (set_dinp). bf16:
         * the down-projection's and the GELU's backward in one entry (the GPU may fuse them),
         * dfch set rounded, the up-projection's dout as it reads it */
        uint16_t *dfch16 = k.fch_16 ? (uint16_t *)dfch : NULL;
        if (dfch16) {
            o->matmul_backward_gelu_bf16(o, dfch16, k.fch_16, dfch_gelu, gl.fcprojw,
                                         gl.fcprojb, dres16 ? NULL : dres, dres16,
                                         (size_t)C, k.fch_gelu, k.fchg_16, w.fcproj.f,
                                         w.fcproj.h, BT, 4 * C, C);
        } else {
            pw_model_matmul_backward_either(m, dfch_gelu, gl.fcprojw,
                                            gl.fcprojb, dres, dres16, k.fch_gelu,
                                            k.fchg_16, w.fcproj, BT, 4 * C, C, 1);
            o->zero(o, dfch, 4 * fBTC);
            o->gelu_backward(o, dfch, k.fch, dfch_gelu, 4 * nBTC);
        }
        pw_model_matmul_backward_either(m, dln, gl.fcw, gl.fcb, dfch,
                                        dfch16, k.ln2, k.ln2_16, w.fc, BT, C, 4 * C,
                                        1);
        o->layernorm_backward(o, dres, dres16, gl.ln2w, gl.ln2b, dln, k.res2,
                              p.ln2w + lC, k.ln2_mean, k.ln2_rstd, BT, C);

        pw_model_matmul_backward_either(m, datty, gl.attprojw, gl.attprojb, dres,
                                        dres16, k.atty, k.atty_16, w.proj, BT, C, C,
                                        1);
        /* bf16: dqkv set rounded, the product's dout as it reads it */
        uint16_t *dqkv16 = k.qkv_16 ? (uint16_t *)dqkv : NULL;
        pw_model_attention_backward(m, dqkv16 ? NULL : dqkv, dqkv16, datty, k.qkv, k.qkv_16,
                                    k.atty_16, k.lse, m->d_mask, B, T, NH, NH, C / NH);
        pw_model_matmul_backward_either(m, dln, gl.qkvw, gl.qkvb, dqkv,
                                        dqkv16, k.ln1, k.ln1_16, w.qkv, BT, C,
                                        3 * C, 1);
        /* layer 0's input gradient goes to the embeddings in float32 only */
        o->layernorm_backward(o, dres, l > 0 ? dres16 : NULL, gl.ln1w, gl.ln1b, dln,
                              k.in, p.ln1w + lC, k.ln1_mean, k.ln1_rstd, BT, C);
        pw_model_ready_layer(m, l);
    }
    o->encoder_backward(o, gr.wte, gr.wpe, dres, m->d_inputs, m->d_pos, pw_model_row_groups(m, 1),
                        B, T, C);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the KV cache: the same blocks over the packed new tokens of a pass */

enum { K_X, K_LN, K_MEAN, K_RSTD, K_QKV, K_ATTY, K_PROJ, K_FC, K_HEAD, K_LN16, K_FCG16,
       K_NUM };

typedef struct Gpt2Cache {
    float *buf[K_NUM]; /* slices of memory, sizes of kv_sizes */
    float *memory;
} Gpt2Cache;

static void kv_sizes(size_t *s, const PwKVCache *c)
{
    const PwArch *a = &c->m->arch;
    size_t C = a->n_embd, Vp = c->m->Vp, B = c->maxB, N = c->maxN;
    s[K_X] = N * C;          /* the residual stream of the pass */
    s[K_LN] = N * C;         /* LayerNorm output */
    s[K_MEAN] = N;
    s[K_RSTD] = N;
    s[K_QKV] = N * 3 * C;
    s[K_ATTY] = N * C;       /* attention output; after the layers, the gathered last tokens */
    s[K_PROJ] = N * C;       /* either projection into the residual stream */
    s[K_FC] = N * 4 * C;     /* MLP hidden, GELU in place */
    s[K_HEAD] = B * Vp;      /* logits of each segment's last token */
    /* at bf16 the blocks make what the batch forward makes in bfloat16 (batch_block), so that
     * a pass's numbers are the batch forward's: the LayerNorm outputs, the GELU's (on fch
     * rounded, which a pass does not keep) */
    PwPrecision pr = c->m->precision;
    s[K_LN16] = pw_model_kept_floats(pr, N * C);
    s[K_FCG16] = pw_model_kept_floats(pr, N * 4 * C);
}

static size_t kv_bytes(const PwKVCache *c)
{
    size_t s[K_NUM];
    kv_sizes(s, c);
    return pw_model_arena_floats(s, K_NUM) * sizeof(float);
}

static int kv_attach(PwKVCache *c, PwErr *err)
{
    Gpt2Cache *k = calloc(1, sizeof *k);
    if (!k) return pw_errf(err, "out of host memory");
    c->fam = k;
    size_t s[K_NUM];
    kv_sizes(s, c);
    return pw_model_alloc_slices(c->m, &k->memory, k->buf, s, K_NUM, "a KV cache", err);
}

static void kv_detach(PwKVCache *c)
{
    Gpt2Cache *k = c->fam;
    if (!k) return;
    c->m->ops->free(c->m->ops, k->memory);
    free(k);
    c->fam = NULL;
}

/* The blocks over the c->ntok packed tokens, then the final LayerNorm and the LM head on the
 * last token of each segment only: the logits are one (nseg, C) x (C, Vp) product. */
static const float *kv_pass(PwKVCache *c)
{
    const PwModel *m = c->m;
    const PwOps *o = m->ops;
    Gpt2Cache *k = c->fam;
    float **b = k->buf;
    const int L = m->arch.n_layer, C = m->arch.n_embd, Vp = m->Vp, N = c->ntok;
    PwGPT2Params p = pw_gpt2_stored(m);

    o->encoder_forward(o, b[K_X], c->d_tok, c->d_pos, p.wte, p.wpe, 1, N, C);
    Block blk = {
        .in = b[K_X], .ln1 = b[K_LN], .ln1_mean = b[K_MEAN], .ln1_rstd = b[K_RSTD],
        .qkv = b[K_QKV], .atty = b[K_ATTY], .lse = NULL, .attproj = b[K_PROJ], .res2 = b[K_X],
        .ln2 = b[K_LN], .ln2_mean = b[K_MEAN], .ln2_rstd = b[K_RSTD], .fch = b[K_FC],
        .fch_gelu = b[K_FC], .fcproj = b[K_PROJ], .out = b[K_X],
    };
    if (m->precision == PW_PRECISION_BF16) {
        blk.ln1_16 = blk.ln2_16 = (uint16_t *)b[K_LN16];
        blk.fchg_16 = (uint16_t *)b[K_FCG16];
        /* free from the qkv product, which read ln1, until the second LayerNorm, which comes
         * after the projection has read it */
        blk.atty_16 = (uint16_t *)b[K_LN16];
    }
    Attend at = {.cache = c};
    for (int l = 0; l < L; l++) {
        /* the last layer's residual add makes no LayerNorm: the final one reads gathered rows */
        Norm next = {0};
        if (l + 1 < L) next = ln1_of(&p, &blk, l + 1, C);
        block_forward(m, &p, l, &blk, N, &at, l > 0, l + 1 < L ? &next : NULL);
    }
    /* only the last token of each segment predicts anything sampled: gather those rows of x
     * (into atty, free now) */
    o->gather_rows(o, b[K_ATTY], b[K_X], c->d_seg_last, c->nseg, C);
    /* at bf16 the final LayerNorm rounded, what the LM head reads (no conversion there) */
    const Norm lnf = {b[K_LN], blk.ln1_16, b[K_MEAN], b[K_RSTD], p.lnfw, p.lnfb};
    layernorm(o, &lnf, b[K_ATTY], c->nseg, C);
    pw_model_matmul_forward(m, b[K_HEAD], b[K_LN], blk.ln1_16, pw_model_weight(m, PW_GPT2_WTE, 0),
                            NULL, c->nseg, C, Vp);
    return b[K_HEAD];
}

/* ------------------------------------------------------------------------------------------ */

const PwFamilyImpl pw_gpt2_family = {
    .family = PW_FAMILY_GPT2,
    .name = "gpt2",
    .model_types = (const char *const[]){"gpt2", NULL},
    .ntensors = PW_GPT2_NUM_PARAM_TENSORS,
    .tensor_names = param_names,
    .tensor_decays = param_decays,
    .tensor_ready = param_ready,
    .tensor_bf16_only = param_bf16_only,
    .lm_tensor = lm_tensor,
    .arch_check = arch_check,
    .arch_from_json = pw_gpt2_arch_from_json,
    .tensor_sizes = tensor_sizes,
    .flops_per_token = flops_per_token,
    .forward_bytes = forward_bytes,
    .backward_bytes = backward_bytes,
    .attach = attach,
    .detach = detach,
    .init_random = init_random,
    .init_heads = init_heads,
    .forward = forward,
    .outputs = outputs,
    .backward = backward,
    .save = pw_gpt2_save,
    .load = pw_gpt2_load,
    .kv_bytes = kv_bytes,
    .kv_attach = kv_attach,
    .kv_detach = kv_detach,
    .kv_pass = kv_pass,
};
