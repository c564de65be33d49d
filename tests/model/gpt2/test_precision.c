/* test_precision.c: precision bf16 through the model interface, for GPT-2 and the Llama family.
 * The same weights at bf16 and at fp32: outputs and gradients agree to bf16's rounding (about
 * 2^-9 per operand) and differ from fp32's (the operands are rounded); every parameter, gradient
 * and moment stays float32 (a step moves weights by less than a bf16 ulp, which a bf16 master
 * copy would lose); the KV cache's logits at bf16 follow the batch forward's at bf16 with a
 * float32 cache (but for the batch attention's bfloat16 rounding) and move by k and v's
 * rounding with a bfloat16 one (a bf16 model's); twenty SFT steps at bf16 follow the fp32 loss
 * curve; the weights' bfloat16 copy follows every write (AdamW, pw_model_params) before a
 * forward or a cache pass reads it; the inputs of the products are kept in bfloat16 for the
 * backward, in the bytes counted by hand; a bad precision or cache type is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_bf16.h"
#include "pw_model.h"
#include "pw_test.h"
#include "tiny_archs.h"

/* max |a - b| over max |b| (pw_test.h) */
#define REL(a, b, n) pw_max_rel_err_ff((a), (b), (n), 1e-30)

enum { B = 3, T = 10, V = 50, ALL = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE };

static const PwArch gpt2 = TINY_GPT2(V), llama = TINY_LLAMA(V);
static PwArch qwen3 = TINY_LLAMA(V); /* with Qwen3's q/k norms and heads of 12 (main) */

static PwModel *make_kv(const PwArch *a, PwPrecision p, int heads, PwKVDtype kv)
{
    PwModelOpts o = {.heads = heads, .maxB = B, .maxT = T, .precision = p, .kv_dtype = kv};
    PwModel *m = tiny_model(a, &o, 3);
    /* GPT-2's init gives near-uniform logits; larger embeddings make them spread, so that
     * rounding shows in them */
    float *p0 = pw_model_params(m).data;
    size_t off, n;
    pw_model_tensor_info(m, 0, &off, &n);
    for (size_t k = 0; k < n; k++) p0[off + k] *= 20.0f;
    return m;
}

static PwModel *make(const PwArch *a, PwPrecision p, int heads)
{
    return make_kv(a, p, heads, PW_KV_AUTO);
}

static void inputs(int *tok, int *mask, int *tgt)
{
    for (int i = 0; i < B * T; i++) {
        tok[i] = (i * 13 + 5) % V;
        mask[i] = !(i / T == 2 && i % T < 3);
    }
    pw_lm_next_token_targets(tgt, tok, mask, B, T);
}

typedef struct Outs {
    float logp[B * T], ent[B * T], value[B * T], score[B], logits[B * T * V];
} Outs;

static void forward(PwModel *m, Outs *o)
{
    int tok[B * T], mask[B * T], tgt[B * T];
    inputs(tok, mask, tgt);
    PwModelInput in = {tok, mask, tgt, B, T, 1.0f};
    PwOutputs out = {0, T, o->logp, o->ent, o->value, o->score, o->logits};
    PwErr err;
    if (pw_model_forward(m, &in, &out, &err)) {
        fprintf(stderr, "forward: %s\n", err.msg);
        exit(1);
    }
}

