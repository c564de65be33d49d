/* test_gpt2_gradcheck.c: finite-difference checks of the GPT-2 backward, through the model
 * interface, of the score, value and LM heads on a left- and right-padded batch; padding checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_model.h"
#include "pw_test.h"

enum { B = 3, T = 8 };

/* Row 0 is all real, row 1 left-padded, row 2 left-padded with a trailing pad as well, so the
 * score is read at t = T-2 there, not at the last column. */
static const int mask[B * T] = {
    1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 1, 1, 1, 1, 1,
    0, 0, 1, 1, 1, 1, 1, 0,
};

/* The three objectives, each a fixed linear function of one head's outputs:
 * J_score = sum_b cs[b] score[b], J_value = sum cv[b,t] value[b,t], J_lm = sum w logp + e H. */
enum { OBJ_SCORE, OBJ_VALUE, OBJ_LM, OBJ_LM_HOT, OBJ_COUNT };
static const char *const obj_names[] = {"score head", "value head", "LM head (logp + entropy)",
                                        "LM head at temperature 0.6"};
static float cs[B], cv[B * T], cw[B * T], ce[B * T];
static int inp[B * T], targets[B * T];
/* the outputs of the last forward, every position (values at untargeted positions too: the
 * targets are not handed to the forward with them, see forward()) */
static float score[B], value[B * T], logp[B * T], entropy[B * T];
static float temperature = 1.0f; /* of the LM head's outputs */

static void forward(PwModel *m, const int *tok, const int *msk, int b, int t)
{
    PwErr err;
    /* two passes, so that the values come back at every position: with targets the interface
     * zeroes values where the target is negative */
    PwModelInput plain = {tok, msk, NULL, b, t, 1.0f};
    PwOutputs o1 = {.col0 = 0, .width = t, .value = value, .score = score};
    PwModelInput lm = {tok, msk, b == B && t == T ? targets : NULL, b, t, temperature};
    PwOutputs o2 = {.col0 = 0, .width = t, .logp = logp, .entropy = entropy};
    if (pw_model_forward(m, &plain, &o1, &err) || pw_model_forward(m, &lm, &o2, &err)) {
        fprintf(stderr, "forward: %s\n", err.msg);
        exit(1);
    }
}

static double objective(PwModel *m, int obj)
{
    temperature = obj == OBJ_LM_HOT ? 0.6f : 1.0f;
    forward(m, inp, mask, B, T);
    double J = 0.0;
    if (obj == OBJ_SCORE)
        for (int b = 0; b < B; b++) J += (double)cs[b] * score[b];
    if (obj == OBJ_VALUE)
        for (int i = 0; i < B * T; i++) J += (double)cv[i] * value[i];
    if (obj == OBJ_LM || obj == OBJ_LM_HOT)
        for (int i = 0; i < B * T; i++) J += (double)cw[i] * logp[i] + (double)ce[i] * entropy[i];
    return J;
}

static void analytic(PwModel *m, int obj)
{
    PwErr err;
    objective(m, obj);
    CHECK(pw_model_zero_grad(m, &err) == 0, "%s", err.msg);
    int lm = obj == OBJ_LM || obj == OBJ_LM_HOT;
    PwOutputGrads g = {.dlogp = lm ? cw : NULL, .dentropy = lm ? ce : NULL,
                       .dvalue = obj == OBJ_VALUE ? cv : NULL,
                       .dscore = obj == OBJ_SCORE ? cs : NULL};
    CHECK(pw_model_backward(m, &g, &err) == 0, "%s", err.msg);
}

