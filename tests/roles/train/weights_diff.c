/* weights_diff.c: compares two checkpoints written by ppo_world sft/rm parameter by parameter;
 * exits 0 when the largest absolute difference is at most the tolerance, 1 otherwise. */
/* Tensors named after the tolerance are left out: one whose gradient is zero in exact arithmetic
 * (see test_dp.sh) gets rounding noise as its gradient, and AdamW's g / (|g| + eps) turns noise
 * that depends on the summation order into steps of size lr. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_model.h"

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: weights_diff DIR_A DIR_B HEADS(lm|score) TOL [SKIP_TENSOR...]\n");
        return 2;
    }
    int heads = argv[3][0] == 's' ? PW_HEAD_SCORE : PW_HEAD_LM;
    double tol = atof(argv[4]);
    PwErr err;
    PwGPT2 *a = pw_gpt2_load(argv[1], heads, 1, 8, 0, &err);
    if (!a) {
        fprintf(stderr, "weights_diff: %s\n", err.msg);
        return 2;
    }
    PwGPT2 *b = pw_gpt2_load(argv[2], heads, 1, 8, 0, &err);
    if (!b) {
        fprintf(stderr, "weights_diff: %s\n", err.msg);
        return 2;
    }
    if (a->num_params != b->num_params) {
        fprintf(stderr, "weights_diff: %zu vs %zu parameters\n", a->num_params, b->num_params);
        return 1;
    }
    double maxd = 0.0, maxa = 0.0;
    size_t at = 0, worst = 0;
    for (int k = 0; k < PW_GPT2_NUM_PARAM_TENSORS; at += a->param_sizes[k++])
        for (int j = 5; j < argc; j++)
            if (!strcmp(argv[j], pw_gpt2_param_name(k)))
                for (size_t i = at; i < at + a->param_sizes[k]; i++)
                    a->params_memory[i] = b->params_memory[i];
    at = 0;
    for (size_t i = 0; i < a->num_params; i++) {
        double d = fabs((double)a->params_memory[i] - (double)b->params_memory[i]);
        if (!(d <= maxd)) { /* NaN sticks */
            maxd = d;
            worst = i;
        }
        if (fabs(a->params_memory[i]) > maxa) maxa = fabs(a->params_memory[i]);
    }
    const char *where = "?";
    for (int k = 0; k < PW_GPT2_NUM_PARAM_TENSORS; at += a->param_sizes[k++])
        if (worst >= at && worst < at + a->param_sizes[k]) {
            where = pw_gpt2_param_name(k);
            break;
        }
    printf("weights_diff: %zu parameters, max |a - b| = %.3g at %s (max |a| = %.3g), "
           "tolerance %.3g\n", a->num_params, maxd, where, maxa, tol);
    pw_gpt2_free(a);
    pw_gpt2_free(b);
    return maxd <= tol ? 0 : 1;
}
