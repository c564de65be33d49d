/* test_memory_plan.c: what pw_model_plan and pw_gen_plan say a model and its generator will hold
 * on their device is what they hold, to the byte, on the CPU (whose kernel table counts what it
 * has handed out: pw_cpu_table_bytes): after the model is made (parameters, their bfloat16 copy,
 * buffers), after a forward (the activations), a backward (its scratch, the gradients), a step
 * (the moments), after a generator is made and has generated; and nothing is held once both are
 * freed. For GPT-2 (an odd vocabulary: padded rows) and the Llama family (grouped-query, biases,
 * untied), at fp32 and bf16, the LM head whole and in chunks, with every head or the value head
 * alone, keeping every layer's activations, the layers' inputs alone (recompute) or one layer's
 * (none: a forward-only model, which the test does not train), and frozen (PwModelOpts.frozen:
 * at bf16 the layers' matrices in bfloat16 only, made from a host copy as it loads), and given
 * a third of the parameters as its optimiser's share (pw_model_plan_share: the share's moments,
 * and at bf16 the share's float32 of the layers' matrices), and that with its gradients split
 * too (pw_model_plan_split: the share's gradient and the buffers a backward sums from; at bf16
 * the weights handed over take their place until the next zero_grad); the most it held while it
 * was made and given its share is the plan's load (at bf16 the whole float32 before the split);
 * and a refused
 * architecture gets the same message as pw_model_create's. */
#include <string.h>

#include "pw_generate.h"
#include "pw_ops.h"
#include "pw_test.h"
#include "tiny_archs.h"

enum { B = 3, T = 10, GB = 4, GP = 3, GR = 5 };

static size_t held(void) { return pw_cpu_table_bytes(); }

/* the split gradients' reductions of one rank whose others add nothing */
static void own_sum(void *ctx, float *buf, const int64_t *starts)
{
    (void)ctx, (void)buf, (void)starts;
}
static double own_norm(void *ctx, double v) { return (void)ctx, v; }

