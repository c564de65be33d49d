/* test_gpt2_gradcheck.c: finite-difference checks of pw_gpt2_backward through the score, value
 * and LM heads (logp and entropy) on a tiny left- and right-padded batch, plus padding checks. */
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
enum { OBJ_SCORE, OBJ_VALUE, OBJ_LM };
static const char *const obj_names[] = {"score head", "value head", "LM head (logp + entropy)"};
static float cs[B], cv[B * T], cw[B * T], ce[B * T];
static int inp[B * T], targets[B * T];

static double objective(PwGPT2 *m, int obj)
{
    PwErr err;
    if (pw_gpt2_forward(m, inp, mask, targets, B, T, &err)) {
        fprintf(stderr, "forward: %s\n", err.msg);
        exit(1);
    }
    double J = 0.0;
    if (obj == OBJ_SCORE)
        for (int b = 0; b < B; b++) J += (double)cs[b] * m->acts.score[b];
    if (obj == OBJ_VALUE)
        for (int i = 0; i < B * T; i++) J += (double)cv[i] * m->acts.value[i];
    if (obj == OBJ_LM)
        for (int i = 0; i < B * T; i++)
            J += (double)cw[i] * m->acts.logp[i] + (double)ce[i] * m->acts.entropy[i];
    return J;
}

static void analytic(PwGPT2 *m, int obj)
{
    objective(m, obj);
    pw_gpt2_zero_grad(m);
    pw_gpt2_backward(m, obj == OBJ_LM ? cw : NULL, obj == OBJ_LM ? ce : NULL,
                     obj == OBJ_VALUE ? cv : NULL, obj == OBJ_SCORE ? cs : NULL);
}

int main(void)
{
    unsigned long long rng = 42;
    PwGPT2Config cfg = {.n_layer = 2, .n_head = 2, .n_embd = 16, .vocab_size = 24,
                        .n_positions = 16};
    PwErr err;
    PwGPT2 *m = pw_gpt2_create(&cfg, PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE, B, T, &err);
    if (!m) {
        fprintf(stderr, "create: %s\n", err.msg);
        return 1;
    }
    pw_gpt2_init_random(m, 7);
    /* GPT-2's init leaves LayerNorm at (1, 0), biases at 0 and activations small; jitter every
     * parameter so that each path carries gradients of a size finite differences can see */
    for (size_t i = 0; i < m->num_params; i++)
        m->params_memory[i] += (float)(0.1 * pw_test_normal(&rng));

    for (int i = 0; i < B * T; i++) {
        inp[i] = (int)(pw_test_uniform(&rng) * cfg.vocab_size);
        cv[i] = mask[i] ? (float)pw_test_normal(&rng) : 0.0f;
        ce[i] = mask[i] ? (float)(0.3 * pw_test_normal(&rng)) : 0.0f;
    }
    pw_gpt2_next_token_targets(targets, inp, mask, B, T);
    for (int i = 0; i < B * T; i++) cw[i] = targets[i] >= 0 ? (float)pw_test_normal(&rng) : 0.0f;
    for (int b = 0; b < B; b++) cs[b] = (float)pw_test_normal(&rng);

    /* ---- padding: the score sits at the last real token, and pad tokens change nothing real */
    objective(m, OBJ_SCORE);
    CHECK(m->last[0] == T - 1 && m->last[1] == T - 1 && m->last[2] == T - 2,
          "last real token: %d %d %d", m->last[0], m->last[1], m->last[2]);
    float score0[B], value0[B * T], logp0[B * T];
    memcpy(score0, m->acts.score, sizeof score0);
    memcpy(value0, m->acts.value, sizeof value0);
    memcpy(logp0, m->acts.logp, sizeof logp0);
    int saved[B * T];
    memcpy(saved, inp, sizeof saved);
    for (int i = 0; i < B * T; i++)
        if (!mask[i]) inp[i] = (inp[i] + 5) % cfg.vocab_size;
    objective(m, OBJ_SCORE);
    double dmax = 0.0;
    for (int b = 0; b < B; b++) dmax = fmax(dmax, fabs(m->acts.score[b] - score0[b]));
    for (int i = 0; i < B * T; i++)
        if (mask[i]) {
            dmax = fmax(dmax, fabs(m->acts.value[i] - value0[i]));
            dmax = fmax(dmax, fabs(m->acts.logp[i] - logp0[i]));
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
        float s_padded = m->acts.score[1];
        if (pw_gpt2_forward(m, inp1, mask1, NULL, 1, 5, &err)) return 1;
        double d = fabs(m->acts.score[0] - s_padded);
        CHECK(d < 1e-5 * fmax(1.0, fabs(s_padded)), "padded %g vs unpadded %g", s_padded,
              m->acts.score[0]);
        printf("left padding invariance of the score: |diff| = %.3g\n", d);
    }

    /* ---- finite differences. Float32 forward, differences taken in double: central, with
     * eps = 1e-2 (relative to parameters of size ~0.1-1). Truncation error ~eps^2 |J'''| ~ 1e-4,
     * rounding ~1e-7 |J| / eps ~ 1e-5. Per tensor: max |fd - analytic| over the sampled entries,
     * divided by the tensor's largest |analytic gradient|, must be under 1e-2. */
    const double eps = 1e-2, tol = 1e-2;
    const int samples = 6;
    for (int obj = 0; obj < 3; obj++) {
        analytic(m, obj);
        float *grad = malloc(m->num_params * sizeof(float));
        memcpy(grad, m->grads_memory, m->num_params * sizeof(float));
        double worst = 0.0;
        size_t off = 0;
        for (int ti = 0; ti < PW_GPT2_NUM_PARAM_TENSORS; ti++) {
            size_t n = m->param_sizes[ti];
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
                float *p = m->params_memory + off + k;
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
            int unreached = (obj != OBJ_SCORE && (ti == 16 || ti == 17)) ||
                            (obj != OBJ_VALUE && (ti == 18 || ti == 19));
            if (unreached) {
                CHECK(gmax == 0.0 && maxdiff == 0.0, "%s: %s should be untouched (%g, %g)",
                      obj_names[obj], pw_gpt2_param_name(ti), gmax, maxdiff);
            } else {
                double rel = maxdiff / fmax(gmax, 1e-6);
                worst = fmax(worst, rel);
                CHECK(gmax > 0.0 && rel < tol, "%s: %s rel err %.3g (max grad %.3g)",
                      obj_names[obj], pw_gpt2_param_name(ti), rel, gmax);
            }
            off += n;
        }
        printf("finite differences, %s: worst per-tensor rel err %.3g (tol %g)\n",
               obj_names[obj], worst, tol);
        free(grad);
    }

    pw_gpt2_free(m);
    return pw_test_done("test_gpt2_gradcheck");
}
