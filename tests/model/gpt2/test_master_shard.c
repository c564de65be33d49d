/* test_master_shard.c: at bf16 the float32 master weights split with the optimiser's share
 * (docs/model.md, The optimiser's share). For GPT-2 (tied LM head, padded vocabulary) and the
 * Llama family (an LM head of its own, grouped-query, biases): four models that each keep one
 * share of the same weights (cuts inside tensors, one share empty), trained on the same batches
 * and put together after each update as an all-gather would (pw_model_mirror, pw_model_kept),
 * must compute what one model that keeps everything computes, bit for bit: the forward's
 * log-probs and values, the gradients and their norm, the bfloat16 copy and the float32 weights,
 * the tokens a generator samples; their float32 weights gathered save as its file, byte for byte.
 * A weight gone bad in a share is found and named, and the calls such a model refuses say so. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_generate.h"
#include "pw_test.h"
#include "tiny_archs.h"

enum { N = 4, B = 2, T = 8, NSTEPS = 4, GB = 2, GP = 3, GR = 4 };

static PwModelOpts opts(void)
{
    return (PwModelOpts){.heads = PW_HEAD_LM | PW_HEAD_VALUE, .maxB = B, .maxT = T,
                         .precision = PW_PRECISION_BF16, .vocab_multiple = 8};
}

/* forward and backward of step s's batch: log-probs and values into lv (2 B T), the gradient's
 * floats into the model */
static void pass(PwModel *m, const PwArch *a, int s, float *lv)
{
    PwErr err;
    int tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (i * 7 + 3 * s) % a->vocab_size;
    pw_lm_next_token_targets(tgt, tok, NULL, B, T);
    float ent[B * T], dlogp[B * T], dval[B * T];
    for (int i = 0; i < B * T; i++) {
        dlogp[i] = 0.05f * (float)((i + s) % 5) - 0.1f;
        dval[i] = 0.01f * (float)(i % 3);
    }
    PwModelInput in = {tok, NULL, tgt, B, T, 1.0f};
    PwOutputs out = {0, T, lv, ent, lv + B * T, NULL, NULL};
    PwOutputGrads g = {.dlogp = dlogp, .dvalue = dval};
    CHECK(pw_model_forward(m, &in, &out, &err) == 0 && pw_model_zero_grad(m, &err) == 0 &&
              pw_model_backward(m, &g, &err) == 0,
          "pass: %s", err.msg);
}

/* whether flat float x belongs to a tensor kept whole in float32 */
static int kept_float(const PwModel *m, size_t x)
{
    return pw_model_master_before(m, x + 1) == pw_model_master_before(m, x);
}

