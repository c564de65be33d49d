/* test_cuda_rmsnorm.c: the CUDA RMSNorm against the CPU twin on the same random data: forward
 * (rstd, or NULL), its bf16 form (the float32 result rounded, bit for bit), the accumulating
 * backward with every NULL gradient, and the forward with the residual add fused in; Qwen3's
 * q/k norm over the heads of rows in place, forward (with and without the kept heads) and
 * backward (each weight's gradient alone, and none). */
#include "cutest.h"

static void run(int N, int C, float eps, unsigned long long *rng)
{
    printf("N=%d C=%d eps=%g\n", N, C, eps);
    size_t NC = (size_t)N * C;
    float *inp = cu_randn(NC, 1.0, rng), *w = cu_randn(C, 1.0, rng);
    float *dout = cu_randn(NC, 1.0, rng);
    float *dinp0 = cu_randn(NC, 1.0, rng), *dw0 = cu_randn(C, 1.0, rng);
    float *out = cu_host(sizeof(float) * NC), *rstd = cu_host(sizeof(float) * N);
    pw_rmsnorm_forward(out, rstd, inp, w, N, C, eps);

    float *d_inp = cu_upload(inp, sizeof(float) * NC), *d_w = cu_upload(w, sizeof(float) * C);
    float *d_dout = cu_upload(dout, sizeof(float) * NC);
    float *d_out = cu_dev(sizeof(float) * NC), *d_rstd = cu_dev(sizeof(float) * N);
    cu_poison(d_out, sizeof(float) * NC);
    cu_poison(d_rstd, sizeof(float) * N);
    pw_rmsnorm_forward_cuda(d_out, d_rstd, d_inp, d_w, N, C, eps, 0);
    cu_compare("forward out", d_out, out, NC, CU_TOL_F32);
    cu_compare("forward rstd", d_rstd, rstd, N, CU_TOL_F32);
    uint16_t *d_out16 = cu_dev(sizeof(uint16_t) * NC + 2);
    pw_rmsnorm_forward_bf16_cuda(d_out16, d_rstd, d_inp, d_w, N, C, eps, 0);
    cu_compare_bf16("forward out (bf16)", d_out16, d_out, NC);
    cu_poison(d_out, sizeof(float) * NC);
    pw_rmsnorm_forward_cuda(d_out, NULL, d_inp, d_w, N, C, eps, 0);
    cu_compare("forward out (rstd NULL)", d_out, out, NC, CU_TOL_F32);

    /* 3 = both gradients; then each alone */
    for (int sel = 1; sel < 4; sel++) {
        int gi = sel & 1, gw = sel & 2;
        float *dinp = cu_copy(dinp0, NC), *dw = cu_copy(dw0, C);
        float *d_dinp = cu_upload(dinp0, sizeof(float) * NC);
        float *d_dw = cu_upload(dw0, sizeof(float) * C);
        /* with dinp: its sum rounded as well (a bf16 model's next product reads it) */
        uint16_t *d_dinp16 = gi ? cu_dev(sizeof(uint16_t) * NC) : NULL;
        pw_rmsnorm_backward(gi ? dinp : NULL, gw ? dw : NULL, dout, inp, w, rstd, N, C);
        pw_rmsnorm_backward_cuda(gi ? d_dinp : NULL, d_dinp16, gw ? d_dw : NULL, d_dout, d_inp,
                                 d_w, d_rstd, N, C, 0);
        cu_comparef(d_dinp, dinp, NC, CU_TOL_F32, "backward dinp (+=) sel %d", sel);
        if (gi) cu_compare_bf16("backward dinp, rounded", d_dinp16, d_dinp, NC);
        cu_comparef(d_dw, dw, C, CU_TOL_F32, "backward dweight (+=) sel %d", sel);
    }

    /* the residual fused in, in place (res = a): the sum bit for bit the CPU's residual, the
     * RMSNorm of it as the CPU's; its bf16 form the float32 rounded */
    float *b2 = cu_randn(NC, 1.0, rng), *res = cu_host(sizeof(float) * NC);
    pw_residual_forward(res, inp, b2, NC);
    pw_rmsnorm_forward(out, rstd, res, w, N, C, eps);
    float *d_b2 = cu_upload(b2, sizeof(float) * NC), *d_a = cu_upload(inp, sizeof(float) * NC);
    pw_residual_rmsnorm_forward_cuda(d_a, d_out, NULL, d_rstd, d_a, d_b2, d_w, N, C, eps, 0);
    cu_compare("residual + forward: the sum", d_a, res, NC, 0.0);
    cu_compare("residual + forward out", d_out, out, NC, CU_TOL_F32);
    cu_compare("residual + forward rstd", d_rstd, rstd, N, CU_TOL_F32);
    d_a = cu_upload(inp, sizeof(float) * NC);
    pw_residual_rmsnorm_forward_cuda(d_a, NULL, d_out16, d_rstd, d_a, d_b2, d_w, N, C, eps, 0);
    cu_compare_bf16("residual + forward out (bf16)", d_out16, d_out, NC);
    cu_release();
}

