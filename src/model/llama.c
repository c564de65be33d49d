/* llama.c: the Llama family (Llama 3, Qwen2, Qwen3, Mistral, SmolLM) on the kernel table
 * (pw_ops.h): RMSNorm, rotary embeddings, grouped-query attention (Qwen3: each query and key head
 * RMS-normed before its rotation) and a SwiGLU MLP, one block for the batch forward and the
 * KV-cache passes, the heads and backward; the same interface as GPT-2. */
#include "llama.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_kernels.h" /* pw_rope_inv_freq: the frequencies, computed on the host */

/* ------------------------------------------------------------------------------------------ */
/* architecture and layout */

static void tensor_sizes(size_t *s, const PwArch *a, int heads, size_t Vp);

/* What each model_type can say (llama_io.c writes hf_type's): transformers gives Llama's and
 * Qwen3's q, k, v and o_proj a bias together (attention_bias), Qwen2's q, k and v always and its
 * o_proj never, Mistral's none; only Qwen3 norms its heads. An architecture no config.json could
 * describe is refused rather than saved as something else. */
static int hf_consistent(const PwArch *c, PwErr *err)
{
    const int t = c->hf_type;
    if (t < 0 || t >= PW_HF_COUNT)
        return pw_errf(err, "hf_type %d is not 0 to %d", t, PW_HF_COUNT - 1);
    int qkv = c->qkv_bias != 0, o = c->o_bias != 0, norm = c->qk_norm != 0;
    int ok_bias = t == PW_HF_QWEN2 ? qkv && !o : t == PW_HF_MISTRAL ? !qkv && !o : qkv == o;
    if (!ok_bias)
        return pw_errf(err, "a %s model with%s q/k/v biases and with%s an o_proj bias: %s",
                       pw_hf_type_name(t), qkv ? "" : "out", o ? "" : "out",
                       t == PW_HF_QWEN2 ? "Qwen2 has q/k/v biases and no o_proj bias"
                       : t == PW_HF_MISTRAL ? "Mistral has no attention biases"
                                            : "attention_bias gives q, k, v and o_proj one each");
    if (norm != (t == PW_HF_QWEN3))
        return pw_errf(err, "a %s model %s q/k norms: only qwen3 has them (and always)",
                       pw_hf_type_name(t), norm ? "with" : "without");
    return 0;
}

static int arch_check(const PwArch *c, PwErr *err)
{
    if (c->n_layer <= 0 || c->n_head <= 0 || c->n_embd <= 0 || c->vocab_size <= 0 ||
        c->n_positions <= 0 || c->n_kv_head <= 0 || c->n_inner <= 0)
        return pw_errf(err, "num_hidden_layers, num_attention_heads, hidden_size, vocab_size, "
                       "max_position_embeddings, num_key_value_heads and intermediate_size must "
                       "be positive");
    if (c->head_dim < 0)
        return pw_errf(err, "head_dim must be positive, got %d", c->head_dim);
    if (!c->head_dim && c->n_embd % c->n_head)
        return pw_errf(err, "hidden_size (%d) is not a multiple of num_attention_heads (%d)",
                       c->n_embd, c->n_head);
    if (c->n_head % c->n_kv_head)
        return pw_errf(err, "num_attention_heads (%d) is not a multiple of num_key_value_heads "
                       "(%d)", c->n_head, c->n_kv_head);
    if (pw_arch_head_size(c) % 2)
        return pw_errf(err, "the head size %d is odd: rotary embeddings turn pairs",
                       pw_arch_head_size(c));
    if (hf_consistent(c, err)) return -1;
    if (!(c->norm_eps > 0.0f) || !(c->rope_theta > 0.0))
        return pw_errf(err, "rms_norm_eps and rope_theta must be positive");
    char what[200];
    snprintf(what, sizeof what, "num_hidden_layers %d, hidden_size %d, intermediate_size %d, "
             "vocab_size %d, head_dim %d", c->n_layer, c->n_embd, c->n_inner, c->vocab_size,
             pw_arch_head_size(c));
    /* the gate and up projections are one matrix of 2 x intermediate_size rows, an int */
    if (c->n_inner > INT_MAX / 2)
        return pw_errf(err, "%s: too large: intermediate_size %d is more than half of the "
                       "largest int (the gate and up projections stack to twice it)", what,
                       c->n_inner);
    size_t s[PW_LLAMA_NUM_PARAM_TENSORS];
    tensor_sizes(s, c, PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE,
                 (size_t)c->vocab_size + PW_VOCAB_MULTIPLE_MAX);
    if (pw_model_check_size(s, PW_LLAMA_NUM_PARAM_TENSORS, what, err)) return -1;
    /* the kernels take a row of q, k and v heads as an int */
    if (((double)c->n_head + 2.0 * c->n_kv_head) * pw_arch_head_size(c) > INT_MAX / 2)
        return pw_errf(err, "num_attention_heads %d, num_key_value_heads %d and head_dim %d: "
                       "too large (a row of q, k and v heads must stay well inside an int)",
                       c->n_head, c->n_kv_head, pw_arch_head_size(c));
    return 0;
}

static const char *const param_names[PW_LLAMA_NUM_PARAM_TENSORS] = {
    "wte", "ln1w", "qkvw", "qkvb", "attprojw", "ln2w", "fcw", "fcprojw", "lnfw", "lmw",
    "scorew", "scoreb", "valuew", "valueb", "attprojb", "qnw", "knw",
};