static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb) same = 0;
        if (ca == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

static void family(const char *name, const PwArch *a, const char *dir)
{
    printf("%s\n", name);
    PwErr err;
    PwModelOpts o = opts();
    PwModel *whole = tiny_model(a, &o, 7), *share[N];
    const size_t P = pw_model_num_params(whole);
    size_t cut[N + 1] = {0, 301, P / 2 + 7, P, P};
    for (int k = 0; k < N; k++) {
        share[k] = tiny_model(a, &o, 7);
        CHECK(pw_model_optimizer_shard(share[k], cut[k], cut[k + 1], &err) == 0, "%s", err.msg);
        CHECK(pw_model_master_split(share[k]), "share %d: the float32 weights are not split", k);
    }
    CHECK(!pw_model_master_split(whole), "a model of the whole share split its weights");
    const size_t M = pw_model_master_before(whole, P), K = P - M;
    CHECK(M > 0 && K > 0 && pw_model_kept(share[0]).shape[0] == (int64_t)K,
          "%zu master floats, %zu kept whole", M, K);

    PwAdamWConfig opt = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.1f, .grad_clip = 1.0f};
    float lw[2 * B * T], ls[2 * B * T];
    uint16_t *g16 = malloc(P * sizeof *g16);
    float *gk = malloc(K * sizeof *gk), *hm = malloc(M * sizeof *hm);
    for (int s = 1; s <= NSTEPS; s++) {
        pass(whole, a, s, lw);
        double nw = 0.0;
        CHECK(pw_model_adamw_step(whole, &opt, s, &nw, &err) == PW_ADAMW_APPLIED, "%s", err.msg);
        for (int k = 0; k < N; k++) {
            pass(share[k], a, s, ls);
            CHECK(!memcmp(lw, ls, sizeof lw), "%s step %d share %d: the forward differs", name, s,
                  k);
            double ns = 0.0;
            CHECK(pw_model_adamw_step(share[k], &opt, s, &ns, &err) == PW_ADAMW_APPLIED, "%s",
                  err.msg);
            CHECK(ns == nw, "%s step %d share %d: norm %.9g, the whole's %.9g", name, s, k, ns, nw);
            /* its blocks, as an all-gather reads them */
            const uint16_t *m16 = pw_model_mirror(share[k]).data;
            const float *kf = pw_model_kept(share[k]).data;
            size_t k0 = cut[k] - pw_model_master_before(share[k], cut[k]);
            size_t k1 = cut[k + 1] - pw_model_master_before(share[k], cut[k + 1]);
            memcpy(g16 + cut[k], m16 + cut[k], (cut[k + 1] - cut[k]) * sizeof *g16);
            memcpy(gk + k0, kf + k0, (k1 - k0) * sizeof *gk);
            size_t g0 = pw_model_master_before(share[k], cut[k]);
            CHECK(pw_model_master_get(share[k], hm + g0, &err) == 0, "%s", err.msg);
        }
        for (int k = 0; k < N; k++) { /* the all-gather */
            memcpy(pw_model_mirror(share[k]).data, g16, P * sizeof *g16);
            memcpy(pw_model_kept(share[k]).data, gk, K * sizeof *gk);
        }
        /* the whole's float32 and bfloat16, against the shares' */
        const float *pw = pw_model_params(whole).data;
        pass(whole, a, s, lw); /* makes the whole's bfloat16 copy */
        const uint16_t *w16 = pw_model_mirror(whole).data;
        size_t bad16 = P, badf = P;
        for (size_t x = 0, kx = 0; x < P; x++) {
            if (bad16 == P && w16[x] != g16[x]) bad16 = x;
            const float *got = kept_float(whole, x) ? &gk[kx++]
                                                    : &hm[pw_model_master_before(whole, x)];
            if (badf == P && memcmp(got, &pw[x], sizeof *got)) badf = x;
        }
        CHECK(bad16 == P && badf == P, "%s step %d: the shares' bfloat16 differ from float %zu, "
              "their float32 from float %zu (of %zu)", name, s, bad16, badf, P);
    }
    printf("  %d steps in shares of %zu, %zu, %zu and %zu floats (%zu split, %zu kept whole): "
           "forwards, norms, weights the whole's bit for bit\n", NSTEPS, cut[1] - cut[0],
           cut[2] - cut[1], cut[3] - cut[2], cut[4] - cut[3], M, K);

    /* a generator on a share samples what one on the whole samples */
    int prompt[GB * GP];
    for (int i = 0; i < GB * GP; i++) prompt[i] = (i * 5 + 1) % a->vocab_size;
    PwGenConfig gc = {.max_new_tokens = GR, .stop_token = -1, .pad_token = 0,
                      .sample = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f}, .seed = 3};
    int toks[2][GB * GR];
    PwModel *gm[2] = {whole, share[1]};
    for (int i = 0; i < 2; i++) {
        PwGen *gen = pw_gen_create(gm[i], GB, GP + GR, &err);
        CHECK(gen && pw_generate(gen, prompt, NULL, GB, GP, NULL, &gc, &err) == 0, "generate: %s",
              err.msg);
        if (gen) memcpy(toks[i], gen->tokens, sizeof toks[i]);
        pw_gen_free(gen);
    }
    CHECK(!memcmp(toks[0], toks[1], sizeof toks[0]), "%s: a share generates other tokens", name);

    /* the shares' float32 gathered save as the whole's file */
    char dw[1024], ds[1024], fw[1100], fs[1100];
    snprintf(dw, sizeof dw, "%s/master_whole_%s", dir, name);
    snprintf(ds, sizeof ds, "%s/master_parts_%s", dir, name);
    snprintf(fw, sizeof fw, "%s/model.safetensors", dw);
    snprintf(fs, sizeof fs, "%s/model.safetensors", ds);
    mkdir(dw, 0755);
    mkdir(ds, 0755);
    CHECK(pw_model_save(whole, dw, &err) == 0, "%s", err.msg);
    float *flat = calloc(P, sizeof *flat); /* the shares' float32 where the whole keeps it */
    for (size_t x = 0; x < P; x++)
        if (!kept_float(whole, x)) flat[x] = hm[pw_model_master_before(whole, x)];
    CHECK(pw_model_save_master(share[2], ds, flat, NULL, &err) == 0, "%s", err.msg);
    CHECK(same_file(fw, fs), "%s: the shares' weights file is not the whole's", name);
    /* and it loads as a model of those weights, whose forward is the whole's */
    PwModel *back = pw_model_load(ds, &o, &err);
    CHECK(back != NULL, "load: %s", err.msg);
    if (back) {
        pass(back, a, 9, ls);
        pass(whole, a, 9, lw);
        CHECK(!memcmp(lw, ls, sizeof lw), "%s: the saved shares load to another forward", name);
        pw_model_free(back);
    }

    /* refusals */
    CHECK(pw_model_save(share[0], ds, &err) == -1 && strstr(err.msg, "pw_model_save_master"),
          "a share saved alone: %s", err.msg);
    CHECK(pw_model_save_master(whole, ds, flat, NULL, &err) == -1 && strstr(err.msg, "not split"),
          "the whole saved as shares: %s", err.msg);
    free(flat);
    PwModel *once = tiny_model(a, &o, 7);
    CHECK(pw_model_optimizer_shard(once, 0, 640, &err) == 0, "%s", err.msg);
    CHECK(pw_model_optimizer_shard(once, 0, P, &err) == -1 && strstr(err.msg, "set once"),
          "a split share set again: %s", err.msg);
    pw_model_free(once);
    /* fp32: nothing to split */
    PwModelOpts o32 = o;
    o32.precision = PW_PRECISION_FP32;
    PwModel *f32 = tiny_model(a, &o32, 7);
    CHECK(pw_model_optimizer_shard(f32, 0, 640, &err) == 0 && !pw_model_master_split(f32),
          "an fp32 model split its weights");
    pw_model_free(f32);

    /* a bad weight in a split tensor is found by the share that holds it, and named */
    int qi = -1;
    size_t qoff = 0, qn = 0;
    for (int i = 0; i < pw_model_num_tensors(whole) && qi < 0; i++) {
        pw_model_tensor_info(whole, i, &qoff, &qn);
        if (qn > 128 && !kept_float(whole, qoff)) qi = i;
    }
    CHECK(qi >= 0, "no split tensor");
    const char *qname = pw_model_tensor_info(whole, qi, NULL, NULL);
    PwModel *div = tiny_model(a, &o, 7);
    CHECK(pw_model_optimizer_shard(div, qoff + 64, qoff + 128, &err) == 0, "%s", err.msg);
    pass(div, a, 1, ls);
    PwAdamWConfig huge = opt;
    huge.lr = 1e30f;
    huge.grad_clip = 0.0f;
    CHECK(pw_model_adamw_step(div, &huge, 1, NULL, &err) == PW_ADAMW_APPLIED, "%s", err.msg);
    char want[200];
    snprintf(want, sizeof want, "\"%s\" element 64 is", qname);
    CHECK(pw_model_check_params(div, &err) == -1 && strstr(err.msg, want),
          "a bad weight in a share: '%s' (wanted %s)", err.msg, want);
    pw_model_free(div);

    free(g16);
    free(gk);
    free(hm);
    for (int k = 0; k < N; k++) pw_model_free(share[k]);
    pw_model_free(whole);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    const PwArch gpt2 = TINY_GPT2(61), llama = TINY_LLAMA(64);
    family("gpt2", &gpt2, dir);
    family("llama", &llama, dir);
    return pw_test_done("test_master_shard");
}
