/* test_split.c: a frozen model (PwModelOpts.frozen: a reference, a reward model) and a model
 * that follows another (PwModelOpts.follows: a generator) compute what the same weights compute
 * in a model that may train, bit for bit, while at bf16 they keep the layers' matrices (and an
 * untied LM head) in bfloat16 alone. For GPT-2 and the Llama family (untied, and tied), fp32 and
 * bf16, made two ways (a random initialisation, and a load of the folder a trainable model
 * saved): the log-probs, entropies, values and scores of a left-padded batch and a KV cache's
 * prefill and decode logits are the trainable model's; its plan's parameters are the trainable
 * model's less 4 bytes for each weight of those tensors, counted here by hand (the float32 part
 * padded to 64 floats); gradients, a backward, saving, and a frozen model that would keep
 * activations are refused with a message.
 * The weights handed over (pw_model_weights_out / _in): a follower made from other weights
 * takes the trainable model's payload and computes its outputs bit for bit, twice (the second
 * time after every weight moved, so a stale bfloat16 copy would show); the payload is 4 bytes a
 * weight at fp32 and, at bf16, 4 for the float32 part (padded) and 2 for each matrix weight; a
 * trainable model packs it into its gradients' memory, and then refuses a backward and an
 * optimiser step until the gradients are zeroed, or straight into the receiver's memory (the
 * second hand-over), leaving its gradients as they were. */
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
    memset(o, 0, sizeof *o); /* a vocabulary below 64 leaves the rows' tails as they are */
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

/* m's weights handed to f (a model that follows): out of m, through a host copy as a message
 * would carry them, into f; or (in_place) packed by m straight into f's memory, as for a
 * generator on the actor's rank. Returns the payload's bytes. */
static size_t hand_over(PwModel *m, PwModel *f, int in_place)
{
    PwErr err;
    PwTensor out, in = pw_model_weights_in(f);
    CHECK(pw_model_weights_out(m, in_place ? in.data : NULL, &out, &err) == 0, "weights_out: %s",
          err.msg);
    size_t n = pw_tensor_bytes(&out);
    if (in_place && pw_model_precision(m) == PW_PRECISION_BF16)
        CHECK(out.data == in.data, "weights_out into the receiver: the payload is elsewhere");
    if (out.data == in.data) return n; /* written in place */
    CHECK(n == pw_tensor_bytes(&in) && out.dtype == in.dtype && n == pw_model_weights_bytes(m),
          "payload: %zu bytes out, %zu in, weights_bytes %zu", n, pw_tensor_bytes(&in),
          pw_model_weights_bytes(m));
    if (n == pw_tensor_bytes(&in)) memcpy(in.data, out.data, n);
    return n;
}

static void compare(const char *name, const PwArch *a, PwPrecision prec, const char *dir,
                    int follows)
{
    const char *kind = follows ? "following" : "frozen";
    printf("%s %s %s\n", name, pw_precision_name(prec), kind);
    PwModelOpts o = {.heads = PW_HEAD_LM | PW_HEAD_VALUE | PW_HEAD_SCORE, .maxB = B,
                     .maxT = T + 1, .precision = prec, .acts = PW_ACTS_NONE};
    PwModelOpts fo = o;
    fo.frozen = !follows;
    fo.follows = follows;
    PwErr err;
    PwModel *m = tiny_model(a, &o, 9), *f = tiny_model(a, &fo, 9);
    CHECK(pw_model_save(m, dir, &err) == 0, "save: %s", err.msg);
    PwModel *g = pw_model_load(dir, &fo, &err);
    if (!g) {
        CHECK(0, "load %s: %s", kind, err.msg);
        exit(pw_test_done("test_split"));
    }
    static Out om, of, og;
    run(m, a, &om);
    run(f, a, &of);
    run(g, a, &og);
    CHECK(!memcmp(&of, &om, sizeof om), "%s: the %s model's outputs differ", name, kind);
    CHECK(!memcmp(&og, &om, sizeof om), "%s: the loaded %s model's outputs differ", name, kind);

    /* what it holds: 4 bytes less for each weight kept in bfloat16 only (bf16), the float32
     * part padded to 64 floats; all at fp32 */
    PwModelBytes pm, pf;
    CHECK(pw_model_plan(a, &o, &pm, &err) == 0 && pw_model_plan(a, &fo, &pf, &err) == 0,
          "plan: %s", err.msg);
    size_t P = pw_model_num_params(m), only = bf16_only(a), kept = (P - only + 63) / 64 * 64;
    size_t held = prec == PW_PRECISION_BF16 ? kept * sizeof(float) : P * sizeof(float);
    size_t payload = prec == PW_PRECISION_BF16 ? kept * sizeof(float) + only * 2
                                               : P * sizeof(float);
    CHECK(pm.params == P * sizeof(float) && pf.params == held &&
          pf.params_bf16 == pm.params_bf16, "%s: plan: params %zu -> %zu bytes, expected %zu",
          name, pm.params, pf.params, held);
    CHECK(pm.transfer == payload && pf.transfer == payload,
          "%s: plan: the payload %zu / %zu bytes, expected %zu", name, pm.transfer, pf.transfer,
          payload);
    printf("  parameters %zu -> %zu bytes (+ %zu of bfloat16); payload %zu bytes\n", pm.params,
           pf.params, pf.params_bf16, payload);

    if (follows) { /* a follower of other weights takes m's, then m's moved */
        PwModel *h = tiny_model(a, &fo, 77);
        static Out oh;
        CHECK(hand_over(m, h, 0) == payload, "%s: payload size", name);
        run(h, a, &oh);
        CHECK(!memcmp(&oh, &om, sizeof om), "%s: the follower's outputs after the hand-over "
              "differ from the model it follows", name);
        float *p = pw_model_params(m).data; /* a CPU model: host memory */
        for (size_t i = 0; i < P; i++) p[i] = p[i] * 1.25f + 1e-3f * (float)(i % 7);
        run(m, a, &om);
        hand_over(m, h, 1);
        run(h, a, &oh);
        CHECK(!memcmp(&oh, &om, sizeof om), "%s: the follower's outputs after a second "
              "hand-over differ", name);
        /* a split follower hands on its own buffer: the same payload */
        PwTensor out, own;
        CHECK(pw_model_weights_out(m, NULL, &out, &err) == 0 &&
              pw_model_weights_out(h, NULL, &own, &err) == 0 &&
              !memcmp(out.data, own.data, payload), "%s: the follower's payload", name);
        pw_model_free(h);
    }

    CHECK(pw_model_check_params(f, &err) == 0, "%s: check_params: %s", name, err.msg);
    CHECK(pw_model_zero_grad(f, &err) == -1 && strstr(err.msg, follows ? "follows" : "frozen"),
          "%s: zero_grad on a %s model", name, kind);
    PwOutputGrads none = {0};
    CHECK(pw_model_backward(f, &none, &err) == -1, "%s: backward on a %s model", name, kind);
    int saved = pw_model_save(f, dir, &err);
    CHECK(saved == -1 && strstr(err.msg, follows ? "follows another" : "frozen model is never "
          "written"), "%s: save of a %s model: rc %d", name, kind, saved);
    pw_model_free(m);
    pw_model_free(f);
    pw_model_free(g);
}

