/* test_ops_mlp.c: the MLP entries of the CPU kernel table (pw_ops.h), each a product with its
 * activation beside it. GPT-2's, with the GELU: matmul_gelu_forward_bf16 gives the bits of matmul_forward_bf16 then
 * gelu_forward_bf16, whether the sum is kept rounded (pre16), made in a float32 buffer given
 * (pre) or in one of the table's own; matmul_backward_gelu_bf16 gives the bits of
 * matmul_backward_bf16 then gelu_backward_bf16, with dout in float32 or in bfloat16 rows wider
 * than the product, a scratch given or not, dweight and dbias accumulated or NULL. And the
 * values against float64: GELU (tanh form) of the rounded operands' product plus bias, and its
 * derivative at the kept sum times dout . W, within bfloat16's roundings. The Llama family's
 * matmul_swiglu_forward_bf16 gives the bits of matmul_forward_bf16 into float32 then
 * swiglu_forward_bf16 of it, in a buffer given or the table's own, and against float64: silu of
 * the rounded gate sum times the rounded up sum. */
#include <math.h>

#include "kref.h"
#include "pw_bf16.h"
#include "pw_ops.h"

#define SAME(a, b, n, what) CHECK(memcmp((a), (b), (n) * sizeof *(a)) == 0, "%s differs", what)

enum { N = 5, C = 12, OC = 40, LD = 44 }; /* OC a multiple of 8, as GPT-2's 4C is */

