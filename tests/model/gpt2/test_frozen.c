/* test_frozen.c: a frozen model (PwModelOpts.frozen: a reference, a reward model) computes what
 * the same weights compute in a model that may train, bit for bit, while at bf16 it keeps the
 * layers' matrices (and an untied LM head) in bfloat16 alone. For GPT-2 and the Llama family
 * (untied, and tied), fp32 and bf16, made two ways (a random initialisation, and a load of the
 * folder an unfrozen model saved): the log-probs, entropies, values and scores of a left-padded
 * batch and a KV cache's prefill and decode logits are the unfrozen model's; its plan's
 * parameters are the unfrozen model's less 4 bytes for each weight of those tensors, counted
 * here by hand; and gradients, a backward, saving, and a frozen model that would keep
 * activations are refused with a message. */
#include <string.h>
#include <sys/stat.h>

#include "pw_test.h"
#include "tiny_archs.h"

enum { B = 3, T = 10 };

typedef struct Out {
    float logp[B * T], ent[B * T], val[B * T], score[B], kv[2][B][64];
} Out;

/* A left-padded batch through m's forward, then a cache's prefill of it and one decode step */
static void run(PwModel *m, const PwArch *a, Out *o)
{
    int tok[B * T], mask[B * T], tgt[B * T], next[B], active[B];
    for (int i = 0; i < B * T; i++) {
        int r = i / T, t = i % T, pad = r == 1 ? 3 : r == 2 ? 1 : 0;
        tok[i] = (i * 7 + 3) % a->vocab_size;
        mask[i] = t >= pad;
    }
    pw_lm_next_token_targets(tgt, tok, mask, B, T);
    PwModelInput in = {tok, mask, tgt, B, T, 1.0f};
    PwOutputs out = {0, T, o->logp, o->ent, o->val, o->score, NULL};
    PwErr err;
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "forward: %s", err.msg);
    PwKVCache *c = pw_kv_create(m, B, T + 1, &err);
    CHECK(c && pw_kv_prefill(c, tok, mask, B, T, &err) == 0, "prefill: %s", err.msg);
    for (int b = 0; b < B; b++) {
        memcpy(o->kv[0][b], pw_kv_logits(c, b), (size_t)a->vocab_size * sizeof(float));
        next[b] = (b * 5 + 1) % a->vocab_size;
        active[b] = 1;
    }
    CHECK(pw_kv_decode(c, next, active, B, &err) == 0, "decode: %s", err.msg);
    for (int b = 0; b < B; b++)
        memcpy(o->kv[1][b], pw_kv_logits(c, b), (size_t)a->vocab_size * sizeof(float));
    pw_kv_free(c);
}

/* the weights a frozen bf16 model keeps in bfloat16 alone, counted from the architecture */
static size_t bf16_only(const PwArch *a)
{
    size_t L = a->n_layer, C = a->n_embd;
    if (a->family == PW_FAMILY_GPT2) return L * (3 * C * C + C * C + 4 * C * C + 4 * C * C);
    size_t hs = C / a->n_head, Q = (a->n_head + 2 * (size_t)a->n_kv_head) * hs, F = a->n_inner;
    size_t Vp = (a->vocab_size + 63) / 64 * 64; /* the padded vocabulary's rows */
    return L * (Q * C + C * a->n_head * hs + 2 * F * C + C * F) + (a->tied ? 0 : Vp * C);
}

static void compare(const char *name, const PwArch *a, PwPrecision prec, const char *dir)
{
    printf("%s %s\n", name, pw_precision_name(prec));
    PwModelOpts o = {.heads = PW_HEAD_LM | PW_HEAD_VALUE | PW_HEAD_SCORE, .maxB = B,
                     .maxT = T + 1, .precision = prec, .acts = PW_ACTS_NONE};
    PwModelOpts fo = o;
    fo.frozen = 1;
    PwErr err;
    PwModel *m = tiny_model(a, &o, 9), *f = tiny_model(a, &fo, 9);
    CHECK(pw_model_save(m, dir, &err) == 0, "save: %s", err.msg);
    PwModel *g = pw_model_load(dir, &fo, &err);
    if (!g) {
        CHECK(0, "load frozen: %s", err.msg);
        exit(pw_test_done("test_frozen"));
    }
    static Out om, of, og;
    run(m, a, &om);
    run(f, a, &of);
    run(g, a, &og);
    CHECK(!memcmp(&of, &om, sizeof om), "%s: the frozen model's outputs differ", name);
    CHECK(!memcmp(&og, &om, sizeof om), "%s: the loaded frozen model's outputs differ", name);

    /* what it holds: 4 bytes less for each weight kept in bfloat16 only (bf16); all at fp32 */
    PwModelBytes pm, pf;
    CHECK(pw_model_plan(a, &o, &pm, &err) == 0 && pw_model_plan(a, &fo, &pf, &err) == 0,
          "plan: %s", err.msg);
    size_t drop = prec == PW_PRECISION_BF16 ? bf16_only(a) * sizeof(float) : 0;
    CHECK(pm.params - pf.params == drop && pf.params_bf16 == pm.params_bf16,
          "%s: plan: params %zu -> %zu bytes, expected %zu less", name, pm.params, pf.params,
          drop);
    printf("  parameters %zu -> %zu bytes (+ %zu of bfloat16)\n", pm.params, pf.params,
           pf.params_bf16);

    CHECK(pw_model_check_params(f, &err) == 0, "%s: check_params: %s", name, err.msg);
    CHECK(pw_model_zero_grad(f, &err) == -1 && strstr(err.msg, "frozen"),
          "%s: zero_grad on a frozen model", name);
    PwOutputGrads none = {0};
    CHECK(pw_model_backward(f, &none, &err) == -1, "%s: backward on a frozen model", name);
    int saved = pw_model_save(f, dir, &err);
    CHECK(saved == -1 && strstr(err.msg, "frozen model is never written"),
          "%s: save of a frozen model: rc %d", name, saved);
    pw_model_free(m);
    pw_model_free(f);
    pw_model_free(g);
}

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : ".";
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/frozen_ckpt", root);
    mkdir(dir, 0755); /* or there already */
    PwArch gpt2 = TINY_GPT2(61), llama = TINY_LLAMA(64), tied = TINY_LLAMA(50);
    tied.tied = 1;
    for (int bf16 = 0; bf16 < 2; bf16++) {
        PwPrecision prec = bf16 ? PW_PRECISION_BF16 : PW_PRECISION_FP32;
        compare("gpt2", &gpt2, prec, dir);
        compare("llama untied", &llama, prec, dir);
        compare("llama tied", &tied, prec, dir);
    }
    PwModelOpts bad = {.heads = PW_HEAD_LM, .maxB = 1, .maxT = 4, .frozen = 1};
    PwModelBytes p;
    PwErr err;
    CHECK(pw_model_plan(&gpt2, &bad, &p, &err) == -1 && strstr(err.msg, "never trains"),
          "frozen keeping activations: '%s'", err.msg);
    return pw_test_done("test_frozen");
}