static void run(const char *name, const PwArch *a, PwPrecision prec, int lm_chunk, int heads,
                PwActs acts, int frozen, int share)
{
    printf("%s %s, lm_chunk %d, heads %d, acts %d%s%s\n", name, pw_precision_name(prec),
           lm_chunk, heads, (int)acts, frozen ? ", frozen" : "",
           share > 1 ? ", a share, gradients split" : share ? ", a share" : "");
    PwModelOpts o = {.heads = heads, .maxB = B, .maxT = T, .precision = prec,
                     .lm_chunk = lm_chunk, .acts = acts, .frozen = frozen};
    PwModelBytes p;
    PwErr err;
    CHECK(pw_model_plan(a, &o, &p, &err) == 0, "plan: %s", err.msg);
    size_t P = p.grads / sizeof(float), lo = P / 3, hi = 2 * P / 3;
    if (share == 1)
        CHECK(pw_model_plan_share(a, &o, lo, hi, &p, &err) == 0, "plan: %s", err.msg);
    if (share == 2)
        CHECK(pw_model_plan_split(a, &o, lo, hi, &p, &err) == 0, "plan: %s", err.msg);
    const size_t base = held();
    pw_cpu_table_peak_reset();
    PwModel *m = tiny_model(a, &o, 7);
    if (share)
        CHECK(pw_model_optimizer_shard(m, lo, hi, &err) == 0, "share: %s", err.msg);
    /* the most it held while it was made and given its share (at bf16 the split's buffers
     * beside the whole float32) */
    CHECK(pw_cpu_table_peak_bytes() - base == p.load, "made: at most %zu bytes held, planned %zu",
          pw_cpu_table_peak_bytes() - base, p.load);
    const int64_t blocks[4] = {0, (int64_t)lo, (int64_t)hi, (int64_t)P};
    PwGradSplit fn = {own_sum, own_norm, NULL, NULL};
    if (share == 2)
        CHECK(pw_model_grads_split(m, blocks, 3, 1, &fn, &err) == 0, "split: %s", err.msg);
    CHECK(share == 2 ? p.grads < P * sizeof(float) : p.grads == P * sizeof(float),
          "the plan's gradients: %zu bytes of %zu parameters", p.grads, P);
    size_t made = p.params + p.params_bf16 + p.buffers;
    CHECK(held() - base == made, "made: %zu bytes held, planned %zu", held() - base, made);
    const size_t p32 = pw_model_num_params(m) * sizeof(float);
    /* a frozen bf16 model keeps some tensors in bfloat16 only (test_frozen counts them), and
     * one with a share of the optimiser at bf16 their float32 for the share alone */
    CHECK(((frozen || share) && prec == PW_PRECISION_BF16 ? p.params < p32 : p.params == p32) &&
              p.moments == (share ? 2 * (hi - lo) * sizeof(float) : 2 * p32) &&
              p.activations + p.backward == pw_model_activation_bytes(m),
          "the plan's parameters or activations are not the model's own figures");

    int tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (i * 7 + 3) % a->vocab_size;
    pw_lm_next_token_targets(tgt, tok, NULL, B, T);
    float logp[B * T], ent[B * T], val[B * T], score[B], dlogp[B * T], dval[B * T];
    for (int i = 0; i < B * T; i++) dlogp[i] = dval[i] = 0.01f * (float)(i % 5);
    PwModelInput in = {tok, NULL, tgt, B, T, 1.0f};
    int lm = heads & PW_HEAD_LM;
    PwOutputs out = {0, T, lm ? logp : NULL, lm ? ent : NULL,
                     heads & PW_HEAD_VALUE ? val : NULL, heads & PW_HEAD_SCORE ? score : NULL,
                     NULL};
    PwOutputGrads g = {.dlogp = lm ? dlogp : NULL, .dvalue = heads & PW_HEAD_VALUE ? dval : NULL};
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "forward: %s", err.msg);
    CHECK(held() - base == made + p.activations, "after a forward: %zu bytes held, planned %zu",
          held() - base, made + p.activations);
    if (acts == PW_ACTS_NONE) { /* a model that only scores: no backward, no step */
        pw_model_free(m);
        CHECK(held() == base, "%zu bytes still held after the model was freed", held() - base);
        return;
    }
    CHECK(pw_model_zero_grad(m, &err) == 0 && pw_model_backward(m, &g, &err) == 0,
          "backward: %s", err.msg);
    size_t trained = made + p.activations + p.backward + p.grads;
    CHECK(held() - base == trained, "after a backward: %zu bytes held, planned %zu",
          held() - base, trained);
    PwAdamWConfig opt = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f};
    CHECK(pw_model_adamw_step(m, &opt, 1, NULL, &err) == PW_ADAMW_APPLIED, "%s", err.msg);
    trained += p.moments;
    CHECK(held() - base == trained, "after a step: %zu bytes held, planned %zu", held() - base,
          trained);
    CHECK(pw_model_bytes_most(&p) == (trained > p.load ? trained : p.load),
          "the most: %zu planned", pw_model_bytes_most(&p));
    if (share == 2 && prec == PW_PRECISION_BF16) { /* the payload where the gradients were */
        PwTensor w;
        CHECK(pw_model_weights_out(m, NULL, &w, &err) == 0, "weights out: %s", err.msg);
        size_t sent = trained - p.grads + p.transfer;
        CHECK(held() - base == sent, "with the weights handed over: %zu bytes held, planned %zu",
              held() - base, sent);
        CHECK(pw_model_zero_grad(m, &err) == 0, "%s", err.msg);
        CHECK(held() - base == trained, "gradients again: %zu bytes held, planned %zu",
              held() - base, trained);
    }

    if (lm) { /* a generator of GB rows, GP + GR tokens, beside the model */
        size_t gbytes = 0;
        CHECK(pw_gen_plan(a, &o, GB, GP + GR, &gbytes, &err) == 0, "gen plan: %s", err.msg);
        PwGen *gen = pw_gen_create(m, GB, GP + GR, &err);
        CHECK(gen != NULL, "generator: %s", err.msg);
        int prompt[GB * GP];
        for (int i = 0; i < GB * GP; i++) prompt[i] = (i * 5 + 1) % a->vocab_size;
        PwGenConfig cfg = {.max_new_tokens = GR, .stop_token = -1, .pad_token = 0,
                           .sample = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f},
                           .seed = 3};
        CHECK(gen && pw_generate(gen, prompt, NULL, GB, GP, NULL, &cfg, &err) == 0,
              "generate: %s", err.msg);
        CHECK(held() - base == trained + gbytes, "with a generator: %zu bytes held, planned %zu",
              held() - base, trained + gbytes);
        pw_gen_free(gen);
    }
    pw_model_free(m);
    CHECK(held() == base, "%zu bytes still held after the model was freed", held() - base);
}