/* A trainable bf16 model packs its payload into its gradients' memory: a backward or an
 * optimiser step after it, before the gradients are zeroed, would read the payload as
 * gradients, and is refused; after zero_grad both run. */
static void spent_grads(const PwArch *a)
{
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = B, .maxT = T, .precision = PW_PRECISION_BF16};
    PwModel *m = tiny_model(a, &o, 3);
    int tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (i * 3 + 1) % a->vocab_size;
    pw_lm_next_token_targets(tgt, tok, NULL, B, T);
    PwModelInput in = {tok, NULL, tgt, B, T, 1.0f};
    float lp[B * T], dlp[B * T];
    for (int i = 0; i < B * T; i++) dlp[i] = -1.0f / (B * T);
    PwOutputs out = {0, T, lp, NULL, NULL, NULL, NULL};
    PwOutputGrads gr = {.dlogp = dlp};
    PwAdamWConfig cfg = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.0f, 1.0f};
    PwErr err;
    PwTensor p;
    CHECK(pw_model_forward(m, &in, &out, &err) == 0 && pw_model_backward(m, &gr, &err) == 0 &&
          pw_model_adamw_step(m, &cfg, 1, NULL, &err) == PW_ADAMW_APPLIED &&
          pw_model_weights_out(m, NULL, &p, &err) == 0, "a step, then weights_out: %s", err.msg);
    CHECK(p.data == pw_model_grads(m).data, "the payload is not in the gradients' memory");
    int rc = pw_model_adamw_step(m, &cfg, 2, NULL, &err);
    CHECK(rc == -1 && strstr(err.msg, "zero the gradients first"), "step after weights_out: "
          "rc %d '%s'", rc, err.msg);
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "forward: %s", err.msg);
    rc = pw_model_backward(m, &gr, &err);
    CHECK(rc == -1 && strstr(err.msg, "zero the gradients first"), "backward after "
          "weights_out: rc %d '%s'", rc, err.msg);
    CHECK(pw_model_zero_grad(m, &err) == 0 && pw_model_backward(m, &gr, &err) == 0 &&
          pw_model_adamw_step(m, &cfg, 2, NULL, &err) == PW_ADAMW_APPLIED,
          "zero_grad, backward, step: %s", err.msg);
    /* packed into another buffer, the gradients stay: a step may follow */
    static unsigned char buf[1 << 20];
    CHECK(pw_model_weights_bytes(m) <= sizeof buf, "payload of %zu bytes",
          pw_model_weights_bytes(m));
    CHECK(pw_model_zero_grad(m, &err) == 0 && pw_model_backward(m, &gr, &err) == 0 &&
          pw_model_weights_out(m, buf, &p, &err) == 0 && p.data == (void *)buf &&
          pw_model_adamw_step(m, &cfg, 3, NULL, &err) == PW_ADAMW_APPLIED,
          "weights_out into a buffer, then a step: %s", err.msg);
    pw_model_free(m);
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
        for (int follows = 0; follows < 2; follows++) {
            compare("gpt2", &gpt2, prec, dir, follows);
            compare("llama untied", &llama, prec, dir, follows);
            compare("llama tied", &tied, prec, dir, follows);
        }
    }
    spent_grads(&gpt2);
    spent_grads(&llama);
    PwModelOpts bad = {.heads = PW_HEAD_LM, .maxB = 1, .maxT = 4, .frozen = 1};
    PwModelBytes p;
    PwErr err;
    CHECK(pw_model_plan(&gpt2, &bad, &p, &err) == -1 && strstr(err.msg, "never trains"),
          "frozen keeping activations: '%s'", err.msg);
    PwModelOpts both = {.heads = PW_HEAD_LM, .maxB = 1, .maxT = 4, .acts = PW_ACTS_NONE,
                        .frozen = 1, .follows = 1};
    CHECK(pw_model_plan(&gpt2, &both, &p, &err) == -1 && strstr(err.msg, "not both"),
          "frozen and following: '%s'", err.msg);
    return pw_test_done("test_split");
}