/* AdamW's weight decay: the 2D tensors (embeddings and Linear weights), as for GPT-2. */
static const unsigned char param_decays[PW_LLAMA_NUM_PARAM_TENSORS] = {
    1, 0, 1, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 0, 0, 0, 0,
};

/* When backward is done with each tensor's gradient (model_internal.h): an LM head of its own
 * is final with the heads; one tied to the embedding is the embedding's, final at the end. */
static const unsigned char param_ready[PW_LLAMA_NUM_PARAM_TENSORS] = {
    PW_READY_BOTTOM, PW_READY_LAYER, PW_READY_LAYER, PW_READY_LAYER, PW_READY_LAYER,
    PW_READY_LAYER,  PW_READY_LAYER, PW_READY_LAYER, PW_READY_TOP,   PW_READY_TOP,
    PW_READY_TOP,    PW_READY_TOP,   PW_READY_TOP,   PW_READY_TOP,   PW_READY_LAYER,
    PW_READY_LAYER,  PW_READY_LAYER,
};

/* Read by the products alone, so a frozen bf16 model keeps them in bfloat16 only: the layers'
 * matrices and an LM head of its own (the embedding reads embed_tokens in float32). */
static const unsigned char param_bf16_only[PW_LLAMA_NUM_PARAM_TENSORS] = {
    [PW_LLAMA_QKVW] = 1, [PW_LLAMA_ATTPROJW] = 1, [PW_LLAMA_FCW] = 1, [PW_LLAMA_FCPROJW] = 1,
    [PW_LLAMA_LMW] = 1,
};

static size_t qkv_rows(const PwArch *a)
{
    return ((size_t)a->n_head + 2 * (size_t)a->n_kv_head) * (size_t)pw_arch_head_size(a);
}

/* the attention's width: its output, the projection's input (C unless head_dim says otherwise) */
static size_t att_width(const PwArch *a)
{
    return (size_t)a->n_head * (size_t)pw_arch_head_size(a);
}

static void tensor_sizes(size_t *s, const PwArch *a, int heads, size_t Vp)
{
    size_t L = a->n_layer, C = a->n_embd, F = a->n_inner, Q = qkv_rows(a), A = att_width(a);
    size_t hs = (size_t)pw_arch_head_size(a);
    s[0] = Vp * C; /* the real rows, then the padding rows */
    s[1] = L * C;
    /* each factor is below 2^33, so L x Q, L x 2 x F and L x C cannot wrap; times C again
     * they may */
    s[2] = pw_size_mul(L * Q, C);
    s[3] = a->qkv_bias ? L * Q : 0;
    s[4] = pw_size_mul(L * C, A);
    s[5] = L * C;
    s[6] = pw_size_mul(L * 2 * F, C);
    s[7] = pw_size_mul(L * C, F);
    s[8] = C;
    /* an untied LM head belongs to the LM head alone: a reward model or critic has none (its
     * ForSequenceClassification folder has no lm_head.weight), and holding one would cost V*C
     * parameters, gradients and moments that nothing reads */
    s[9] = a->tied || !(heads & PW_HEAD_LM) ? 0 : Vp * C;
    s[10] = (heads & PW_HEAD_SCORE) ? C : 0;
    s[11] = (heads & PW_HEAD_SCORE) ? 1 : 0;
    s[12] = (heads & PW_HEAD_VALUE) ? C : 0;
    s[13] = (heads & PW_HEAD_VALUE) ? 1 : 0;
    s[14] = a->o_bias ? L * C : 0;
    s[15] = a->qk_norm ? L * hs : 0;
    s[16] = a->qk_norm ? L * hs : 0;
}

static double flops_per_token(const PwModel *m, int T)
{
    const PwArch *a = &m->arch;
    double L = a->n_layer, C = a->n_embd, V = a->vocab_size, F = a->n_inner, A = att_width(a);
    double matmul_params = L * ((double)qkv_rows(a) * C + A * C + 3.0 * F * C);
    if (m->heads & PW_HEAD_LM) matmul_params += V * C;
    /* q.k and att.v: 2*2*T*(NH hs) forward per token and layer, twice that in backward */
    return 6.0 * matmul_params + 12.0 * L * A * T;
}

/* ------------------------------------------------------------------------------------------ */
/* activations (allocated by the first forward) and state */

#define NUM_ACTS 30
typedef struct Acts {
    float *encoded;   /* (B, T, C) */
    float *ln1;       /* (L, B, T, C); at bf16 none: made and kept as ln1_16 */
    float *rstd1;     /* (L, B, T) */
    float *qkv;       /* (L, B, T, QKV) after the rotary embedding; at bf16 one layer, kept as
                       * qkv_16 */
    float *atty;      /* (L, B, T, A) A = NH hs; at bf16 none: made and kept as atty_16 */
    float *lse;       /* (L, B, NH, T) each query's log-sum-exp (attention backward) */
    float *attproj;   /* (B, T, C) one layer: added to the residual stream at once and read
                       * by no backward */
    float *residual2; /* (L, B, T, C) */
    float *ln2;       /* (L, B, T, C); at bf16 none: ln2_16 */
    float *rstd2;     /* (L, B, T) */
    float *fch;       /* (L, B, T, 2F) [gate | up]; at bf16 none: made and kept as fch_16 */
    float *fch_act;   /* (L, B, T, F) silu(gate) * up; at bf16 none: fcha_16 */
    float *fcproj;    /* (B, T, C) one layer, as attproj */
    float *residual3; /* (L, B, T, C) */
    float *lnf;       /* (B, T, C) */
    float *rstdf;     /* (B, T) */
    float *logits;    /* (B, T, Vp), or lm_rows of them (m->lm_rows) */
    float *logp;      /* (B, T) */
    float *entropy;   /* (B, T) */
    float *value;     /* (B, T) */
    float *score;     /* (B) */
    float *ln1_16;    /* (L, B, T, C) bfloat16 at bf16 (the table's _bf16 producers), else
                       * empty */
    float *ln2_16;    /* (L, B, T, C) bfloat16 at bf16, else empty */
    float *fcha_16;   /* (L, B, T, F) bfloat16 at bf16, else empty */
    float *fch_16;    /* (L, B, T, 2F) bfloat16 at bf16 (the SwiGLU's input), else empty */
    float *qkv_16;    /* (L, B, T, QKV) bfloat16 at bf16 (what the attention reads), else
                       * empty */
    float *atty_16;   /* (L, B, T, A) bfloat16 at bf16 (the attention's output: what the
                       * projection and the attention's backward read), else empty */
    float *lpstats;   /* (B, T, PW_LP_STATS) the log-softmax statistics the backward reads */
    float *qkraw;     /* (L, B, T, NH + NKV, hs) Qwen3: q and k heads before their norm */
    float *qkrstd;    /* (L, B, T, NH + NKV) Qwen3: their norm's statistics */
} Acts;