int main(void)
{
    const PwArch gpt2 = TINY_GPT2(61), llama = TINY_LLAMA(64);
    const int all = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE;
    for (int bf16 = 0; bf16 < 2; bf16++) {
        PwPrecision prec = bf16 ? PW_PRECISION_BF16 : PW_PRECISION_FP32;
        for (int k = 0; k < PW_ACTS_COUNT; k++) {
            PwActs acts = (PwActs)k;
            run("gpt2", &gpt2, prec, 0, all, acts, 0, 0);
            run("gpt2", &gpt2, prec, 7, PW_HEAD_LM, acts, 0, 0);
            run("gpt2", &gpt2, prec, 0, PW_HEAD_VALUE, acts, 0, 0);
            run("llama", &llama, prec, 0, all, acts, 0, 0);
            run("llama", &llama, prec, 4, PW_HEAD_LM, acts, 0, 0);
            run("llama", &llama, prec, 0, PW_HEAD_SCORE, acts, 0, 0);
        }
        run("gpt2", &gpt2, prec, 0, all, PW_ACTS_NONE, 1, 0);
        run("llama", &llama, prec, 4, PW_HEAD_LM, PW_ACTS_NONE, 1, 0);
        run("llama", &llama, prec, 0, PW_HEAD_SCORE, PW_ACTS_NONE, 1, 0);
        run("gpt2", &gpt2, prec, 0, all, PW_ACTS_KEEP, 0, 1);
        run("llama", &llama, prec, 4, PW_HEAD_LM, PW_ACTS_RECOMPUTE, 0, 1);
        run("gpt2", &gpt2, prec, 0, all, PW_ACTS_KEEP, 0, 2);
        run("llama", &llama, prec, 4, PW_HEAD_LM, PW_ACTS_RECOMPUTE, 0, 2);
    }
    /* refused as pw_model_create refuses it */
    PwArch bad = gpt2;
    bad.n_head = 5; /* 32 % 5 != 0 */
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = 1, .maxT = 4};
    PwModelBytes p;
    PwErr e1 = {{0}}, e2 = {{0}};
    PwModel *m = pw_model_create(&bad, &o, &e2);
    CHECK(pw_model_plan(&bad, &o, &p, &e1) == -1 && !m && !strcmp(e1.msg, e2.msg) && *e1.msg,
          "a bad architecture: plan '%s', create '%s'", e1.msg, e2.msg);
    size_t gb;
    CHECK(pw_gen_plan(&gpt2, &o, 2, 17, &gb, &e1) == -1 && strstr(e1.msg, "n_positions 16"),
          "a generator longer than the model's positions: '%s'", e1.msg);
    o.heads = PW_HEAD_VALUE; /* refused as pw_kv_create refuses it */
    CHECK(pw_gen_plan(&gpt2, &o, 2, 8, &gb, &e1) == -1 && strstr(e1.msg, "needs the LM head"),
          "a generator of a model without its LM head: '%s'", e1.msg);
    return pw_test_done("test_memory_plan");
}
