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
    PwModelOpts o = {.heads = heads, .maxB = 1, .maxT = 8};
    PwModel *a = pw_model_load(argv[1], &o, &err);
    if (!a) {
        fprintf(stderr, "weights_diff: %s\n", err.msg);
        return 2;
    }
    PwModel *b = pw_model_load(argv[2], &o, &err);
    if (!b) {
        fprintf(stderr, "weights_diff: %s\n", err.msg);
        return 2;
    }
    size_t n = pw_model_num_params(a);
    if (n != pw_model_num_params(b)) {
        fprintf(stderr, "weights_diff: %zu vs %zu parameters\n", n, pw_model_num_params(b));
        return 1;
    }
    float *pa = pw_model_params(a).data, *pb = pw_model_params(b).data; /* CPU models */
    for (int k = 0; k < pw_model_num_tensors(a); k++) {
        size_t off, cnt;
        const char *name = pw_model_tensor_info(a, k, &off, &cnt);
        for (int j = 5; j < argc; j++)
            if (!strcmp(argv[j], name))
                for (size_t i = off; i < off + cnt; i++) pa[i] = pb[i];
    }
    double maxd = 0.0, maxa = 0.0;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)pa[i] - (double)pb[i]);
        if (!(d <= maxd)) { /* NaN sticks */
            maxd = d;
            worst = i;
        }
        if (fabs(pa[i]) > maxa) maxa = fabs(pa[i]);
    }
    const char *where = "?";
    for (int k = 0; k < pw_model_num_tensors(a); k++) {
        size_t off, cnt;
        const char *name = pw_model_tensor_info(a, k, &off, &cnt);
        if (worst >= off && worst < off + cnt) where = name;
    }
    printf("weights_diff: %zu parameters, max |a - b| = %.3g at %s (max |a| = %.3g), "
           "tolerance %.3g\n", n, maxd, where, maxa, tol);
    pw_model_free(a);
    pw_model_free(b);
    return maxd <= tol ? 0 : 1;
}