static void test_against_fp32(const PwArch *a, const char *fam)
{
    PwModel *h = make(a, PW_PRECISION_BF16, ALL), *f = make(a, PW_PRECISION_FP32, ALL);
    CHECK(pw_model_precision(h) == PW_PRECISION_BF16 && pw_model_precision(f) == PW_PRECISION_FP32
              && !strcmp(pw_precision_name(PW_PRECISION_BF16), "bf16"),
          "%s: precision not kept", fam);
    static Outs oh, of;
    forward(h, &oh);
    forward(f, &of);
    double e[4] = {REL(oh.logits, of.logits, (size_t)B * T * V), REL(oh.logp, of.logp, B * T),
                   REL(oh.value, of.value, B * T), REL(oh.score, of.score, B)};
    /* each product rounds its operands to 8 significant bits (relative 2^-9 = 2e-3 each): over
     * two layers and the head, a few 1e-3 relative to the largest; 3e-2 is far below a wrong
     * product and far above an unrounded one (< 1e-5) */
    CHECK(e[0] < 3e-2 && e[1] < 3e-2 && e[2] < 3e-2 && e[3] < 3e-2,
          "%s: bf16 vs fp32 logits %.3g logp %.3g value %.3g score %.3g", fam, e[0], e[1], e[2],
          e[3]);
    CHECK(e[0] > 1e-4, "%s: bf16 logits are within %.3g of fp32: no rounding happened", fam, e[0]);
    /* the value and score heads are float32 products of the (rounded-trunk) hidden states */
    float dlogp[B * T], dval[B * T], dscore[B];
    for (int i = 0; i < B * T; i++) {
        dlogp[i] = -1.0f / (B * T);
        dval[i] = 0.05f * (float)((i % 5) - 2);
    }
    for (int b = 0; b < B; b++) dscore[b] = 0.2f * (b - 1);
    PwOutputGrads g = {.dlogp = dlogp, .dvalue = dval, .dscore = dscore};
    PwErr err;
    CHECK(pw_model_zero_grad(h, &err) == 0 && pw_model_backward(h, &g, &err) == 0 &&
              pw_model_zero_grad(f, &err) == 0 && pw_model_backward(f, &g, &err) == 0,
          "%s: backward: %s", fam, err.msg);
    const float *gh = pw_model_grads(h).data, *gf = pw_model_grads(f).data;
    double worst = 0.0;
    const char *where = "";
    for (int i = 0; i < pw_model_num_tensors(h); i++) {
        size_t off, n;
        const char *name = pw_model_tensor_info(h, i, &off, &n);
        if (!n) continue;
        double r = REL(gh + off, gf + off, n);
        if (r > worst) worst = r, where = name;
    }
    CHECK(worst < 5e-2, "%s: bf16 vs fp32 gradients: %.3g at %s", fam, worst, where);
    printf("%s: bf16 vs fp32: logits %.2g logp %.2g value %.2g score %.2g, gradients %.2g "
           "(worst %s)\n", fam, e[0], e[1], e[2], e[3], worst, where);

    /* weights stay float32: a step far below a bf16 ulp of the weight still moves it */
    PwAdamWConfig cfg = {.lr = 1e-5f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.0f, .grad_clip = 0.0f};
    const float *w = pw_model_params(h).data;
    size_t n = pw_model_num_params(h), moved = 0, tiny = 0;
    float *before = malloc(n * sizeof *before);
    memcpy(before, w, n * sizeof *before);
    CHECK(pw_model_adamw_step(h, &cfg, 1, NULL, &err) == PW_ADAMW_APPLIED, "%s", err.msg);
    for (size_t i = 0; i < n; i++) {
        if (w[i] == before[i]) continue;
        moved++;
        /* the step is lr = 1e-5 at t = 1 (m_hat / sqrt(v_hat) = +-1), against a bf16 ulp of
         * |w| 2^-7 |w|: below it wherever |w| > 1e-3 */
        tiny += fabsf(before[i]) > 1e-2f && pw_bf16_round(w[i]) == pw_bf16_round(before[i]);
    }
    CHECK(tiny > 100, "%s: only %zu of %zu moved weights moved by less than a bf16 ulp: are the "
          "weights float32?", fam, tiny, moved);
    free(before);
    pw_model_free(h);
    pw_model_free(f);
}

/* The cache's passes use the same products: with a float32 cache its logits at bf16 are the
 * batch forward's at bf16, not fp32's, but for the attention: the batch forward's rounds q, k,
 * v and the probabilities to bfloat16 (pw_attention_gqa_forward_bf16, the GPU's tensor-core
 * attention), the cache's reads float32 keys and values; measured 3e-5 (GPT-2) and 4e-4 (Llama)
 * apart, against 1e-3 and 2e-3 from fp32's logits. A bf16 model's own
 * cache (kv_dtype auto) holds bfloat16 keys and values in half the bytes: its logits move from
 * the float32 cache's by the rounding of k and v (relative 2^-9 each), no more. */