enum { SCR_DRES, SCR_DLN, SCR_DATTY, SCR_DQKV, SCR_DFCH, SCR_DFCHA, SCR_DRES16, SCR_COUNT };

typedef struct Llama {
    Acts a;
    float *acts_memory, *scratch_memory;
    float *inv_freq;  /* (hs / 2) on the device, for every pass */
    int logits_valid;
} Llama;

static void act_sizes(size_t *s, const PwModel *m)
{
    const PwArch *c = &m->arch;
    const int heads = m->heads;
    const PwPrecision pr = m->precision;
    const size_t C = c->n_embd, NH = c->n_head, F = c->n_inner, Vp = m->Vp;
    const size_t B = m->maxB, T = m->maxT, BT = B * T, Q = qkv_rows(c), A = att_width(c);
    const size_t QK = c->qk_norm ? (NH + c->n_kv_head) : 0; /* normed heads a token */
    /* L: the layers' slots of what the backward reads (one with recompute or none); Lo: of
     * their outputs */
    const size_t L = pw_model_layer_slots(m), Lo = pw_model_out_slots(m);
    /* at bf16 the products' inputs are made and kept in bfloat16 only (Lk: no float32 layer),
     * and so is the MLP product's output, which the product rounds itself; q, k and v, rotated
     * in float32 before they are rounded, need one float32 layer (L1) */
    const int bf16 = pr == PW_PRECISION_BF16;
    const size_t Lk = bf16 ? 0 : L, L1 = bf16 ? 1 : L;
    size_t v[NUM_ACTS] = {BT * C, Lk * BT * C, L * BT, L1 * BT * Q, Lk * BT * A, L * B * NH * T,
                          BT * C, L * BT * C, Lk * BT * C, L * BT, Lk * BT * 2 * F,
                          Lk * BT * F, BT * C, Lo * BT * C, BT * C, BT,
                          (heads & PW_HEAD_LM) ? (size_t)m->lm_rows * Vp : 0,
                          (heads & PW_HEAD_LM) ? BT : 0,
                          (heads & PW_HEAD_LM) ? BT : 0, (heads & PW_HEAD_VALUE) ? BT : 0,
                          (heads & PW_HEAD_SCORE) ? B : 0, pw_model_kept_floats(pr, L * BT * C),
                          pw_model_kept_floats(pr, L * BT * C),
                          pw_model_kept_floats(pr, L * BT * F),
                          pw_model_kept_floats(pr, L * BT * 2 * F),
                          pw_model_kept_floats(pr, L * BT * Q),
                          pw_model_kept_floats(pr, L * BT * A), /* atty_16 */
                          (heads & PW_HEAD_LM) ? BT * PW_LP_STATS : 0, /* lpstats */
                          L * BT * QK * (size_t)pw_arch_head_size(c), L * BT * QK};
    memcpy(s, v, sizeof v);
}

