/* test_lm_chunk.c: the LM head in chunks (PwModelOpts.lm_chunk) against the whole batch at
 * once, for GPT-2 and the Llama family, at fp32 and bf16, at temperature 1 and 0.7: the same
 * log-probs and entropies, the same gradients of every tensor (to float32 summation order: the
 * head's weight gradient is summed a chunk at a time), the same value and score heads; the
 * logits buffer smaller by exactly (B T - chunk) x Vp floats; logits refused while chunked and
 * given with a chunk that covers the batch; a negative chunk refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_model.h"
#include "pw_test.h"
#include "tiny_archs.h"

#define REL(a, b, n) pw_max_rel_err_ff((a), (b), (n), 1e-30)

enum { B = 3, T = 10, V = 50, ALL = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE };

static const PwArch gpt2 = TINY_GPT2(V), llama = TINY_LLAMA(V);

static PwModel *make(const PwArch *a, PwPrecision p, int chunk)
{
    PwModelOpts o = {.heads = ALL, .maxB = B, .maxT = T, .precision = p, .lm_chunk = chunk};
    return tiny_model(a, &o, 5);
}

typedef struct Run {
    float logp[B * T], ent[B * T], value[B * T], score[B];
    float *grads;
} Run;

/* a forward and a backward through every head; tokens with a padded row */
static void run(PwModel *m, float temperature, Run *r)
{
    int tok[B * T], mask[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) {
        tok[i] = (i * 17 + 3) % V;
        mask[i] = !(i / T == 1 && i % T < 4);
    }
    pw_lm_next_token_targets(tgt, tok, mask, B, T);
    PwModelInput in = {tok, mask, tgt, B, T, temperature};
    PwOutputs out = {0, T, r->logp, r->ent, r->value, r->score, NULL};
    PwErr err;
    float dlogp[B * T], dent[B * T], dval[B * T], dscore[B];
    for (int i = 0; i < B * T; i++) {
        dlogp[i] = -1.0f / (B * T) * (float)(1 + i % 3);
        dent[i] = 0.01f * (float)(i % 5 - 2);
        dval[i] = 0.05f * (float)(i % 4 - 1);
    }
    for (int b = 0; b < B; b++) dscore[b] = 0.2f * (float)(b - 1);
    PwOutputGrads g = {.dlogp = dlogp, .dentropy = dent, .dvalue = dval, .dscore = dscore};
    CHECK(pw_model_forward(m, &in, &out, &err) == 0 && pw_model_zero_grad(m, &err) == 0 &&
              pw_model_backward(m, &g, &err) == 0,
          "forward/backward: %s", err.msg);
    size_t n = pw_model_num_params(m);
    r->grads = malloc(n * sizeof(float));
    memcpy(r->grads, pw_model_grads(m).data, n * sizeof(float));
}

static void compare(const PwArch *a, const char *fam, PwPrecision p, float temperature)
{
    PwModel *whole = make(a, p, 0), *part = make(a, p, 7); /* 30 rows: 4 chunks of 7 and 2 */
    static Run rw, rp;
    run(whole, temperature, &rw);
    run(part, temperature, &rp);
    const char *pn = pw_precision_name(p);
    double e[4] = {REL(rp.logp, rw.logp, B * T), REL(rp.ent, rw.ent, B * T),
                   REL(rp.value, rw.value, B * T), REL(rp.score, rw.score, B)};
    /* the same products on fewer rows: per element the same sums (1e-6 leaves room for a BLAS
     * that blocks rows differently) */
    CHECK(e[0] < 1e-6 && e[1] < 1e-6 && e[2] < 1e-6 && e[3] < 1e-6,
          "%s %s T=%.1f: chunked logp %.3g entropy %.3g value %.3g score %.3g", fam, pn,
          (double)temperature, e[0], e[1], e[2], e[3]);
    double worst = 0.0;
    const char *where = "";
    for (int i = 0; i < pw_model_num_tensors(whole); i++) {
        size_t off, n;
        const char *name = pw_model_tensor_info(whole, i, &off, &n);
        if (!n) continue;
        double r = REL(rp.grads + off, rw.grads + off, n);
        if (r > worst) worst = r, where = name;
    }
    CHECK(worst < 1e-5, "%s %s T=%.1f: chunked gradients %.3g at %s", fam, pn,
          (double)temperature, worst, where);
    size_t bw = pw_model_activation_bytes(whole), bp = pw_model_activation_bytes(part);
    size_t want = (size_t)(B * T - 7) * pw_model_vocab_padded(whole) * sizeof(float);
    CHECK(bw - bp == want, "%s %s: chunked activations %zu bytes fewer, want %zu", fam, pn,
          bw - bp, want);
    printf("%s %s T=%.1f: chunks of 7 vs 30 rows: logp %.2g entropy %.2g, gradients %.2g (%s); "
           "%zu activation bytes fewer\n", fam, pn, (double)temperature, e[0], e[1], worst, where,
           bw - bp);
    free(rw.grads), free(rp.grads);
    pw_model_free(whole);
    pw_model_free(part);
}

static void test_logits(void)
{
    int tok[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = i % V;
    static float logits[B * T * V];
    PwModelInput in = {tok, NULL, NULL, B, T, 1.0f};
    PwOutputs out = {0, T, NULL, NULL, NULL, NULL, logits};
    PwErr err;
    PwModel *m = make(&gpt2, PW_PRECISION_FP32, 7);
    CHECK(pw_model_forward(m, &in, &out, &err) != 0 && strstr(err.msg, "lm_chunk"),
          "logits asked of a chunked head: %s", err.msg);
    pw_model_free(m);
    m = make(&gpt2, PW_PRECISION_FP32, B * T); /* a chunk that covers the batch keeps them */
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "logits with lm_chunk = B T: %s", err.msg);
    pw_model_free(m);
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = B, .maxT = T, .lm_chunk = -1};
    CHECK(pw_model_create(&gpt2, &o, &err) == NULL && strstr(err.msg, "lm_chunk -1"),
          "lm_chunk -1: %s", err.msg);
}

int main(void)
{
    for (int p = 0; p < 2; p++) {
        PwPrecision pr = p ? PW_PRECISION_BF16 : PW_PRECISION_FP32;
        compare(&gpt2, "gpt2", pr, 1.0f);
        compare(&llama, "llama", pr, 1.0f);
        compare(&gpt2, "gpt2", pr, 0.7f);
    }
    test_logits();
    return pw_test_done("test_lm_chunk");
}