static void cache_logits(PwModel *m, float *kv, PwKVDtype want, size_t *bytes, const char *fam)
{
    int tok[B * T], mask[B * T], tgt[B * T];
    inputs(tok, mask, tgt);
    PwErr err;
    PwKVCache *c = pw_kv_create(m, B, T, &err);
    CHECK(c && pw_kv_prefill(c, tok, mask, B, T, &err) == 0, "%s: %s", fam, err.msg);
    if (!c) return;
    CHECK(pw_kv_dtype(c) == want, "%s: a %s cache, expected %s", fam,
          pw_kv_dtype_name(pw_kv_dtype(c)), pw_kv_dtype_name(want));
    for (int b = 0; b < B; b++) memcpy(kv + b * V, pw_kv_logits(c, b), V * sizeof(float));
    *bytes = pw_kv_bytes(c);
    pw_kv_free(c);
}

static void test_cache(const PwArch *a, const char *fam)
{
    PwModel *h = make_kv(a, PW_PRECISION_BF16, PW_HEAD_LM, PW_KV_FP32);
    PwModel *hb = make(a, PW_PRECISION_BF16, PW_HEAD_LM), *f = make(a, PW_PRECISION_FP32, PW_HEAD_LM);
    int tok[B * T], mask[B * T], tgt[B * T];
    inputs(tok, mask, tgt);
    PwErr err;
    static float fwd_h[B * V], fwd_f[B * V], kv[B * V], kvb[B * V], kvf[B * V];
    PwModelInput in = {tok, mask, NULL, B, T, 1.0f};
    PwOutputs out = {.col0 = T - 1, .width = 1, .logits = fwd_h};
    CHECK(pw_model_forward(h, &in, &out, &err) == 0, "%s", err.msg);
    out.logits = fwd_f;
    CHECK(pw_model_forward(f, &in, &out, &err) == 0, "%s", err.msg);
    size_t bytes32, bytes16, bytesf;
    cache_logits(h, kv, PW_KV_FP32, &bytes32, fam);
    cache_logits(hb, kvb, PW_KV_BF16, &bytes16, fam);
    cache_logits(f, kvf, PW_KV_FP32, &bytesf, fam);
    double e = REL(kv, fwd_h, B * V), e32 = REL(kv, fwd_f, B * V);
    CHECK(e < 2e-3, "%s: bf16 model, fp32 cache vs bf16 forward: %.3g", fam, e);
    CHECK(e32 > 3 * e, "%s: the bf16 model's cache is as close to fp32 (%.3g) as to bf16 (%.3g)",
          fam, e32, e);
    CHECK(REL(kvf, fwd_f, B * V) < 1e-5, "%s: fp32 model's own cache (auto: fp32) vs its forward",
          fam);
    /* L = 2 layers of k and v rounded to 8 significant bits: a few 1e-3 at most */
    double eb = REL(kvb, kv, B * V);
    CHECK(eb > 1e-6 && eb < 2e-2, "%s: bf16 cache vs fp32 cache of one bf16 model: %.3g (expected "
          "the rounding of k and v: above 1e-6, below 2e-2)", fam, eb);
    CHECK(bytes16 * 2 == bytes32 && bytes32 == bytesf && bytes32 > 0,
          "%s: cache bytes bf16 %zu, fp32 %zu and %zu", fam, bytes16, bytes32, bytesf);
    printf("%s: fp32 cache logits vs bf16 forward %.2g, vs fp32 forward %.2g; bf16 cache vs fp32 "
           "cache %.2g (%zu vs %zu bytes)\n", fam, e, e32, eb, bytes16, bytes32);
    pw_model_free(h);
    pw_model_free(hb);
    pw_model_free(f);
}

/* m's parameters := q's, written through pw_model_params as the weights' receive writes them */
static void copy_weights(PwModel *m, PwModel *q)
{
    memcpy(pw_model_params(m).data, pw_model_params(q).data,
           pw_model_num_params(m) * sizeof(float));
}

static int same_outs(const Outs *x, const Outs *y)
{
    return !memcmp(x->logits, y->logits, sizeof x->logits) &&
           !memcmp(x->logp, y->logp, sizeof x->logp) &&
           !memcmp(x->value, y->value, sizeof x->value) && !memcmp(x->score, y->score, sizeof x->score);
}

