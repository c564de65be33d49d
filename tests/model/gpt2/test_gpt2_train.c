/* test_gpt2_train.c: the optimiser's parameter groups and clipping, and that SFT, Bradley-Terry
 * and value-regression losses all train through the one pw_gpt2_backward. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_model.h"
#include "pw_test.h"

enum { B = 4, T = 8 };
static const PwGPT2Config cfg = {.n_layer = 2, .n_head = 2, .n_embd = 32, .vocab_size = 32,
                                 .n_positions = 16};
static const int ALL = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE;

static PwGPT2 *make(void)
{
    PwErr err;
    PwGPT2 *m = pw_gpt2_create(&cfg, ALL, B, T, &err);
    if (!m) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    pw_gpt2_init_random(m, 11);
    return m;
}

/* ---- weight decay only on 2D weights; clipping to the global norm */
static void test_groups_and_clip(void)
{
    PwGPT2 *m = make();
    float **p = (float **)&m->params;
    for (int i = 0; i < PW_GPT2_NUM_PARAM_TENSORS; i++)
        for (size_t k = 0; k < m->param_sizes[i]; k++) p[i][k] = 0.5f; /* every tensor nonzero */
    pw_gpt2_zero_grad(m);
    /* zero gradients: Adam's step is 0, so only decoupled decay moves a parameter */
    PwAdamWConfig opt = {.lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.5f, .grad_clip = 1.0f};
    pw_gpt2_adamw_step(m, &opt, 1);
    static const int decays[PW_GPT2_NUM_PARAM_TENSORS] = {1, 1, 0, 0, 1, 0, 1, 0, 0, 0,
                                                          1, 0, 1, 0, 0, 0, 1, 0, 1, 0};
    for (int i = 0; i < PW_GPT2_NUM_PARAM_TENSORS; i++) {
        float want = decays[i] ? 0.5f * (1.0f - 0.1f * 0.5f) : 0.5f;
        float got = p[i][m->param_sizes[i] - 1];
        CHECK(fabsf(got - want) < 1e-6f, "%s: %g after a decay-only step, want %g",
              pw_gpt2_param_name(i), got, want);
    }
    /* clipping: all-ones gradients have norm sqrt(n); the step reports it and clips to 1 */
    for (size_t k = 0; k < m->num_params; k++) m->grads_memory[k] = 1.0f;
    double norm = pw_gpt2_adamw_step(m, &opt, 2);
    CHECK(fabs(norm - sqrt((double)m->num_params)) < 1e-3 * norm, "norm %g", norm);
    CHECK(fabs(pw_gpt2_grad_norm(m) - 1.0) < 1e-4, "clipped norm %g", pw_gpt2_grad_norm(m));
    pw_gpt2_free(m);
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

static void forward(PwGPT2 *m, const int *targets)
{
    PwErr err;
    if (pw_gpt2_forward(m, inp, mask, targets, B, T, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
}

/* ---- SFT: the loss on response tokens only (the last 3 targets of each row) */
static void test_sft(void)
{
    PwGPT2 *m = make();
    int targets[B * T];
    float w[B * T];
    pw_gpt2_next_token_targets(targets, inp, mask, B, T);
    for (int i = 0; i < B * T; i++)
        if (i % T < T - 4) targets[i] = -1; /* prompt: no loss */
    pw_gpt2_mean_weights(w, targets, B * T);
    PwAdamWConfig opt = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.0f, .grad_clip = 1.0f};
    double first = 0, last = 0;
    for (int step = 1; step <= 40; step++) {
        forward(m, targets);
        pw_gpt2_zero_grad(m);
        last = pw_gpt2_lm_loss_backward(m, w);
        if (step == 1) first = last;
        pw_gpt2_adamw_step(m, &opt, step);
    }
    printf("SFT: loss %.4f -> %.4f in 40 steps\n", first, last);
    CHECK(last < 0.25 * first, "SFT loss %g -> %g", first, last);
    pw_gpt2_free(m);
}

/* ---- reward model: Bradley-Terry on (chosen, rejected) = rows (0, 1) and (2, 3) */
static void test_bradley_terry(void)
{
    PwGPT2 *m = make();
    PwAdamWConfig opt = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.0f, .grad_clip = 1.0f};
    double first = 0, loss = 0, margin = 0;
    for (int step = 1; step <= 40; step++) {
        forward(m, NULL);
        float dscore[B] = {0};
        loss = 0;
        margin = INFINITY;
        for (int pair = 0; pair < 2; pair++) {
            double d = m->acts.score[2 * pair] - m->acts.score[2 * pair + 1];
            double sig = 1.0 / (1.0 + exp(-d));
            loss += -log(sig) / 2;
            dscore[2 * pair] = (float)(-(1.0 - sig) / 2);
            dscore[2 * pair + 1] = (float)((1.0 - sig) / 2);
            margin = fmin(margin, d);
        }
        if (step == 1) first = loss;
        pw_gpt2_zero_grad(m);
        pw_gpt2_backward(m, NULL, NULL, NULL, dscore);
        pw_gpt2_adamw_step(m, &opt, step);
    }
    printf("Bradley-Terry: loss %.4f -> %.4f, smallest margin %.3f\n", first, loss, margin);
    CHECK(loss < 0.25 * first && margin > 0, "BT loss %g -> %g, margin %g", first, loss, margin);
    pw_gpt2_free(m);
}

/* ---- critic: squared error of the value head against fixed returns on real tokens */
static void test_value(void)
{
    PwGPT2 *m = make();
    PwAdamWConfig opt = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.0f, .grad_clip = 1.0f};
    int count = 0;
    for (int i = 0; i < B * T; i++) count += mask[i];
    double first = 0, loss = 0;
    for (int step = 1; step <= 40; step++) {
        forward(m, NULL);
        float dvalue[B * T];
        loss = 0;
        for (int i = 0; i < B * T; i++) {
            double ret = 0.1 * (i % T) - 0.3 * (i / T); /* returns that depend on b and t */
            double e = mask[i] ? m->acts.value[i] - ret : 0.0;
            loss += 0.5 * e * e / count;
            dvalue[i] = (float)(e / count);
        }
        if (step == 1) first = loss;
        pw_gpt2_zero_grad(m);
        pw_gpt2_backward(m, NULL, NULL, dvalue, NULL);
        pw_gpt2_adamw_step(m, &opt, step);
    }
    printf("value regression: loss %.4f -> %.4f\n", first, loss);
    CHECK(loss < 0.25 * first, "value loss %g -> %g", first, loss);
    pw_gpt2_free(m);
}

int main(void)
{
    test_groups_and_clip();
    test_sft();
    test_bradley_terry();
    test_value();
    return pw_test_done("test_gpt2_train");
}