int main(int argc, char **argv)
{
    unsigned long long rng = 42;
    PwArch cfg = {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 2, .n_embd = 16,
                  .vocab_size = 24, .n_positions = 16};
    /* "llama": the Llama family with grouped-query attention (4 query heads over 2 key/value
     * heads), q/k/v biases, an untied LM head and llama3 rope scaling */
    if (argc > 1 && !strcmp(argv[1], "llama"))
        cfg = (PwArch){.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 4, .n_embd = 16,
                       .vocab_size = 24, .n_positions = 16, .n_kv_head = 2, .n_inner = 20,
                       .norm_eps = 1e-5f, .rope_theta = 10000.0, .rope_llama3 = 1,
                       .rope_factor = 4.0, .rope_low_freq_factor = 1.0,
                       .rope_high_freq_factor = 4.0, .rope_original_max = 4, .tied = 0,
                       .qkv_bias = 1, .o_bias = 1};
    /* Qwen3: q/k norms, and heads of 6 whose 4 make an attention 24 wide over 16 channels */
    if (argc > 1 && !strcmp(argv[1], "qwen3"))
        cfg = (PwArch){.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 4, .n_embd = 16,
                       .vocab_size = 24, .n_positions = 16, .n_kv_head = 2, .n_inner = 20,
                       .norm_eps = 1e-5f, .rope_theta = 10000.0, .tied = 1, .qkv_bias = 1,
                       .o_bias = 1, .head_dim = 6, .qk_norm = 1, .hf_type = 3};
    PwErr err;
    PwModelOpts opts = {.heads = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE, .maxB = B, .maxT = T};
    PwModel *m = pw_model_create(&cfg, &opts, &err);
    if (!m) {
        fprintf(stderr, "create: %s\n", err.msg);
        return 1;
    }
    pw_model_init_random(m, 7);
    /* GPT-2's init leaves LayerNorm at (1, 0), biases at 0 and activations small; jitter every
     * parameter so that each path carries gradients of a size finite differences can see */
    float *params = pw_model_params(m).data; /* host memory: a CPU model */
    const size_t num_params = pw_model_num_params(m);
    for (size_t i = 0; i < num_params; i++) params[i] += (float)(0.1 * pw_test_normal(&rng));

    for (int i = 0; i < B * T; i++) {
        inp[i] = (int)(pw_test_uniform(&rng) * cfg.vocab_size);
        cv[i] = mask[i] ? (float)pw_test_normal(&rng) : 0.0f;
        ce[i] = mask[i] ? (float)(0.3 * pw_test_normal(&rng)) : 0.0f;
    }
    pw_lm_next_token_targets(targets, inp, mask, B, T);
    for (int i = 0; i < B * T; i++) cw[i] = targets[i] >= 0 ? (float)pw_test_normal(&rng) : 0.0f;
    for (int b = 0; b < B; b++) cs[b] = (float)pw_test_normal(&rng);

    /* ---- padding: the score sits at the last real token, and pad tokens change nothing real */
    objective(m, OBJ_SCORE);
    float score0[B], value0[B * T], logp0[B * T];
    memcpy(score0, score, sizeof score0);
    memcpy(value0, value, sizeof value0);
    memcpy(logp0, logp, sizeof logp0);
    /* row 2's score is its value-like readout at t = T-2, the last real token: the same row cut
     * before its trailing pad scores the same */
    {
        int cut[T - 1], cutm[T - 1];
        for (int t = 0; t < T - 1; t++) {
            cut[t] = inp[2 * T + t];
            cutm[t] = mask[2 * T + t];
        }
        forward(m, cut, cutm, 1, T - 1);
        CHECK(fabs(score[0] - score0[2]) < 1e-5 * fmax(1.0, fabs(score0[2])),
              "row 2: score %g, without its trailing pad %g", score0[2], score[0]);
    }
    int saved[B * T];
    memcpy(saved, inp, sizeof saved);
    for (int i = 0; i < B * T; i++)
        if (!mask[i]) inp[i] = (inp[i] + 5) % cfg.vocab_size;
    objective(m, OBJ_SCORE);
    double dmax = 0.0;
    for (int b = 0; b < B; b++) dmax = fmax(dmax, fabs(score[b] - score0[b]));
    for (int i = 0; i < B * T; i++)
        if (mask[i]) {
            dmax = fmax(dmax, fabs(value[i] - value0[i]));
            dmax = fmax(dmax, fabs(logp[i] - logp0[i]));
        }
    CHECK(dmax == 0.0, "changing pad tokens moved real outputs by %g", dmax);
    memcpy(inp, saved, sizeof saved);

    /* the same tokens without padding (row 1 shifted to the front of a shorter batch) give the
     * same score: positions come from the mask, not the column */
    {
        int inp1[5], mask1[5];
        for (int t = 0; t < 5; t++) {
            inp1[t] = inp[1 * T + 3 + t];
            mask1[t] = 1;
        }
        objective(m, OBJ_SCORE);
        float s_padded = score[1];
        forward(m, inp1, mask1, 1, 5);
        double d = fabs(score[0] - s_padded);
        CHECK(d < 1e-5 * fmax(1.0, fabs(s_padded)), "padded %g vs unpadded %g", s_padded,
              score[0]);
        printf("left padding invariance of the score: |diff| = %.3g\n", d);
    }

    /* ---- finite differences. Float32 forward, differences taken in double: central, with
     * eps = 1e-2 (relative to parameters of size ~0.1-1). Truncation error ~eps^2 |J'''| ~ 1e-4,
     * rounding ~1e-7 |J| / eps ~ 1e-5. Per tensor: max |fd - analytic| over the sampled entries,
     * divided by the tensor's largest |analytic gradient|, must be under 1e-2. */
    const double eps = 1e-2, tol = 1e-2;
    const int samples = 6;
    for (int obj = 0; obj < OBJ_COUNT; obj++) {
        analytic(m, obj);
        float *grad = malloc(num_params * sizeof(float));
        memcpy(grad, pw_model_grads(m).data, num_params * sizeof(float));
        double worst = 0.0;
        for (int ti = 0; ti < pw_model_num_tensors(m); ti++) {
            size_t off, n;
            const char *name = pw_model_tensor_info(m, ti, &off, &n);
            if (!n) continue;
            double gmax = 0.0;
            size_t imax = 0;
            for (size_t k = 0; k < n; k++)
                if (fabs(grad[off + k]) > gmax) {
                    gmax = fabs(grad[off + k]);
                    imax = k;
                }
            double maxdiff = 0.0;
            for (int s = 0; s < samples; s++) {
                size_t k = s == 0 ? imax : (size_t)(pw_test_uniform(&rng) * n);
                float *p = params + off + k;
                float keep = *p;
                *p = (float)(keep + eps);
                double jp = objective(m, obj);
                *p = (float)(keep - eps);
                double jm = objective(m, obj);
                *p = keep;
                double fd = (jp - jm) / (2.0 * eps);
                maxdiff = fmax(maxdiff, fabs(fd - grad[off + k]));
            }
            /* a tensor the objective does not reach (e.g. another head) must have gradient 0 */
            int unreached = (obj != OBJ_SCORE && !strncmp(name, "score", 5)) ||
                            (obj != OBJ_VALUE && !strncmp(name, "value", 5)) ||
                            (obj != OBJ_LM && obj != OBJ_LM_HOT && !strcmp(name, "lmw"));
            if (unreached) {
                CHECK(gmax == 0.0 && maxdiff == 0.0, "%s: %s should be untouched (%g, %g)",
                      obj_names[obj], name, gmax, maxdiff);
            } else {
                double rel = maxdiff / fmax(gmax, 1e-6);
                worst = fmax(worst, rel);
                CHECK(gmax > 0.0 && rel < tol, "%s: %s rel err %.3g (max grad %.3g)",
                      obj_names[obj], name, rel, gmax);
            }
        }
        printf("finite differences, %s: worst per-tensor rel err %.3g (tol %g)\n",
               obj_names[obj], worst, tol);
        free(grad);
    }

    pw_model_free(m);
    return pw_test_done("test_gpt2_gradcheck");
}