/* The bf16 products read a bfloat16 copy of the weights, made before a forward, a backward or a
 * cache pass when the weights were written since: by AdamW, or through pw_model_params (the
 * weights' receive). A copy left stale keeps the old weights' outputs, which a model that never
 * had the old weights does not give; each write below is checked that way, bit for bit. */
static void test_mirror(const PwArch *a, const char *fam)
{
    PwModel *m = make(a, PW_PRECISION_BF16, ALL), *q = make(a, PW_PRECISION_BF16, ALL);
    float *pq = pw_model_params(q).data;
    for (size_t k = 0; k < pw_model_num_params(q); k++) pq[k] *= 0.9f;
    static Outs o1, o2, o3;
    forward(m, &o1); /* m's copy made of its own weights */
    copy_weights(m, q);
    forward(m, &o2);
    forward(q, &o3);
    CHECK(!same_outs(&o1, &o2), "%s: other weights, the same outputs", fam);
    CHECK(same_outs(&o2, &o3), "%s: weights written through pw_model_params not seen", fam);

    /* an AdamW step, and no pw_model_params before m's next forward */
    float dlogp[B * T];
    for (int i = 0; i < B * T; i++) dlogp[i] = -1.0f / (B * T);
    PwOutputGrads g = {.dlogp = dlogp};
    PwAdamWConfig cfg = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.0f, .grad_clip = 0.0f};
    PwErr err;
    CHECK(pw_model_zero_grad(m, &err) == 0 && pw_model_backward(m, &g, &err) == 0 &&
              pw_model_adamw_step(m, &cfg, 1, NULL, &err) == PW_ADAMW_APPLIED,
          "%s: %s", fam, err.msg);
    /* the step wrote the copy itself: each bfloat16 weight its new float32 rounded */
    const uint16_t *m16 = pw_model_mirror(m).data;
    const float *pw = pw_model_params(m).data;
    size_t off16 = 0;
    for (size_t k = 0; k < pw_model_num_params(m); k++) off16 += m16[k] != pw_bf16_from_f32(pw[k]);
    CHECK(off16 == 0, "%s: %zu bfloat16 weights are not the step's weights rounded", fam, off16);
    forward(m, &o1);
    copy_weights(q, m);
    forward(q, &o3);
    CHECK(!same_outs(&o1, &o2), "%s: an AdamW step changed no output", fam);
    CHECK(same_outs(&o1, &o3), "%s: weights of an AdamW step not seen", fam);
    /* pw_model_sync only waits: after a write it is not told of (through a pointer of an
     * earlier pw_model_params, which the interface does not allow) the next forward keeps the
     * bfloat16 copy as it was, where after pw_model_params it makes the copy again */
    const size_t np = pw_model_num_params(m);
    float *pstale = pw_model_params(m).data, *keep = malloc(np * sizeof *keep);
    uint16_t *copy16 = malloc(np * sizeof *copy16);
    memcpy(keep, pstale, np * sizeof *keep);
    forward(m, &o1); /* the copy made again */
    memcpy(copy16, pw_model_mirror(m).data, np * sizeof *copy16);
    for (size_t k = 0; k < np; k++) pstale[k] *= 1.5f;
    pw_model_sync(m);
    forward(m, &o2);
    CHECK(!memcmp(copy16, pw_model_mirror(m).data, np * sizeof *copy16),
          "%s: pw_model_sync made the bfloat16 copy again", fam);
    pw_model_params(m);
    forward(m, &o2);
    CHECK(memcmp(copy16, pw_model_mirror(m).data, np * sizeof *copy16),
          "%s: the copy not made again after pw_model_params", fam);
    memcpy(pw_model_params(m).data, keep, np * sizeof *keep);
    free(keep), free(copy16);

    /* a cache pass right after a write (its copy was fresh before) */
    float *pm = pw_model_params(m).data;
    for (size_t k = 0; k < pw_model_num_params(m); k++) pm[k] *= 1.1f;
    copy_weights(q, m);
    int tok[B * T], mask[B * T], tgt[B * T];
    inputs(tok, mask, tgt);
    PwKVCache *cm = pw_kv_create(m, B, T, &err), *cq = pw_kv_create(q, B, T, &err);
    CHECK(cm && cq && pw_kv_prefill(cm, tok, mask, B, T, &err) == 0 &&
              pw_kv_prefill(cq, tok, mask, B, T, &err) == 0, "%s: %s", fam, err.msg);
    int bad = 0;
    for (int b = 0; cm && cq && b < B; b++)
        bad += memcmp(pw_kv_logits(cm, b), pw_kv_logits(cq, b), V * sizeof(float)) != 0;
    CHECK(bad == 0, "%s: a cache pass after a write: %d of %d rows differ", fam, bad, B);
    pw_kv_free(cm);
    pw_kv_free(cq);
    pw_model_free(m);
    pw_model_free(q);
}