static double gelu(double x)
{
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static double dgelu(double x)
{
    double u = 0.7978845608028654 * (x + 0.044715 * x * x * x), t = tanh(u);
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * 0.7978845608028654 *
                                 (1.0 + 3.0 * 0.044715 * x * x);
}

static double r16(float x) { return pw_bf16_round(x); }

/* |got - want| <= 2^-8 |want| + slack + 1e-6: the bfloat16 rounding of the result (half an ulp:
 * 2^-9 relative) and, in slack, what the rounding of GELU's input moves it by */
static void near(double got, double want, double slack, const char *what, int i)
{
    CHECK(fabs(got - want) <= 0x1p-8 * fabs(want) + slack + 1e-6, "%s[%d]: %.8g, want %.8g", what,
          i, got, want);
}

int main(void)
{
    const PwOps *o = pw_ops_cpu();
    unsigned long long rng = 43;
    const size_t NC = (size_t)N * C, NO = (size_t)N * OC, OCC = (size_t)OC * C;
    float *x = kref_randn(NC, 1.0, &rng), *w = kref_randn(OCC, 0.3, &rng);
    float *bias = kref_randn(OC, 0.5, &rng);
    uint16_t *x16 = kref_alloc(NC * 2), *w16 = kref_alloc(OCC * 2);
    o->to_bf16(o, x16, x, NC);
    o->to_bf16(o, w16, w, OCC);

    /* forward: the sum kept rounded, against the two entries */
    uint16_t *out_a = kref_alloc(NO * 2), *out_b = kref_alloc(NO * 2);
    uint16_t *pre_a = kref_alloc(NO * 2), *pre_b = kref_alloc(NO * 2);
    o->matmul_gelu_forward_bf16(o, out_a, pre_a, NULL, NULL, x16, w, NULL, bias, N, C, OC);
    o->matmul_forward_bf16(o, NULL, pre_b, NULL, x16, w, NULL, bias, N, C, OC);
    o->gelu_forward_bf16(o, out_b, pre_b, NULL, NO);
    SAME(pre_a, pre_b, NO, "forward: pre16");
    SAME(out_a, out_b, NO, "forward: out16");
    /* the sum in float32 (a cache pass's), in a buffer given and in the table's own */
    float *pre32 = kref_alloc(NO * 4), *sum = kref_alloc(NO * 4);
    uint16_t *out_c = kref_alloc(NO * 2), *out_d = kref_alloc(NO * 2);
    o->matmul_gelu_forward_bf16(o, out_c, NULL, pre32, x, NULL, NULL, w16, bias, N, C, OC);
    o->matmul_gelu_forward_bf16(o, out_d, NULL, NULL, x, NULL, NULL, w16, bias, N, C, OC);
    o->matmul_forward_bf16(o, sum, NULL, x, NULL, NULL, w16, bias, N, C, OC);
    o->gelu_forward_bf16(o, out_b, NULL, sum, NO);
    SAME(pre32, sum, NO, "forward: pre");
    SAME(out_c, out_b, NO, "forward: out16 from pre");
    SAME(out_d, out_b, NO, "forward: out16 from the table's buffer");
    for (int i = 0; i < (int)NO; i++) {
        int n = i / OC, j = i % OC;
        double s = bias[j];
        for (int k = 0; k < C; k++) s += r16(x[n * C + k]) * r16(w[j * C + k]);
        /* GELU reads the sum rounded (2^-9 relative at most) */
        near(pw_bf16_to_f32(out_a[i]), gelu(s), fabs(dgelu(s)) * 0x1p-8 * fabs(s),
             "out16 against float64", i);
    }

    /* backward of a down-projection (N x OC -> N x C) whose input is GELU's output: dout in
     * bfloat16 rows LD apart, or in float32 */
    float *dout = kref_randn((size_t)N * LD, 1.0, &rng), *dw0 = kref_randn(OCC, 1.0, &rng);
    float *db0 = kref_randn(C, 1.0, &rng);
    uint16_t *dout16 = kref_alloc((size_t)N * LD * 2), *g16 = kref_alloc(NO * 2);
    o->to_bf16(o, dout16, dout, (size_t)N * LD);
    for (int i = 0; i < (int)NO; i++) g16[i] = out_a[i]; /* the down-projection's input */
    for (int variant = 0; variant < 4; variant++) {
        int in16 = variant & 1, grads = variant & 2;
        float *dw_a = kref_alloc(OCC * 4), *dw_b = kref_alloc(OCC * 4);
        float *db_a = kref_alloc(C * 4), *db_b = kref_alloc(C * 4);
        memcpy(dw_a, dw0, OCC * 4), memcpy(dw_b, dw0, OCC * 4);
        memcpy(db_a, db0, C * 4), memcpy(db_b, db0, C * 4);
        uint16_t *dpre_a = kref_alloc(NO * 2), *dpre_b = kref_alloc(NO * 2);
        float *scratch = variant == 1 ? kref_alloc(NO * 4) : NULL, *dg = kref_alloc(NO * 4);
        /* the product here maps OC -> C: its input is N x OC (pre's shape), its dout N x C */
        o->matmul_backward_gelu_bf16(o, dpre_a, pre_a, scratch, grads ? dw_a : NULL,
                                     grads ? db_a : NULL, in16 ? NULL : dout, in16 ? dout16 : NULL,
                                     LD, NULL, g16, NULL, w16, N, OC, C);
        o->matmul_backward_bf16(o, dg, grads ? dw_b : NULL, grads ? db_b : NULL,
                                in16 ? NULL : dout, in16 ? dout16 : NULL, LD, NULL, g16, NULL, w16,
                                N, OC, C, 1);
        o->gelu_backward_bf16(o, dpre_b, pre_a, dg, NO);
        SAME(dpre_a, dpre_b, NO, "backward: dpre16");
        SAME(dw_a, dw_b, OCC, "backward: dweight");
        SAME(db_a, db_b, (size_t)C, "backward: dbias");
        if (scratch) SAME(scratch, dg, NO, "backward: the scratch holds dout . W");
        for (int i = 0; i < (int)NO && variant == 1; i++) {
            int n = i / OC, k = i % OC;
            double s = 0.0;
            for (int j = 0; j < C; j++) s += r16(dout[n * LD + j]) * r16(w[j * OC + k]);
            near(pw_bf16_to_f32(dpre_a[i]), dgelu(pw_bf16_to_f32(pre_a[i])) * s, 0.0,
                 "dpre16 against float64", i);
        }
        free(dw_a), free(dw_b), free(db_a), free(db_b), free(dpre_a), free(dpre_b), free(dg);
        free(scratch);
    }
    /* the Llama family's [gate | up] product (W: OC rows, the gates then the ups) and SwiGLU */
    const int F = OC / 2;
    const size_t NF = (size_t)N * F;
    uint16_t *act_a = kref_alloc(NF * 2), *act_b = kref_alloc(NF * 2), *act_c = kref_alloc(NF * 2);
    float *gu = kref_alloc(NO * 4), *gu_given = kref_alloc(NO * 4);
    o->matmul_swiglu_forward_bf16(o, act_a, gu_given, NULL, x16, NULL, w16, N, C, F);
    o->matmul_swiglu_forward_bf16(o, act_c, NULL, x, NULL, w, NULL, N, C, F);
    o->matmul_forward_bf16(o, gu, NULL, NULL, x16, NULL, w16, NULL, N, C, OC);
    o->swiglu_forward_bf16(o, act_b, NULL, gu, N, F);
    SAME(gu_given, gu, NO, "SwiGLU forward: the sum in the buffer given");
    SAME(act_a, act_b, NF, "SwiGLU forward: out16");
    SAME(act_c, act_b, NF, "SwiGLU forward: out16 from the table's buffer");
    for (int i = 0; i < (int)NF; i++) {
        int n = i / F, j = i % F;
        double g = 0.0, u = 0.0;
        for (int k = 0; k < C; k++) {
            g += r16(x[n * C + k]) * r16(w[j * C + k]);
            u += r16(x[n * C + k]) * r16(w[(F + j) * C + k]);
        }
        double gr = r16((float)g), ur = r16((float)u), want = gr / (1.0 + exp(-gr)) * ur;
        near(pw_bf16_to_f32(act_a[i]), want, 0.0, "SwiGLU out16 against float64", i);
    }
    free(act_a), free(act_b), free(act_c), free(gu), free(gu_given);
    free(x), free(w), free(bias), free(x16), free(w16), free(out_a), free(out_b), free(pre_a);
    free(pre_b), free(pre32), free(sum), free(out_c), free(out_d), free(dout), free(dw0), free(db0);
    free(dout16), free(g16);
    return pw_test_done("test_ops_mlp");
}
