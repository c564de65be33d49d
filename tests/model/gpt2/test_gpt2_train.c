/* test_gpt2_train.c: the optimiser's parameter groups and clipping, and that SFT, Bradley-Terry
 * and value-regression losses all train through the one backward of the model interface. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_model.h"
#include "pw_test.h"

enum { B = 4, T = 8 };
static const PwArch cfg = {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 2, .n_embd = 32,
                           .vocab_size = 32, .n_positions = 16};
static const int ALL = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE;

static PwModel *make(void)
{
    PwErr err;
    PwModelOpts o = {.heads = ALL, .maxB = B, .maxT = T};
    PwModel *m = pw_model_create(&cfg, &o, &err);
    if (!m) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    pw_model_init_random(m, 11);
    return m;
}

static double step(PwModel *m, const PwAdamWConfig *opt, int t)
{
    PwErr err;
    double norm = -1.0;
    int rc = pw_model_adamw_step(m, opt, t, &norm, &err);
    CHECK(rc == PW_ADAMW_APPLIED, "step %d: %s", t, rc < 0 ? err.msg : "skipped");
    return norm;
}

static void zero_grad(PwModel *m)
{
    PwErr err;
    CHECK(pw_model_zero_grad(m, &err) == 0, "%s", err.msg);
}

/* ---- weight decay only on 2D weights; clipping to the global norm */
static void test_groups_and_clip(void)
{
    PwModel *m = make();
    float *p = pw_model_params(m).data; /* host memory: a CPU model */
    const size_t np = pw_model_num_params(m);
    for (size_t k = 0; k < np; k++) p[k] = 0.5f; /* every tensor nonzero */
    zero_grad(m);
    /* zero gradients: Adam's step is 0, so only decoupled decay moves a parameter */
    PwAdamWConfig opt = {.lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.5f, .grad_clip = 1.0f};
    step(m, &opt, 1);
    /* GPT-2's 2D tensors: embeddings and every Linear weight, the heads' included */
    static const char *const decayed[] = {"wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw",
                                          "scorew", "valuew"};
    for (int i = 0; i < pw_model_num_tensors(m); i++) {
        size_t off, n;
        const char *name = pw_model_tensor_info(m, i, &off, &n);
        int decays = 0;
        for (size_t j = 0; j < PW_ARRAY_LEN(decayed); j++) decays |= !strcmp(name, decayed[j]);
        float want = decays ? 0.5f * (1.0f - 0.1f * 0.5f) : 0.5f;
        float got = p[off + n - 1];
        CHECK(fabsf(got - want) < 1e-6f, "%s: %g after a decay-only step, want %g", name, got,
              want);
    }
    /* clipping: all-ones gradients have norm sqrt(n); the step reports it, and updates as a
     * twin given gradients of norm 1 (each 1 / sqrt(n)) without clipping does, bit for bit; the
     * gradients themselves are left as they were */
    PwModel *twin = make();
    float *p2 = pw_model_params(twin).data;
    for (size_t k = 0; k < np; k++) p2[k] = 0.5f;
    zero_grad(twin);
    step(twin, &opt, 1);
    float *g = pw_model_grads(m).data, *g2 = pw_model_grads(twin).data;
    const float s = (float)(opt.grad_clip / sqrt((double)np));
    for (size_t k = 0; k < np; k++) g[k] = 1.0f, g2[k] = s;
    double norm = step(m, &opt, 2);
    CHECK(fabs(norm - sqrt((double)np)) < 1e-3 * norm, "norm %g", norm);
    PwAdamWConfig plain = opt;
    plain.grad_clip = 0.0f;
    step(twin, &plain, 2);
    CHECK(!memcmp(pw_model_params(m).data, pw_model_params(twin).data, np * sizeof(float)),
          "the clipped step differs from the step on gradients of norm 1");
    CHECK(fabs(pw_model_grad_norm(m) - norm) < 1e-9 * norm, "the gradients changed: norm %g",
          pw_model_grad_norm(m));
    pw_model_free(twin);
    pw_model_free(m);
}

static const int inp[B * T] = {
    0, 0, 5, 6, 7, 8, 9, 10,
    0, 3, 4, 5, 6, 7, 8, 9,
    1, 2, 3, 4, 5, 6, 7, 8,
    0, 0, 0, 11, 12, 13, 14, 15,
};
static const int mask[B * T] = {
    0, 0, 1, 1, 1, 1, 1, 1,
    0, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 1, 1, 1, 1, 1,
};