static void scratch_sizes(size_t *s, const PwModel *m)
{
    const PwArch *c = &m->arch;
    const int maxB = m->maxB, maxT = m->maxT;
    size_t BT = (size_t)maxB * maxT, C = c->n_embd, F = c->n_inner;
    s[SCR_DRES] = BT * C;
    s[SCR_DLN] = BT * C;
    s[SCR_DATTY] = BT * att_width(c);
    s[SCR_DQKV] = BT * qkv_rows(c);
    s[SCR_DFCH] = BT * 2 * F;
    s[SCR_DFCHA] = BT * F;
    /* at bf16: dres rounded, the projections' dout, made by the RMSNorm backwards */
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

/* the rotary frequencies, on the device for every pass */
static size_t attach_bytes(const PwArch *a)
{
    return (size_t)(pw_arch_head_size(a) / 2) * sizeof(float);
}

static int attach(PwModel *m, PwErr *err)
{
    Llama *g = calloc(1, sizeof *g);
    if (!(m->fam = g)) return pw_errf(err, "out of host memory");
    const PwArch *a = &m->arch;
    int hs = pw_arch_head_size(a);
    float *h = malloc((size_t)(hs / 2) * sizeof(float));
    if (!h) return pw_errf(err, "out of host memory");
    PwRopeScaling sc = {a->rope_llama3, a->rope_factor, a->rope_low_freq_factor,
                        a->rope_high_freq_factor, a->rope_original_max};
    pw_rope_inv_freq(h, hs, a->rope_theta, &sc);
    size_t bytes = attach_bytes(a);
    if (!(g->inv_freq = m->ops->alloc(m->ops, bytes))) {
        free(h);
        return pw_model_no_room(m, "the rotary frequencies", bytes, err);
    }
    m->ops->copy(m->ops, g->inv_freq, h, bytes, PW_COPY_H2D);
    free(h);
    return 0;
}

static void detach(PwModel *m)
{
    Llama *g = m->fam;
    if (!g) return;
    m->ops->free(m->ops, g->acts_memory);
    m->ops->free(m->ops, g->scratch_memory);
    m->ops->free(m->ops, g->inv_freq);
    free(g);
    m->fam = NULL;
}

static int ensure_acts(PwModel *m, PwErr *err)
{
    Llama *g = m->fam;
    size_t s[NUM_ACTS];
    act_sizes(s, m);
    return pw_model_alloc_slices(m, &g->acts_memory, (float **)&g->a, s, NUM_ACTS,
                                 "the activations", err);
}

/* ------------------------------------------------------------------------------------------ */
/* init: transformers' (initializer_range 0.02 for every Linear and the embedding, norms 1,
 * biases 0); heads N(0, 1/sqrt(C+1)) as GPT-2's */

static void init_heads(const PwModel *m, float *host, int heads, uint64_t seed)
{
    pw_model_init_heads(m, host, heads, seed, PW_LLAMA_SCOREW, PW_LLAMA_VALUEW);
}

static void init_random(const PwModel *m, float *host, uint64_t seed)
{
    PwLlamaParams params = pw_llama_view(m, host);
    float **p = (float **)&params;
    for (int i = 0; i < PW_LLAMA_SCOREW; i++) {
        size_t n = m->tensor_size[i];
        if (!n) continue;
        if (i == 1 || i == 5 || i == 8) pw_model_fill_const(p[i], n, 1.0f); /* RMSNorm */
        else if (i == 3) pw_model_fill_const(p[i], n, 0.0f);                /* biases */
        else pw_model_fill_normal(p[i], n, 0.02, seed, i);
    }
    /* after the heads in the buffer (llama.h): o_proj's bias, and Qwen3's q and k norms */
    pw_model_fill_const(params.attprojb, m->tensor_size[PW_LLAMA_ATTPROJB], 0.0f);
    pw_model_fill_const(params.qnw, m->tensor_size[PW_LLAMA_QNW], 1.0f);
    pw_model_fill_const(params.knw, m->tensor_size[PW_LLAMA_KNW], 1.0f);
    init_heads(m, host, PW_HEAD_SCORE | PW_HEAD_VALUE, seed);
}

/* ------------------------------------------------------------------------------------------ */
/* one block, the same for the batch forward and the KV-cache passes */

typedef struct Block {
    const float *in;
    float *ln1, *rstd1, *qkv, *atty, *lse, *attproj, *res2;
    float *ln2, *rstd2, *fch, *fch_act, *fcproj, *out;
    /* At bf16: the products' inputs made and kept in bfloat16 instead of ln1, ln2 and
     * fch_act, and fch's bfloat16 rounding (the SwiGLU's input) kept for the backward
     * (fch_16); NULL at fp32, and fch_16 in a cache pass */
    uint16_t *ln1_16, *ln2_16, *fcha_16, *fch_16;
    /* the batch forward at bf16: q, k, v (rotated) in bfloat16, what the attention reads,
     * forward and backward (NULL: a cache pass, or fp32) */
    uint16_t *qkv_16;
    /* at bf16: the attention's output rounded to bfloat16 instead of atty, all the projection
     * reads (the batch forward keeps it for the attention's and the projection's backward) */
    uint16_t *atty_16;
    /* Qwen3, the batch forward: q and k heads before their norm, and its statistics (NULL: a
     * cache pass, which no backward follows) */
    float *qkraw, *qkrstd;
} Block;

typedef struct Attend {
    const int *mask, *pos;   /* batch: (B,T) mask and positions; a pass: the tokens' positions */
    int B, T;
    const PwKVCache *cache;  /* NULL: the batch's own attention */
} Attend;

/* An RMSNorm's output (into out, or in bfloat16 only into out16 when there is one), its
 * statistic and its weight */
typedef struct Norm {
    float *out;
    uint16_t *out16;
    float *rstd;
    const float *w;
} Norm;

/* layer l's first RMSNorm, into the buffers of k */
static Norm ln1_of(const PwLlamaParams *p, const Block *k, int l, int C)
{
    return (Norm){k->ln1, k->ln1_16, k->rstd1, p->ln1w + (size_t)l * C};
}

static void rmsnorm(const PwOps *o, const Norm *n, const float *inp, int N, int C, float eps)
{
    if (n->out16)
        o->rmsnorm_forward_bf16(o, n->out16, n->rstd, inp, n->w, N, C, eps);
    else
        o->rmsnorm_forward(o, n->out, n->rstd, inp, n->w, N, C, eps);
}

/* res = a + b and, when n is given, the RMSNorm n of res: one pass where the device fuses them
 * (the residual stream is read once instead of twice, a launch fewer) */
static void residual_norm(const PwOps *o, float *res, const float *a, const float *b,
                          const Norm *n, int N, int C, float eps)
{
    if (n)
        o->residual_rmsnorm_forward(o, res, n->out, n->out16, n->rstd, a, b, n->w, N, C, eps);
    else
        o->residual_forward(o, res, a, b, (size_t)N * C);
}

/* layer l's product weights (pw_model_weight: float32 where kept, and the bfloat16 mirror) */
typedef struct LayerW {
    PwWeight qkv, proj, fc, fcproj;
} LayerW;
static LayerW layer_weights(const PwModel *m, int l)
{
    const PwArch *a = &m->arch;
    const size_t C = a->n_embd, F = a->n_inner, Q = qkv_rows(a), A = att_width(a);
    return (LayerW){pw_model_weight(m, PW_LLAMA_QKVW, Q * C * l),
                    pw_model_weight(m, PW_LLAMA_ATTPROJW, C * A * l),
                    pw_model_weight(m, PW_LLAMA_FCW, 2 * F * C * l),
                    pw_model_weight(m, PW_LLAMA_FCPROJW, C * F * l)};
}

/* Layer l. Its first RMSNorm is made here unless the layer before made it with its last
 * residual add (ln1_done); `next` is the RMSNorm that this layer's last residual add feeds
 * (the next layer's first, or the final one), NULL for none. */
static void block_forward(const PwModel *m, const PwLlamaParams *p, int l, const Block *k, int N,
                          const Attend *at, int ln1_done, const Norm *next)
{
    const PwOps *o = m->ops;
    const Llama *g = m->fam;
    const PwArch *a = &m->arch;
    const int C = a->n_embd, NH = a->n_head, NKV = a->n_kv_head, F = a->n_inner;
    const int hs = pw_arch_head_size(a), A = (int)att_width(a);
    const size_t Q = qkv_rows(a);
    const LayerW w = layer_weights(m, l);
    const Norm ln1 = ln1_of(p, k, l, C), ln2 = {k->ln2, k->ln2_16, k->rstd2,
                                                 p->ln2w + (size_t)l * C};
    if (!ln1_done) rmsnorm(o, &ln1, k->in, N, C, a->norm_eps);
    pw_model_matmul_forward(m, k->qkv, k->ln1, k->ln1_16, w.qkv,
                            p->qkvb ? p->qkvb + Q * l : NULL, N, C, (int)Q);
    /* Qwen3: each q and k head RMS-normed in place before it turns */
    if (a->qk_norm)
        o->head_rmsnorm_forward(o, k->qkv, k->qkraw, k->qkrstd, p->qnw + (size_t)hs * l,
                                p->knw + (size_t)hs * l, N, NH, NKV, hs, (int)Q, a->norm_eps);
    /* q and k heads are the first NH + NKV heads of each row: rotated in place, or at bf16
     * (qkv_16: all the attention reads) rotated as they are rounded, whole rows */
    o->rope_forward(o, k->qkv, k->qkv_16, at->pos, g->inv_freq, N, NH + NKV, hs, (int)Q);
    if (at->cache)
        pw_kv_attend(at->cache, l, k->atty, k->atty_16, k->qkv);
    else
        pw_model_attention_forward(m, k->atty, k->atty_16, k->lse, k->qkv, k->qkv_16, at->mask,
                                   at->B, at->T, NH, NKV, hs);
    pw_model_matmul_forward(m, k->attproj, k->atty, k->atty_16, w.proj,
                            p->attprojb ? p->attprojb + (size_t)C * l : NULL, N, A, C);
    residual_norm(o, k->res2, k->in, k->attproj, &ln2, N, C, a->norm_eps);
    /* the MLP's activations in bfloat16 at bf16, as PyTorch's autocast has them: the batch
     * forward makes [gate | up] rounded and keeps it for the backward (fch_16, fch NULL); a
     * cache pass makes it in float32 and the SwiGLU rounds it as it reads it */
    if (k->fcha_16 && !k->fch_16) { /* a cache pass at bf16: one entry, which the GPU may fuse */
        o->matmul_swiglu_forward_bf16(o, k->fcha_16, k->fch, k->ln2, k->ln2_16, w.fc.f, w.fc.h, N,
                                      C, F);
    } else {
        pw_model_matmul_forward_out(m, k->fch, k->fch_16, k->ln2, k->ln2_16, w.fc, NULL, N, C,
                                    2 * F);
        if (k->fcha_16)
            o->swiglu_forward_bf16(o, k->fcha_16, k->fch_16, k->fch, N, F);
        else
            o->swiglu_forward(o, k->fch_act, k->fch, N, F);
    }
    pw_model_matmul_forward(m, k->fcproj, k->fch_act, k->fcha_16, w.fcproj, NULL, N, F, C);
    residual_norm(o, k->out, k->res2, k->fcproj, next, N, C, a->norm_eps);
}

/* Layer l's buffers of the batch forward. At bf16 ln1, ln2 and fch_act exist in bfloat16
 * only. */
static Block batch_block(const PwModel *m, const Acts *a, int l)
{
    const PwArch *c = &m->arch;
    const size_t C = c->n_embd, NH = c->n_head, F = c->n_inner, Q = qkv_rows(c);
    const size_t A = att_width(c), QK = (NH + c->n_kv_head) * (size_t)pw_arch_head_size(c);
    const size_t BT = (size_t)m->maxB * m->maxT, sBTC = BT * C;
    const size_t sLSE = (size_t)m->maxB * NH * m->maxT;
    const int bf16 = m->precision == PW_PRECISION_BF16;
    const size_t j = pw_model_layer_slot(m, l); /* l, or the one set (PwActs) */
    return (Block){
        .in = l == 0 ? a->encoded : a->residual3 + pw_model_out_slot(m, l - 1) * sBTC,
        .ln1 = bf16 ? NULL : a->ln1 + j * sBTC, .rstd1 = a->rstd1 + j * BT,
        .qkv = a->qkv + (bf16 ? 0 : j) * BT * Q, .atty = bf16 ? NULL : a->atty + j * BT * A,
        .lse = a->lse + j * sLSE, .attproj = a->attproj, .res2 = a->residual2 + j * sBTC,
        .ln2 = bf16 ? NULL : a->ln2 + j * sBTC, .rstd2 = a->rstd2 + j * BT,
        .fch = bf16 ? NULL : a->fch + j * BT * 2 * F,
        .fch_act = bf16 ? NULL : a->fch_act + j * BT * F,
        .fcproj = a->fcproj, .out = a->residual3 + pw_model_out_slot(m, l) * sBTC,
        .ln1_16 = bf16 ? (uint16_t *)a->ln1_16 + j * sBTC : NULL,
        .ln2_16 = bf16 ? (uint16_t *)a->ln2_16 + j * sBTC : NULL,
        .fcha_16 = bf16 ? (uint16_t *)a->fcha_16 + j * BT * F : NULL,
        .fch_16 = bf16 ? (uint16_t *)a->fch_16 + j * BT * 2 * F : NULL,
        .qkv_16 = bf16 ? (uint16_t *)a->qkv_16 + j * BT * Q : NULL,
        .atty_16 = bf16 ? (uint16_t *)a->atty_16 + j * BT * A : NULL,
        .qkraw = c->qk_norm ? a->qkraw + j * BT * QK : NULL,
        .qkrstd = c->qk_norm ? a->qkrstd + j * BT * (NH + c->n_kv_head) : NULL,
    };
}

/* layer l's first norm in the batch forward (made by the layer before it, l > 0) */
static Norm batch_ln1(const PwModel *m, const PwLlamaParams *p, const Acts *a, int l)
{
    Block k = batch_block(m, a, l);
    return ln1_of(p, &k, l, m->arch.n_embd);
}

/* the LM head: lm_head when the model has one of its own, else the embedding (tied) */
static int lm_tensor(const PwModel *m)
{
    return m->tensor_size[PW_LLAMA_LMW] ? PW_LLAMA_LMW : PW_LLAMA_WTE;
}
static PwWeight lm_weight(const PwModel *m) { return pw_model_weight(m, lm_tensor(m), 0); }

/* The heads' buffers and weights (gr: their gradients, NULL in the forward); a tied model's LM
 * head is the embedding, and so is its gradient. */
static PwHeads heads(const PwModel *m, const PwLlamaParams *p, const PwLlamaParams *gr,
                     const Acts *a)
{
    return (PwHeads){a->lnf, a->logits, a->logp, a->entropy, a->value, a->score, a->lpstats,
                     lm_weight(m), p->scorew, p->scoreb, p->valuew, p->valueb,
                     gr ? (lm_tensor(m) == PW_LLAMA_LMW ? gr->lmw : gr->wte) : NULL,
                     gr ? gr->scorew : NULL, gr ? gr->scoreb : NULL, gr ? gr->valuew : NULL,
                     gr ? gr->valueb : NULL};
}

/* ------------------------------------------------------------------------------------------ */
/* the batch forward */

static int forward(PwModel *m, PwErr *err)
{
    if (ensure_acts(m, err)) return -1;
    Llama *g = m->fam;
    const PwOps *o = m->ops;
    const PwArch *c = &m->arch;
    const int L = c->n_layer, C = c->n_embd;
    const int B = m->B, T = m->T, BT = B * T;
    PwLlamaParams p = pw_llama_stored(m);
    Acts *a = &g->a;

    o->gather_rows(o, a->encoded, p.wte, m->d_inputs, BT, C);
    Attend at = {.mask = m->d_mask, .pos = m->d_pos, .B = B, .T = T};
    /* each layer's last residual add makes the next RMSNorm: the next layer's first, then
     * the final one */
    const Norm lnf = {a->lnf, NULL, a->rstdf, p.lnfw};
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
    Llama *g = m->fam;
    *out = (PwFamilyOutputs){g->a.logp, g->a.entropy, g->a.value, g->a.score,
                             g->logits_valid ? g->a.logits : NULL};
}

/* ------------------------------------------------------------------------------------------ */
/* backward */

static int backward(PwModel *m, const float *dlogp, const float *dentropy, const float *dvalue,
                    const float *dscore, PwErr *err)
{
    Llama *g = m->fam;
    const PwOps *o = m->ops;
    const PwArch *c = &m->arch;
    const int L = c->n_layer, C = c->n_embd, NH = c->n_head, NKV = c->n_kv_head;
    const int hs = pw_arch_head_size(c), F = c->n_inner, A = (int)att_width(c);
    const int B = m->B, T = m->T, BT = B * T;
    const size_t Q = qkv_rows(c);
    const size_t sBTC = (size_t)m->maxB * m->maxT * C;
    size_t ss[SCR_COUNT];
    scratch_sizes(ss, m);
    float *scr[SCR_COUNT];
    if (pw_model_alloc_slices(m, &g->scratch_memory, scr, ss, SCR_COUNT, "the backward scratch",
                              err))
        return -1;
    /* gr: the gradients of the tensors not made layer by layer; gl below: layer l's */
    PwLlamaParams p = pw_llama_stored(m), gr;
    pw_model_grad_view(m, -1, (float **)&gr);
    Acts *a = &g->a;
    float *dres = scr[SCR_DRES], *dln = scr[SCR_DLN], *datty = scr[SCR_DATTY];
    float *dqkv = scr[SCR_DQKV], *dfch = scr[SCR_DFCH], *dfcha = scr[SCR_DFCHA];
    /* bf16: each RMSNorm backward also writes dres rounded, the next projection's dout */
    uint16_t *dres16 = m->precision == PW_PRECISION_BF16 ? (uint16_t *)scr[SCR_DRES16] : NULL;
    const size_t fBTC = (size_t)BT * C * sizeof(float);

    PwHeads h = heads(m, &p, &gr, a);
    if (pw_model_heads_backward(m, &h, dln, dlogp, dentropy, dvalue, dscore))
        g->logits_valid = 0;
    o->zero(o, dres, fBTC);
    o->rmsnorm_backward(o, dres, dres16, gr.lnfw, dln,
                        a->residual3 + pw_model_out_slot(m, L - 1) * sBTC, p.lnfw, a->rstdf, BT,
                        C);
    pw_model_ready_top(m);
    const Attend at = {.mask = m->d_mask, .pos = m->d_pos, .B = B, .T = T};
    for (int l = L - 1; l >= 0; l--) {
        Block k = batch_block(m, a, l);
        const LayerW w = layer_weights(m, l);
        PwLlamaParams gl;
        pw_model_grad_view(m, l, (float **)&gl);
        /* activation checkpointing: the layer's activations made again from its kept input,
         * into the one set, its first RMSNorm included (the forward's came fused with the
         * layer below: the same numbers from the same input) */
        if (m->acts == PW_ACTS_RECOMPUTE) block_forward(m, &p, l, &k, BT, &at, 0, NULL);
        /* the layer's input gradients of the products are set, not added to (set_dinp) */
        pw_model_matmul_backward_either(m, dfcha, gl.fcprojw, NULL, dres,
                                        dres16, k.fch_act, k.fcha_16, w.fcproj, BT, F, C, 1);
        /* bf16: dfch set rounded, the product's dout as it reads it */
        uint16_t *dfch16 = k.fch_16 ? (uint16_t *)dfch : NULL;
        if (dfch16) {
            o->swiglu_backward_bf16(o, dfch16, k.fch_16, dfcha, BT, F);
        } else {
            o->zero(o, dfch, (size_t)BT * 2 * F * sizeof(float));
            o->swiglu_backward(o, dfch, k.fch, dfcha, BT, F);
        }
        pw_model_matmul_backward_either(m, dln, gl.fcw, NULL, dfch,
                                        dfch16, k.ln2, k.ln2_16, w.fc, BT, C, 2 * F, 1);
        o->rmsnorm_backward(o, dres, dres16, gl.ln2w, dln, k.res2,
                            p.ln2w + (size_t)l * C, k.rstd2, BT, C);
        pw_model_matmul_backward_either(m, datty, gl.attprojw,
                                        gl.attprojb, dres,
                                        dres16, k.atty, k.atty_16, w.proj, BT, A, C, 1);
        /* float32: the rotation's backward comes between it and the qkv product */
        pw_model_attention_backward(m, dqkv, NULL, datty, k.qkv, k.qkv_16, k.atty_16, k.lse,
                                    m->d_mask, B, T, NH, NKV, hs);
        /* the gradient of the rotated q and k, turned back: that of the projection's output;
         * at bf16 written rounded, the product's dout, into the MLP's gradient buffer (read by
         * now; 4F halves a row hold the Q) */
        uint16_t *dqkv16 = dres16 && 4 * (size_t)F >= Q ? (uint16_t *)dfch : NULL;
        if (c->qk_norm) {
            /* Qwen3: turned back in place, then through the heads' norm, then rounded */
            o->rope_backward(o, dqkv, NULL, m->d_pos, g->inv_freq, BT, NH + NKV, hs, (int)Q);
            o->head_rmsnorm_backward(o, dqkv, gl.qnw, gl.knw,
                                     k.qkraw, k.qkrstd, p.qnw + (size_t)hs * l,
                                     p.knw + (size_t)hs * l, BT, NH, NKV, hs, (int)Q);
            if (dqkv16) o->to_bf16(o, dqkv16, dqkv, (size_t)BT * Q);
        } else {
            o->rope_backward(o, dqkv, dqkv16, m->d_pos, g->inv_freq, BT, NH + NKV, hs, (int)Q);
        }
        pw_model_matmul_backward_either(m, dln, gl.qkvw,
                                        gl.qkvb, dqkv, dqkv16, k.ln1,
                                        k.ln1_16, w.qkv, BT, C, (int)Q, 1);
        /* layer 0's input gradient goes to the embeddings in float32 only */
        o->rmsnorm_backward(o, dres, l > 0 ? dres16 : NULL, gl.ln1w, dln, k.in,
                            p.ln1w + (size_t)l * C, k.rstd1, BT, C);
        pw_model_ready_layer(m, l);
    }
    /* the embedding rows: no position table */
    o->encoder_backward(o, gr.wte, NULL, dres, m->d_inputs, NULL, pw_model_row_groups(m, 0), B,
                        T, C);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the KV cache */

enum { K_X, K_LN, K_RSTD, K_QKV, K_ATTY, K_PROJ, K_FC, K_FCA, K_HEAD, K_LN16, K_FCA16,
       K_NUM };

typedef struct LlamaCache {
    float *buf[K_NUM];
    float *memory;
} LlamaCache;

static void kv_sizes(size_t *s, const PwKVCache *c)
{
    const PwArch *a = &c->m->arch;
    size_t C = a->n_embd, Vp = c->m->Vp, F = a->n_inner, B = c->maxB, N = c->maxN;
    /* K_ATTY holds the attention's output (A a token), then the final rows (C) */
    size_t A = att_width(a), W = A > C ? A : C;
    s[K_X] = N * C;
    s[K_LN] = N * C;
    s[K_RSTD] = N;
    s[K_QKV] = N * qkv_rows(a);
    s[K_ATTY] = N * W;
    s[K_PROJ] = N * C;
    s[K_FC] = N * 2 * F;
    s[K_FCA] = N * F;
    s[K_HEAD] = B * Vp;
    /* at bf16 the blocks make what the batch forward makes in bfloat16 (batch_block), so that
     * a pass's numbers are the batch forward's: the RMSNorm outputs, the SwiGLU's (on [gate |
     * up] rounded, which a pass does not keep) */
    PwPrecision pr = c->m->precision;
    s[K_LN16] = pw_model_kept_floats(pr, N * W); /* the RMSNorms' outputs, then atty's */
    s[K_FCA16] = pw_model_kept_floats(pr, N * F);
}

static size_t kv_bytes(const PwKVCache *c)
{
    size_t s[K_NUM];
    kv_sizes(s, c);
    return pw_model_arena_floats(s, K_NUM) * sizeof(float);
}

static int kv_attach(PwKVCache *c, PwErr *err)
{
    LlamaCache *k = calloc(1, sizeof *k);
    if (!k) return pw_errf(err, "out of host memory");
    c->fam = k;
    size_t s[K_NUM];
    kv_sizes(s, c);
    return pw_model_alloc_slices(c->m, &k->memory, k->buf, s, K_NUM, "a KV cache", err);
}

static void kv_detach(PwKVCache *c)
{
    LlamaCache *k = c->fam;
    if (!k) return;
    c->m->ops->free(c->m->ops, k->memory);
    free(k);
    c->fam = NULL;
}

static const float *kv_pass(PwKVCache *c)
{
    const PwModel *m = c->m;
    const PwOps *o = m->ops;
    LlamaCache *k = c->fam;
    float **b = k->buf;
    const PwArch *a = &m->arch;
    const int L = a->n_layer, C = a->n_embd, Vp = m->Vp, N = c->ntok;
    PwLlamaParams p = pw_llama_stored(m);

    o->gather_rows(o, b[K_X], p.wte, c->d_tok, N, C);
    Block blk = {
        .in = b[K_X], .ln1 = b[K_LN], .rstd1 = b[K_RSTD], .qkv = b[K_QKV], .atty = b[K_ATTY],
        .lse = NULL, .attproj = b[K_PROJ], .res2 = b[K_X], .ln2 = b[K_LN], .rstd2 = b[K_RSTD],
        .fch = b[K_FC], .fch_act = b[K_FCA], .fcproj = b[K_PROJ], .out = b[K_X],
    };
    if (m->precision == PW_PRECISION_BF16) {
        blk.ln1_16 = blk.ln2_16 = (uint16_t *)b[K_LN16];
        blk.fcha_16 = (uint16_t *)b[K_FCA16];
        /* free from the qkv product, which read ln1, until the second RMSNorm, which comes
         * after the projection has read it */
        blk.atty_16 = (uint16_t *)b[K_LN16];
    }
    Attend at = {.pos = c->d_pos, .cache = c};
    for (int l = 0; l < L; l++) {
        /* the last layer's residual add makes no RMSNorm: the final one reads gathered rows */
        Norm next = {0};
        if (l + 1 < L) next = ln1_of(&p, &blk, l + 1, C);
        block_forward(m, &p, l, &blk, N, &at, l > 0, l + 1 < L ? &next : NULL);
    }
    o->gather_rows(o, b[K_ATTY], b[K_X], c->d_seg_last, c->nseg, C);
    /* at bf16 the final RMSNorm rounded, what the LM head reads (no conversion there) */
    const Norm lnf = {b[K_LN], blk.ln1_16, b[K_RSTD], p.lnfw};
    rmsnorm(o, &lnf, b[K_ATTY], c->nseg, C, a->norm_eps);
    pw_model_matmul_forward(m, b[K_HEAD], b[K_LN], blk.ln1_16, lm_weight(m), NULL, c->nseg, C, Vp);
    return b[K_HEAD];
}

const PwFamilyImpl pw_llama_family = {
    .family = PW_FAMILY_LLAMA,
    .name = "llama",
    .model_types = (const char *const[]){"llama", "qwen2", "mistral", "qwen3", NULL},
    .ntensors = PW_LLAMA_NUM_PARAM_TENSORS,
    .tensor_names = param_names,
    .tensor_decays = param_decays,
    .tensor_ready = param_ready,
    .tensor_bf16_only = param_bf16_only,
    .lm_tensor = lm_tensor,
    .arch_check = arch_check,
    .arch_from_json = pw_llama_arch_from_json,
    .tensor_sizes = tensor_sizes,
    .flops_per_token = flops_per_token,
    .forward_bytes = forward_bytes,
    .backward_bytes = backward_bytes,
    .attach_bytes = attach_bytes,
    .attach = attach,
    .detach = detach,
    .init_random = init_random,
    .init_heads = init_heads,
    .forward = forward,
    .outputs = outputs,
    .backward = backward,
    .save = pw_llama_save,
    .load = pw_llama_load,
    .kv_bytes = kv_bytes,
    .kv_attach = kv_attach,
    .kv_detach = kv_detach,
    .kv_pass = kv_pass,
};
