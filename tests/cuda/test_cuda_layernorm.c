/* test_cuda_layernorm.c: the CUDA LayerNorm against the CPU twin on the same random data:
 * forward (mean and rstd, or NULL), its bf16 form (the float32 result rounded, bit for bit),
 * the accumulating backward with every NULL gradient (by the one pass at 1, 4 and 8 rows a
 * warp, and by the three kernels for rows over 1024), and the forward with the residual add
 * fused in. */
#include "cutest.h"

static void run(int N, int C, double offset, unsigned long long *rng)
{
    printf("N=%d C=%d offset=%g\n", N, C, offset);
    size_t NC = (size_t)N * C;
    float *inp = cu_randn(NC, 1.0, rng);
    for (size_t i = 0; i < NC; i++) inp[i] += (float)offset; /* rows far from zero */
    float *w = cu_randn(C, 1.0, rng), *bias = cu_randn(C, 1.0, rng);
    float *dout = cu_randn(NC, 1.0, rng);
    float *dinp0 = cu_randn(NC, 1.0, rng), *dw0 = cu_randn(C, 1.0, rng),
          *db0 = cu_randn(C, 1.0, rng);
    float *out = cu_host(sizeof(float) * NC), *mean = cu_host(sizeof(float) * N);
    float *rstd = cu_host(sizeof(float) * N);
    pw_layernorm_forward(out, mean, rstd, inp, w, bias, N, C);

    float *d_inp = cu_upload(inp, sizeof(float) * NC), *d_w = cu_upload(w, sizeof(float) * C);
    float *d_bias = cu_upload(bias, sizeof(float) * C),
          *d_dout = cu_upload(dout, sizeof(float) * NC);
    float *d_out = cu_dev(sizeof(float) * NC), *d_mean = cu_dev(sizeof(float) * N);
    float *d_rstd = cu_dev(sizeof(float) * N);
    cu_poison(d_out, sizeof(float) * NC);
    cu_poison(d_mean, sizeof(float) * N);
    cu_poison(d_rstd, sizeof(float) * N);
    pw_layernorm_forward_cuda(d_out, d_mean, d_rstd, d_inp, d_w, d_bias, N, C, 0);
    cu_compare("forward out", d_out, out, NC, CU_TOL_F32);
    cu_compare("forward mean", d_mean, mean, N, CU_TOL_F32);
    cu_compare("forward rstd", d_rstd, rstd, N, CU_TOL_F32);
    uint16_t *d_out16 = cu_dev(sizeof(uint16_t) * NC + 2);
    pw_layernorm_forward_bf16_cuda(d_out16, d_mean, d_rstd, d_inp, d_w, d_bias, N, C, 0);
    cu_compare_bf16("forward out (bf16)", d_out16, d_out, NC);
    cu_compare("forward (bf16) mean", d_mean, mean, N, CU_TOL_F32);
    cu_poison(d_out, sizeof(float) * NC);
    pw_layernorm_forward_cuda(d_out, NULL, NULL, d_inp, d_w, d_bias, N, C, 0);
    cu_compare("forward out (mean, rstd NULL)", d_out, out, NC, CU_TOL_F32);

    /* 7 = all three gradients; then every combination with some NULL */
    for (int sel = 1; sel < 8; sel++) {
        int gi = sel & 1, gw = sel & 2, gb = sel & 4;
        float *dinp = cu_copy(dinp0, NC), *dw = cu_copy(dw0, C), *db = cu_copy(db0, C);
        float *d_dinp = cu_upload(dinp0, sizeof(float) * NC),
              *d_dw = cu_upload(dw0, sizeof(float) * C);
        float *d_db = cu_upload(db0, sizeof(float) * C);
        /* with dinp: its sum rounded as well (a bf16 model's next product reads it) */
        uint16_t *d_dinp16 = gi ? cu_dev(sizeof(uint16_t) * NC) : NULL;
        pw_layernorm_backward(gi ? dinp : NULL, gw ? dw : NULL, gb ? db : NULL, dout, inp, w, mean,
                              rstd, N, C);
        pw_layernorm_backward_cuda(gi ? d_dinp : NULL, d_dinp16, gw ? d_dw : NULL,
                                   gb ? d_db : NULL, d_dout, d_inp, d_w, d_mean, d_rstd, N, C, 0);
        cu_comparef(d_dinp, dinp, NC, CU_TOL_F32, "backward dinp (+=) sel %d", sel);
        if (gi) cu_compare_bf16("backward dinp, rounded", d_dinp16, d_dinp, NC);
        cu_comparef(d_dw, dw, C, CU_TOL_F32, "backward dweight (+=) sel %d", sel);
        cu_comparef(d_db, db, C, CU_TOL_F32, "backward dbias (+=) sel %d", sel);
    }

    /* the residual fused in, in place (res = a, as a decode pass has it): the sum bit for bit
     * the CPU's residual, the LayerNorm of it as the CPU's; its bf16 form the float32 rounded */
    float *b2 = cu_randn(NC, 1.0, rng), *res = cu_host(sizeof(float) * NC);
    pw_residual_forward(res, inp, b2, NC);
    pw_layernorm_forward(out, mean, rstd, res, w, bias, N, C);
    float *d_b2 = cu_upload(b2, sizeof(float) * NC), *d_a = cu_upload(inp, sizeof(float) * NC);
    pw_residual_layernorm_forward_cuda(d_a, d_out, NULL, d_mean, d_rstd, d_a, d_b2, d_w, d_bias,
                                       N, C, 0);
    cu_compare("residual + forward: the sum", d_a, res, NC, 0.0);
    cu_compare("residual + forward out", d_out, out, NC, CU_TOL_F32);
    cu_compare("residual + forward mean", d_mean, mean, N, CU_TOL_F32);
    cu_compare("residual + forward rstd", d_rstd, rstd, N, CU_TOL_F32);
    d_a = cu_upload(inp, sizeof(float) * NC);
    pw_residual_layernorm_forward_cuda(d_a, NULL, d_out16, d_mean, d_rstd, d_a, d_b2, d_w, d_bias,
                                       N, C, 0);
    cu_compare_bf16("residual + forward out (bf16)", d_out16, d_out, NC);
    cu_release();
}