static void forward(PwModel *m, const int *targets, PwOutputs *out)
{
    PwErr err;
    PwModelInput in = {inp, mask, targets, B, T, 1.0f};
    out->col0 = 0;
    out->width = T;
    if (pw_model_forward(m, &in, out, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
}

static void backward(PwModel *m, const PwOutputGrads *g)
{
    PwErr err;
    CHECK(pw_model_backward(m, g, &err) == 0, "%s", err.msg);
}

/* ---- SFT: the loss on response tokens only (the last 3 targets of each row) */
static void test_sft(void)
{
    PwModel *m = make();
    int targets[B * T];
    float w[B * T], logp[B * T], dlogp[B * T];
    pw_lm_next_token_targets(targets, inp, mask, B, T);
    for (int i = 0; i < B * T; i++)
        if (i % T < T - 4) targets[i] = -1; /* prompt: no loss */
    pw_lm_mean_weights(w, targets, B * T);
    for (int i = 0; i < B * T; i++) dlogp[i] = -w[i];
    PwAdamWConfig opt = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.0f, .grad_clip = 1.0f};
    double first = 0, last = 0;
    for (int s = 1; s <= 40; s++) {
        PwOutputs out = {.logp = logp};
        forward(m, targets, &out);
        last = pw_lm_loss(logp, w, targets, B * T);
        zero_grad(m);
        backward(m, &(PwOutputGrads){.dlogp = dlogp});
        if (s == 1) first = last;
        step(m, &opt, s);
    }
    printf("SFT: loss %.4f -> %.4f in 40 steps\n", first, last);
    CHECK(last < 0.25 * first, "SFT loss %g -> %g", first, last);
    pw_model_free(m);
}

/* ---- reward model: Bradley-Terry on (chosen, rejected) = rows (0, 1) and (2, 3) */
static void test_bradley_terry(void)
{
    PwModel *m = make();
    PwAdamWConfig opt = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.0f, .grad_clip = 1.0f};
    double first = 0, loss = 0, margin = 0;
    for (int s = 1; s <= 40; s++) {
        float score[B];
        PwOutputs out = {.score = score};
        forward(m, NULL, &out);
        float dscore[B] = {0};
        loss = 0;
        margin = INFINITY;
        for (int pair = 0; pair < 2; pair++) {
            double d = score[2 * pair] - score[2 * pair + 1];
            double sig = 1.0 / (1.0 + exp(-d));
            loss += -log(sig) / 2;
            dscore[2 * pair] = (float)(-(1.0 - sig) / 2);
            dscore[2 * pair + 1] = (float)((1.0 - sig) / 2);
            margin = fmin(margin, d);
        }
        if (s == 1) first = loss;
        zero_grad(m);
        backward(m, &(PwOutputGrads){.dscore = dscore});
        step(m, &opt, s);
    }
    printf("Bradley-Terry: loss %.4f -> %.4f, smallest margin %.3f\n", first, loss, margin);
    CHECK(loss < 0.25 * first && margin > 0, "BT loss %g -> %g, margin %g", first, loss, margin);
    pw_model_free(m);
}

/* ---- critic: squared error of the value head against fixed returns on real tokens */
static void test_value(void)
{
    PwModel *m = make();
    PwAdamWConfig opt = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.0f, .grad_clip = 1.0f};
    int count = 0;
    for (int i = 0; i < B * T; i++) count += mask[i];
    double first = 0, loss = 0;
    for (int s = 1; s <= 40; s++) {
        float value[B * T];
        PwOutputs out = {.value = value};
        forward(m, NULL, &out);
        float dvalue[B * T];
        loss = 0;
        for (int i = 0; i < B * T; i++) {
            double ret = 0.1 * (i % T) - 0.3 * (i / T); /* returns that depend on b and t */
            double e = mask[i] ? value[i] - ret : 0.0;
            loss += 0.5 * e * e / count;
            dvalue[i] = (float)(e / count);
        }
        if (s == 1) first = loss;
        zero_grad(m);
        backward(m, &(PwOutputGrads){.dvalue = dvalue});
        step(m, &opt, s);
    }
    printf("value regression: loss %.4f -> %.4f\n", first, loss);
    CHECK(loss < 0.25 * first, "value loss %g -> %g", first, loss);
    pw_model_free(m);
}

int main(void)
{
    test_groups_and_clip();
    test_sft();
    test_bradley_terry();
    test_value();
    return pw_test_done("test_gpt2_train");
}