/* twenty steps of next-token training on a fixed batch: the bf16 curve follows fp32's */
static void test_training(const PwArch *a, const char *fam)
{
    PwModel *m[2] = {make(a, PW_PRECISION_FP32, PW_HEAD_LM), make(a, PW_PRECISION_BF16, PW_HEAD_LM)};
    int tok[B * T], mask[B * T], tgt[B * T];
    inputs(tok, mask, tgt);
    float w[B * T], logp[B * T], dlogp[B * T];
    pw_lm_mean_weights(w, tgt, B * T);
    for (int i = 0; i < B * T; i++) dlogp[i] = -w[i];
    PwAdamWConfig cfg = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.0f, .grad_clip = 1.0f};
    double loss[2][21], worst = 0.0;
    PwErr err;
    for (int k = 0; k < 2; k++)
        for (int s = 0; s <= 20; s++) {
            PwModelInput in = {tok, mask, tgt, B, T, 1.0f};
            PwOutputs out = {.col0 = 0, .width = T, .logp = logp};
            PwOutputGrads g = {.dlogp = dlogp};
            CHECK(pw_model_forward(m[k], &in, &out, &err) == 0, "%s", err.msg);
            loss[k][s] = pw_lm_loss(logp, w, tgt, B * T);
            if (s == 20) break;
            CHECK(pw_model_zero_grad(m[k], &err) == 0 && pw_model_backward(m[k], &g, &err) == 0 &&
                      pw_model_adamw_step(m[k], &cfg, s + 1, NULL, &err) == PW_ADAMW_APPLIED,
                  "%s", err.msg);
        }
    for (int s = 0; s <= 20; s++) worst = fmax(worst, fabs(loss[1][s] - loss[0][s]) / loss[0][s]);
    CHECK(loss[1][20] < 0.5 * loss[1][0], "%s: bf16 loss %.4f -> %.4f did not halve", fam,
          loss[1][0], loss[1][20]);
    CHECK(worst < 0.05, "%s: bf16 loss curve is %.3g (relative) from fp32's", fam, worst);
    printf("%s: 20 steps, loss fp32 %.4f -> %.4f, bf16 %.4f -> %.4f, curves within %.2g\n", fam,
           loss[0][0], loss[0][20], loss[1][0], loss[1][20], worst);
    pw_model_free(m[0]);
    pw_model_free(m[1]);
}

/* At bf16 the inputs of the trunk's products that only those products read again (the
 * normalised inputs of the attention and of the MLP, the MLP's activation), the MLP's
 * pre-activation, q, k, v and the attention's output are kept in bfloat16 only, S floats a
 * layer: L S floats become L S / 2 + P, where P is the one float32 layer that Llama's q, k, v
 * need (their product's output, rotated before it is rounded; the other products round their
 * outputs themselves), less D = C / 2 floats a token that the backward's scratch gains: the
 * residual stream's gradient rounded by the norms' backwards, the projections' dout.
 * And what a layer adds, per token, is what its backward reads: GPT-2 ln1 C, its mean and rstd
 * 2, qkv 3C, the attention's output C and log-sum-exps NH, res2 C, ln2 C + 2, fc 4C, its GELU
 * 4C, the layer's output C: 16C + 4 + NH (the projections' outputs are one layer's, read by no
 * backward); at bf16 ln1, ln2, qkv, the attention's output, fc and the GELU's 14C become 7C.
 * Llama: ln1 C + 1, qkv Q, attention C + NH, res2 C, ln2 C + 1, gate|up 2F, SwiGLU F, output
 * C; at bf16 3C + Q + 3F halve. Hand-worked from those, against models at 12 and 13 layers; no
 * model is run, so a deep one costs nothing. The numbers: test_against_fp32 and
 * test_training. The batch is 8 x 16: every slice that grows with the layers or halves at bf16
 * is a multiple of the arenas' 64 floats, so their alignment adds the same to all four. */
