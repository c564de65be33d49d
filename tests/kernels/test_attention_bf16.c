/* test_attention_bf16.c: the bfloat16 twin of the GPU's tensor-core attention
 * (pw_attention_gqa_forward_bf16 / _backward_bf16, cpu/attention.c) against the float64
 * reference of attention_ref.h, on inputs that are bfloat16 numbers already (so that rounding
 * q, k, v and dout changes nothing and what is left is the twin's own rounding):
 *  - lse: the probabilities' rounding does not enter it: equal to float32 rounding (1e-6);
 *  - out: each probability is rounded to 8 significant bits (relative error at most 2^-9), so
 *    |out - ref| <= 2^-9 sum_s p_s |v_s| <= 2^-9 max |v| (plus float32 noise), and it is not
 *    float32-exact either (the rounding happened);
 *  - the gradients: P and dS rounded alike before their products, D from the output rounded;
 *    against the float64 gradient within 1e-2 of its largest value (measured: a few 1e-3), set
 *    into a dqkv that held NaN (the GPU's kernels write every element; so must the twin).
 * Rounding of inputs that are not bfloat16 numbers is the float32 kernels' tolerance-free
 * business of test_flash_tc_emu (GPU against this twin). */
#include "attention_ref.h"
#include "pw_bf16.h"

static void check(const char *name, Shape s, const int *mask, unsigned long long seed)
{
    size_t BT = (size_t)s.B * s.T, nqkv = BT * width(s), nout = BT * s.NH * s.hs;
    size_t nlse = (size_t)s.B * s.NH * s.T;
    unsigned long long rng = seed;
    float *qkv = malloc(sizeof(float) * nqkv), *dout = malloc(sizeof(float) * nout);
    uint16_t *qkv16 = malloc(sizeof(uint16_t) * nqkv);
    double *qkvd = calloc(nqkv, sizeof(double)), *doutd = calloc(nout, sizeof(double));
    for (size_t i = 0; i < nqkv; i++) {
        qkvd[i] = qkv[i] = pw_bf16_round((float)pw_test_normal(&rng));
        qkv16[i] = pw_bf16_from_f32(qkv[i]);
    }
    for (size_t i = 0; i < nout; i++)
        doutd[i] = dout[i] = pw_bf16_round((float)pw_test_normal(&rng));
    double *out_r = calloc(nout, sizeof(double)), *lse_r = calloc(nlse, sizeof(double));
    double *att = calloc(nlse * s.T, sizeof(double)), *dqkv_r = calloc(nqkv, sizeof(double));
    ref_forward(out_r, att, lse_r, qkvd, mask, s);
    ref_backward(dqkv_r, doutd, qkvd, att, s);

    float *out = malloc(sizeof(float) * nout), *lse = malloc(sizeof(float) * nlse);
    pw_attention_gqa_forward_bf16(out, lse, qkv16, mask, s.B, s.T, s.NH, s.NKV, s.hs);
    double e_lse = pw_max_rel_err(lse, lse_r, nlse, 1.0);
    double vmax = 0.0, dmax = 0.0;
    for (size_t i = 0; i < BT; i++)
        for (int h = 0; h < s.NKV; h++)
            for (int c = 0; c < s.hs; c++) {
                double v = fabs(qkvd[i * width(s) + (size_t)(s.NH + s.NKV + h) * s.hs + c]);
                vmax = v > vmax ? v : vmax;
            }
    for (size_t i = 0; i < nout; i++) {
        double d = fabs(out[i] - out_r[i]);
        dmax = d > dmax ? d : dmax;
    }
    CHECK(e_lse < 1e-6, "%s: lse rel err %.3g", name, e_lse);
    CHECK(dmax <= (0x1p-9 + 1e-5) * vmax, "%s: out off by %.3g, over 2^-9 max|v| = %.3g", name,
          dmax, 0x1p-9 * vmax);
    CHECK(dmax > 1e-5 * vmax, "%s: out off by %.3g only: were the probabilities rounded?", name,
          dmax);

    /* the backward sets a dqkv holding NaN; it reads the output rounded, as a bf16 model keeps
     * it (D = rowsum(dout out) moves by 2^-9 of its terms at most: within the bound below) */
    float *dqkv = malloc(sizeof(float) * nqkv);
    uint16_t *out16 = malloc(sizeof(uint16_t) * nout);
    for (size_t i = 0; i < nqkv; i++) dqkv[i] = NAN;
    for (size_t i = 0; i < nout; i++) out16[i] = pw_bf16_from_f32(out[i]);
    pw_attention_gqa_backward_bf16(dqkv, dout, qkv16, out16, lse, mask, s.B, s.T, s.NH, s.NKV,
                                   s.hs);
    free(out16);
    double e_g = pw_max_rel_err(dqkv, dqkv_r, nqkv, 1e-6);
    CHECK(e_g < 1e-2, "%s: gradient rel err %.3g", name, e_g);
    printf("%-34s lse %.2e  out %.2e (bound %.2e)  dqkv %.2e\n", name, e_lse, dmax,
           0x1p-9 * vmax, e_g);
    free(qkv);
    free(qkv16);
    free(dout);
    free(qkvd);
    free(doutd);
    free(out_r);
    free(lse_r);
    free(att);
    free(dqkv_r);
    free(out);
    free(lse);
    free(dqkv);
}

int main(void)
{
    int pads[4] = {0, 3, 8, 9};
    int *m = att_left_pad_mask(pads, 4, 9);
    check("NH=6 NKV=2 hs=5, pads 0/3/8/9", (Shape){4, 9, 6, 2, 5}, m, 1);
    check("NH=NKV=3 hs=16, no mask", (Shape){2, 9, 3, 3, 16}, NULL, 2);
    int pads_big[3] = {0, 37, 101};
    int *m_big = att_left_pad_mask(pads_big, 3, 150);
    check("T=150 NH=4 NKV=2 hs=32, pads", (Shape){3, 150, 4, 2, 32}, m_big, 3);
    free(m);
    free(m_big);
    return pw_test_done("test_attention_bf16");
}