/* N rows of `stride` floats, the first NH + NKV heads of hs normed in place */
static void run_heads(int N, int NH, int NKV, int hs, int stride, unsigned long long *rng)
{
    printf("head norm N=%d heads %d+%d hs=%d stride=%d\n", N, NH, NKV, hs, stride);
    size_t n = (size_t)N * stride, nh = (size_t)N * (NH + NKV);
    float *x = cu_randn(n, 1.5, rng), *wq = cu_randn(hs, 1.0, rng), *wk = cu_randn(hs, 1.0, rng);
    float *dy = cu_randn(n, 1.0, rng), *dw0 = cu_randn(2 * (size_t)hs, 1.0, rng);
    float *d_x = cu_upload(x, sizeof(float) * n), *d_x2 = cu_upload(x, sizeof(float) * n);
    float *d_wq = cu_upload(wq, sizeof(float) * hs), *d_wk = cu_upload(wk, sizeof(float) * hs);
    float *raw = cu_host(sizeof(float) * nh * hs), *rstd = cu_host(sizeof(float) * nh);
    float *d_raw = cu_dev(sizeof(float) * nh * hs), *d_rstd = cu_dev(sizeof(float) * nh);
    pw_head_rmsnorm_forward(x, raw, rstd, wq, wk, N, NH, NKV, hs, stride, 1e-6f);
    pw_head_rmsnorm_forward_cuda(d_x, d_raw, d_rstd, d_wq, d_wk, N, NH, NKV, hs, stride, 1e-6f, 0);
    cu_compare("head norm x (values untouched)", d_x, x, n, CU_TOL_F32);
    cu_compare("head norm kept heads", d_raw, raw, nh * hs, 0.0);
    cu_compare("head norm rstd", d_rstd, rstd, nh, CU_TOL_F32);
    pw_head_rmsnorm_forward_cuda(d_x2, NULL, NULL, d_wq, d_wk, N, NH, NKV, hs, stride, 1e-6f, 0);
    cu_compare("head norm x (nothing kept)", d_x2, x, n, CU_TOL_F32);
    for (int sel = 0; sel < 4; sel++) { /* which weights' gradients are wanted */
        float *dx = cu_copy(dy, n), *dw = cu_copy(dw0, 2 * (size_t)hs);
        float *d_dx = cu_upload(dy, sizeof(float) * n);
        float *d_dw = cu_upload(dw0, sizeof(float) * 2 * hs);
        pw_head_rmsnorm_backward(dx, sel & 1 ? dw : NULL, sel & 2 ? dw + hs : NULL, raw, rstd, wq,
                                 wk, N, NH, NKV, hs, stride);
        pw_head_rmsnorm_backward_cuda(d_dx, sel & 1 ? d_dw : NULL, sel & 2 ? d_dw + hs : NULL,
                                      d_raw, d_rstd, d_wq, d_wk, N, NH, NKV, hs, stride, 0);
        cu_comparef(d_dx, dx, n, CU_TOL_F32, "head norm dx sel %d", sel);
        cu_comparef(d_dw, dw, 2 * (size_t)hs, CU_TOL_F32, "head norm dwq, dwk (+=) sel %d", sel);
    }
    cu_release();
}

int main(void)
{
    cu_require_gpu("test_cuda_rmsnorm");
    unsigned long long rng = 21;
    run(7, 576, 1e-5f, &rng);
    run(300, 33, 1e-6f, &rng); /* C not a multiple of the warp, N not of the chunk */
    run(1000, 960, 1e-5f, &rng); /* 16 row chunks in the dweight sum */
    run_heads(13, 6, 2, 12, (6 + 2 * 2) * 12, &rng);
    run_heads(1024, 16, 8, 128, (16 + 2 * 8) * 128, &rng); /* Qwen3-0.6B's, 1024 tokens */
    run_heads(37, 4, 1, 64, (4 + 2) * 64 + 7, &rng);       /* a stride with a gap */
    /* the float4 forward (pw_cuda_set_ln_vec) on the shapes it takes, then the scalar again */
    unsigned long v0 = pw_cuda_ln_vec_calls();
    pw_cuda_set_ln_vec(1);
    run(7, 576, 1e-5f, &rng);
    run(1000, 960, 1e-5f, &rng);
    run(300, 33, 1e-6f, &rng); /* not a multiple of 4: the scalar kernel */
    pw_cuda_set_ln_vec(0);
    CHECK(pw_cuda_ln_vec_calls() > v0, "the float4 forward took no call");
    return pw_test_done("test_cuda_rmsnorm");
}