static void test_kept_bytes(void)
{
    enum { KB = 8, KT = 16 };
    const size_t BT = (size_t)KB * KT, C = 32, F = 40, Q = (4 + 2 * 2) * 8;
    const size_t S[2] = {14 * C * BT, (3 * C + Q + 3 * F) * BT};
    const size_t P[2] = {0, Q * BT}, D = C / 2 * BT;
    const size_t layer[2][2] = {{16 * C + 4 + 2, 9 * C + 4 + 2},
                                {5 * C + Q + 3 * F + 2 + 4, 7 * C / 2 + Q / 2 + 3 * F / 2 + 2 + 4}};
    for (int i = 0; i < 2; i++) {
        const char *fam = i ? "llama" : "gpt2";
        size_t by[2][2]; /* [layers 12, 13][fp32, bf16] */
        for (int d = 0; d < 2; d++)
            for (int p = 0; p < 2; p++) {
                PwArch a = i ? llama : gpt2;
                a.n_layer = 12 + d;
                PwModelOpts o = {.heads = ALL, .maxB = KB, .maxT = KT,
                                 .precision = p ? PW_PRECISION_BF16 : PW_PRECISION_FP32};
                PwModel *m = tiny_model(&a, &o, 3);
                by[d][p] = pw_model_activation_bytes(m);
                pw_model_free(m);
            }
        size_t want = (12 * S[i] - 12 * S[i] / 2 - P[i] - D) * sizeof(float);
        CHECK(by[0][0] - by[0][1] == want,
              "%s: bf16 keeps %zu activation bytes fewer than fp32, want %zu", fam,
              by[0][0] - by[0][1], want);
        for (int p = 0; p < 2; p++)
            CHECK(by[1][p] - by[0][p] == layer[i][p] * BT * sizeof(float),
                  "%s at %s: a layer adds %zu activation bytes, want %zu", fam,
                  p ? "bf16" : "fp32", by[1][p] - by[0][p], layer[i][p] * BT * sizeof(float));
        printf("%s, 12 layers: activations fp32 %zu bytes, bf16 %zu (%.2f)\n", fam, by[0][0],
               by[0][1], (double)by[0][1] / (double)by[0][0]);
    }
}

int main(void)
{
    test_kept_bytes();
    test_against_fp32(&gpt2, "gpt2");
    test_against_fp32(&llama, "llama");
    test_cache(&gpt2, "gpt2");
    test_cache(&llama, "llama");
    test_training(&gpt2, "gpt2");
    test_training(&llama, "llama");
    test_mirror(&gpt2, "gpt2");
    test_mirror(&llama, "llama");
    /* Qwen3: the q/k norm between the qkv product and the rotation, in float32 at bf16 too, its
     * kept heads per layer where q, k, v are one float32 layer */
    qwen3.hf_type = 3, qwen3.qk_norm = 1, qwen3.head_dim = 12;
    test_against_fp32(&qwen3, "qwen3");
    test_cache(&qwen3, "qwen3");
    test_training(&qwen3, "qwen3");
    test_mirror(&qwen3, "qwen3");
    PwErr err;
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = B, .maxT = T, .precision = (PwPrecision)7};
    CHECK(pw_model_create(&gpt2, &o, &err) == NULL && strstr(err.msg, "precision 7"),
          "precision 7: %s", err.msg);
    o.precision = PW_PRECISION_BF16;
    o.kv_dtype = (PwKVDtype)3;
    CHECK(pw_model_create(&gpt2, &o, &err) == NULL && strstr(err.msg, "kv_dtype 3"),
          "kv_dtype 3: %s", err.msg);
    CHECK(!strcmp(pw_kv_dtype_name(PW_KV_AUTO), "auto") && !strcmp(pw_kv_dtype_name(PW_KV_BF16),
          "bf16") && !strcmp(pw_kv_dtype_name((PwKVDtype)9), "?"), "pw_kv_dtype_name");
    return pw_test_done("test_precision");
}