int main(void)
{
    cu_require_gpu("test_cuda_layernorm");
    unsigned long long rng = 12;
    run(7, 768, 0.0, &rng);
    run(300, 33, 0.0, &rng); /* C not a multiple of the warp, N not of the chunk */
    run(1000, 768, 0.0, &rng); /* the backward's one pass at a row a warp: 125 blocks */
    run(300, 1100, 0.0, &rng); /* rows over 1024: the three kernels, 5 column-sum chunks */
    run(64, 100, 30.0, &rng);
    /* the backward's one pass at 4 and 8 rows a warp (pw_lnb_rows; the shapes above take 1),
     * the last block part full */
    run(8200, 768, 0.0, &rng);
    run(8300, 100, 30.0, &rng);
    run(13000, 256, 0.0, &rng);
    /* the float4 forward (pw_cuda_set_ln_vec): the same checks on the shapes it takes (C a
     * multiple of 4 up to 1024), 2 and 8 rows a block; then the scalar kernel again */
    unsigned long v0 = pw_cuda_ln_vec_calls();
    pw_cuda_set_ln_vec(1);
    run(7, 768, 0.0, &rng);
    run(1000, 768, 0.0, &rng);
    run(64, 100, 30.0, &rng);
    run(8200, 768, 0.0, &rng);
    run(300, 33, 0.0, &rng); /* not a multiple of 4: the scalar kernel */
    pw_cuda_set_ln_vec(0);
    unsigned long v1 = pw_cuda_ln_vec_calls();
    printf("float4 forwards: %lu\n", v1 - v0);
    CHECK(v1 > v0, "the float4 forward took no call");
    return pw_test_done("test_cuda_layernorm");
}
