/* test_acts.c: what a batch forward keeps for the backward (PwModelOpts.acts) changes no number
 * on the CPU, where the same kernels run in the same order: three models made from one seed,
 * keeping every layer's activations (keep), the layers' inputs alone with each layer made again
 * in the backward (recompute: activation checkpointing), or one layer's set reused (none, a
 * model that only scores), give the same log-probs, entropies, values and scores bit for bit on
 * a left-padded batch; keep and recompute give the same gradients bit for bit over two micro
 * batches accumulated (the second forward's layers are the ones made again); none refuses a
 * backward with a message; and the activations shrink as planned (keep > recompute > none). For
 * GPT-2 and the Llama family, three layers, fp32 and bf16, the LM head whole and in chunks. */
#include <string.h>

#include "pw_test.h"
#include "tiny_archs.h"

enum { B = 3, T = 10, NB = 2 };

typedef struct Out {
    float logp[NB][B * T], ent[NB][B * T], val[NB][B * T], score[NB][B];
} Out;

/* Two micro batches (different tokens, rows left-padded by 0, 3 and 1) through m, the outputs
 * into o; with train, the backward of each into one set of gradients. Returns the backward's
 * verdict (-1 with err from the first refused one). */
static int run(PwModel *m, const PwArch *a, int train, Out *o, PwErr *err)
{
    int rc = train ? pw_model_zero_grad(m, err) : 0;
    for (int b = 0; b < NB && !rc; b++) {
        int tok[B * T], mask[B * T], tgt[B * T];
        for (int i = 0; i < B * T; i++) {
            int r = i / T, t = i % T, pad = r == 1 ? 3 : r == 2 ? 1 : 0;
            tok[i] = (i * 7 + 3 + 11 * b) % a->vocab_size;
            mask[i] = t >= pad;
        }
        pw_lm_next_token_targets(tgt, tok, mask, B, T);
        PwModelInput in = {tok, mask, tgt, B, T, 1.0f};
        PwOutputs out = {0, T, o->logp[b], o->ent[b], o->val[b], o->score[b], NULL};
        if (pw_model_forward(m, &in, &out, err)) return -1;
        if (!train) continue;
        float dlogp[B * T], dent[B * T], dval[B * T], dscore[B];
        for (int i = 0; i < B * T; i++) {
            dlogp[i] = mask[i] ? 0.01f * (float)(i % 5 + b) : 0.0f;
            dent[i] = mask[i] ? -0.003f * (float)(i % 3) : 0.0f;
            dval[i] = mask[i] ? 0.02f * (float)(i % 4 - 1) : 0.0f;
        }
        for (int r = 0; r < B; r++) dscore[r] = 0.1f * (float)(r - 1);
        PwOutputGrads g = {.dlogp = dlogp, .dentropy = dent, .dvalue = dval, .dscore = dscore};
        rc = pw_model_backward(m, &g, err);
    }
    return rc;
}

static void compare(const char *name, PwArch a, PwPrecision prec, int lm_chunk)
{
    a.n_layer = 3; /* three layers: keep holds more than recompute, recompute more than none */
    printf("%s %s, lm_chunk %d\n", name, pw_precision_name(prec), lm_chunk);
    static const char *const names[] = {"keep", "recompute", "none"};
    PwModel *m[PW_ACTS_COUNT];
    static Out o[PW_ACTS_COUNT];
    size_t bytes[PW_ACTS_COUNT];
    PwErr err;
    for (int k = 0; k < PW_ACTS_COUNT; k++) {
        PwModelOpts opt = {.heads = PW_HEAD_LM | PW_HEAD_VALUE | PW_HEAD_SCORE, .maxB = B,
                           .maxT = T, .precision = prec, .lm_chunk = lm_chunk,
                           .acts = (PwActs)k};
        m[k] = tiny_model(&a, &opt, 5);
        PwModelBytes p;
        CHECK(pw_model_plan(&a, &opt, &p, &err) == 0, "plan: %s", err.msg);
        bytes[k] = p.activations;
        int rc = run(m[k], &a, 1, &o[k], &err);
        if (k == PW_ACTS_NONE)
            CHECK(rc == -1 && strstr(err.msg, "forwards only"), "none: backward rc %d '%s'", rc,
                  rc ? err.msg : "");
        else
            CHECK(rc == 0, "%s: %s", names[k], err.msg);
    }
    for (int k = 1; k < PW_ACTS_COUNT; k++) {
        /* none stopped at the first backward: its first micro batch is the one to compare */
        size_t n = k == PW_ACTS_NONE ? 1 : NB;
        CHECK(!memcmp(o[k].logp, o[0].logp, n * sizeof o[0].logp[0]) &&
                  !memcmp(o[k].ent, o[0].ent, n * sizeof o[0].ent[0]) &&
                  !memcmp(o[k].val, o[0].val, n * sizeof o[0].val[0]) &&
                  !memcmp(o[k].score, o[0].score, n * sizeof o[0].score[0]),
              "%s: the outputs differ from keep's", names[k]);
    }
    PwTensor g0 = pw_model_grads(m[PW_ACTS_KEEP]), g1 = pw_model_grads(m[PW_ACTS_RECOMPUTE]);
    size_t np = pw_model_num_params(m[0]);
    double gmax = 0.0;
    for (size_t i = 0; i < np; i++) gmax = fmax(gmax, fabs(((const float *)g0.data)[i]));
    CHECK(gmax > 0.0 && !memcmp(g0.data, g1.data, np * sizeof(float)),
          "recompute: the gradients differ from keep's (largest |g| %g)", gmax);
    /* none forwards again after its refusal, the same numbers */
    Out again;
    CHECK(run(m[PW_ACTS_NONE], &a, 0, &again, &err) == 0 &&
              !memcmp(again.logp, o[0].logp, sizeof again.logp),
          "none: a forward after the refused backward: %s", err.msg);
    CHECK(bytes[PW_ACTS_KEEP] > bytes[PW_ACTS_RECOMPUTE] &&
              bytes[PW_ACTS_RECOMPUTE] > bytes[PW_ACTS_NONE],
          "activations: keep %zu, recompute %zu, none %zu bytes", bytes[0], bytes[1], bytes[2]);
    printf("  activations: keep %zu, recompute %zu, none %zu bytes; largest |grad| %.3g\n",
           bytes[0], bytes[1], bytes[2], gmax);
    for (int k = 0; k < PW_ACTS_COUNT; k++) pw_model_free(m[k]);
}

int main(void)
{
    const PwArch gpt2 = TINY_GPT2(61), llama = TINY_LLAMA(64);
    PwArch qwen3 = llama; /* the q/k norm's kept heads and statistics made again too */
    qwen3.hf_type = 3, qwen3.qk_norm = 1, qwen3.head_dim = 12;
    for (int bf16 = 0; bf16 < 2; bf16++) {
        PwPrecision prec = bf16 ? PW_PRECISION_BF16 : PW_PRECISION_FP32;
        compare("gpt2", gpt2, prec, 0);
        compare("gpt2", gpt2, prec, 7);
        compare("llama", llama, prec, 0);
        compare("llama", llama, prec, 4);
        compare("qwen3", qwen3, prec, 0);
    }
    PwModelOpts bad = {.heads = PW_HEAD_LM, .maxB = 1, .maxT = 4, .acts = PW_ACTS_COUNT};
    PwModelBytes p;
    PwErr err;
    CHECK(pw_model_plan(&gpt2, &bad, &p, &err) == -1 && strstr(err.msg, "acts 3"),
          "acts out of range: '%s'", err.msg);
    return pw_test_done("test_acts");
}
