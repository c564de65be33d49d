/* test_cuda_matmul.c: the cuBLAS matmuls against the CPU twin on the same random data: fp32
 * (and TF32) forward with and without bias, the bias both in cuBLASLt's epilogue and seeded by
 * a kernel, the accumulating backward with every NULL gradient, the bf16 path (conversions,
 * forward, backward, its dout also in rows 2 OC apart); and that the epilogue is taken where the
 * operands are aligned; GPT-2's MLP entries (a product with GELU beside it) with GELU in
 * cuBLASLt's epilogues and without, against the CPU table's; a decode step's products with K
 * split and with their algorithms timed; sums over lengths just past a multiple of 64 exact; the
 * backward's products through cuBLASLt (pw_cuda_set_lt_all), their plans timed too. */
#include <math.h>

#include "cutest.h"
#include "pw_ops.h"

/* x rounded to bf16 and back, on the host, to check the conversion kernel bit for bit */
static float round_bf16(float x)
{
    unsigned int u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return x; /* NaN stays NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

static pw_bf16 *to_bf16_dev(const float *d_x, size_t n)
{
    pw_bf16 *d = cu_dev(n * sizeof(pw_bf16));
    pw_f32_to_bf16_cuda(d, d_x, n, 0);
    return d;
}

static void run(int N, int C, int OC, unsigned long long *rng)
{
    printf("N=%d C=%d OC=%d\n", N, C, OC);
    size_t NC = (size_t)N * C, NO = (size_t)N * OC, OCC = (size_t)OC * C;
    float *inp = cu_randn(NC, 1.0, rng), *w = cu_randn(OCC, 0.1, rng),
          *bias = cu_randn(OC, 1.0, rng);
    float *dout = cu_randn(NO, 1.0, rng);
    float *dinp0 = cu_randn(NC, 1.0, rng), *dw0 = cu_randn(OCC, 1.0, rng),
          *db0 = cu_randn(OC, 1.0, rng);
    float *d_inp = cu_upload(inp, sizeof(float) * NC), *d_w = cu_upload(w, sizeof(float) * OCC);
    float *d_bias = cu_upload(bias, sizeof(float) * OC),
          *d_dout = cu_upload(dout, sizeof(float) * NO);
    float *d_out = cu_dev(sizeof(float) * NO);
    float *out = cu_host(sizeof(float) * NO);

    /* with_bias 2: the bias seeded by its kernel, the cuBLASLt epilogue turned off */
    for (int with_bias = 0; with_bias < 3; with_bias++) {
        pw_cuda_set_epilogue(with_bias != 2);
        pw_matmul_forward(out, inp, w, with_bias ? bias : NULL, N, C, OC);
        cu_poison(d_out, sizeof(float) * NO);
        pw_matmul_forward_cuda(d_out, d_inp, d_w, with_bias ? d_bias : NULL, N, C, OC, 0);
        cu_comparef(d_out, out, NO, CU_TOL_F32, "forward fp32 (bias %s)",
                    with_bias == 0 ? "NULL" : with_bias == 1 ? "epilogue" : "seeded");
        pw_cuda_set_tf32(1);
        cu_poison(d_out, sizeof(float) * NO);
        pw_matmul_forward_cuda(d_out, d_inp, d_w, with_bias ? d_bias : NULL, N, C, OC, 0);
        cu_comparef(d_out, out, NO, CU_TOL_TF32, "forward tf32 (bias %d)", with_bias);
        pw_cuda_set_tf32(0);
    }
    pw_cuda_set_epilogue(1);

    for (int sel = 1; sel < 8; sel++) {
        int gi = sel & 1, gw = sel & 2, gb = sel & 4;
        float *dinp = cu_copy(dinp0, NC), *dw = cu_copy(dw0, OCC), *db = cu_copy(db0, OC);
        float *d_dinp = cu_upload(dinp0, sizeof(float) * NC),
              *d_dw = cu_upload(dw0, sizeof(float) * OCC);
        float *d_db = cu_upload(db0, sizeof(float) * OC);
        pw_matmul_backward(gi ? dinp : NULL, gw ? dw : NULL, gb ? db : NULL, dout, inp, w, N, C,
                           OC);
        pw_matmul_backward_cuda(gi ? d_dinp : NULL, gw ? d_dw : NULL, gb ? d_db : NULL, d_dout,
                                d_inp, d_w, N, C, OC, 0, 0);
        cu_comparef(d_dinp, dinp, NC, CU_TOL_F32, "backward fp32 dinp (+=) sel %d", sel);
        cu_comparef(d_dw, dw, OCC, CU_TOL_F32, "backward fp32 dweight (+=) sel %d", sel);
        cu_comparef(d_db, db, OC, CU_TOL_F32, "backward fp32 dbias (+=) sel %d", sel);

        if (sel == 7) { /* bf16 operands: the same accumulation, against the fp32 CPU result */
            float *b_dinp = cu_upload(dinp0, sizeof(float) * NC),
                  *b_dw = cu_upload(dw0, sizeof(float) * OCC);
            float *b_db = cu_upload(db0, sizeof(float) * OC);
            pw_bf16 *h_dout = to_bf16_dev(d_dout, NO), *h_inp = to_bf16_dev(d_inp, NC);
            pw_bf16 *h_w = to_bf16_dev(d_w, OCC);
            pw_matmul_backward_bf16_cuda(b_dinp, b_dw, b_db, h_dout, OC, h_inp, h_w, N, C, OC, 0,
                                         0);
            cu_compare("backward bf16 dinp (+=)", b_dinp, dinp, NC, CU_TOL_BF16);
            cu_compare("backward bf16 dweight (+=)", b_dw, dw, OCC, CU_TOL_BF16);
            cu_compare("backward bf16 dbias (+=)", b_db, db, OC, CU_TOL_BF16);
            /* the column sum 8 columns a thread (pw_cuda_set_colsum_vec, on by default where
             * OC is a multiple of 8) against the scalar kernel: the same bits */
            float *s_db = cu_upload(db0, sizeof(float) * OC);
            float *v_db = cu_upload(db0, sizeof(float) * OC);
            unsigned long cv0 = pw_cuda_colsum_vec_calls();
            pw_cuda_set_colsum_vec(0);
            pw_matmul_backward_bf16_cuda(NULL, NULL, s_db, h_dout, OC, h_inp, h_w, N, C, OC, 0, 0);
            pw_cuda_set_colsum_vec(1);
            pw_matmul_backward_bf16_cuda(NULL, NULL, v_db, h_dout, OC, h_inp, h_w, N, C, OC, 0, 0);
            float *hs = cu_host(sizeof(float) * OC), *hv = cu_host(sizeof(float) * OC);
            cu_download(hs, s_db, sizeof(float) * OC), cu_download(hv, v_db, sizeof(float) * OC);
            int same = !memcmp(hs, hv, sizeof(float) * OC);
            printf("  backward bf16 dbias, 8 columns a thread: %s\n",
                   same ? "the scalar kernel's bits" : "DIFFERS");
            CHECK(same, "the 8-column sum's dbias differs from the scalar kernel's");
            CHECK((pw_cuda_colsum_vec_calls() - cv0 == 1) == (OC % 8 == 0),
                  "the 8-column sum took %lu calls at OC = %d", pw_cuda_colsum_vec_calls() - cv0,
                  OC);

            /* set_dinp: a dinp full of NaN is set, never read: the CPU's product from zeros */
            float *zi = cu_copy(dinp0, NC);
            memset(zi, 0, sizeof(float) * NC);
            pw_matmul_backward(zi, NULL, NULL, dout, inp, w, N, C, OC);
            cu_poison(d_dinp, sizeof(float) * NC);
            pw_matmul_backward_cuda(d_dinp, NULL, NULL, d_dout, d_inp, d_w, N, C, OC, 1, 0);
            cu_comparef(d_dinp, zi, NC, CU_TOL_F32, "backward fp32 dinp (set)");
            cu_poison(b_dinp, sizeof(float) * NC);
            pw_matmul_backward_bf16_cuda(b_dinp, NULL, NULL, h_dout, OC, h_inp, h_w, N, C, OC, 1,
                                         0);
            cu_compare("backward bf16 dinp (set)", b_dinp, zi, NC, CU_TOL_BF16);

            /* dout's rows 2 OC apart, NaN between them (the LM head's bf16 dlogits lie over its
             * float32 logits): the same three results */
            pw_bf16 *h_wide = cu_dev(sizeof(pw_bf16) * 2 * NO);
            cu_poison(h_wide, sizeof(pw_bf16) * 2 * NO);
            PW_CUDA_CHECK(cudaMemcpy2D(h_wide, sizeof(pw_bf16) * 2 * OC, h_dout,
                                       sizeof(pw_bf16) * OC, sizeof(pw_bf16) * OC, N,
                                       cudaMemcpyDeviceToDevice));
            float *w_dw = cu_upload(dw0, sizeof(float) * OCC);
            float *w_db = cu_upload(db0, sizeof(float) * OC);
            cu_poison(b_dinp, sizeof(float) * NC);
            pw_matmul_backward_bf16_cuda(b_dinp, w_dw, w_db, h_wide, 2 * OC, h_inp, h_w, N, C, OC,
                                         1, 0);
            cu_compare("backward bf16 dinp (rows 2 OC apart)", b_dinp, zi, NC, CU_TOL_BF16);
            cu_compare("backward bf16 dweight (rows 2 OC apart)", w_dw, dw, OCC, CU_TOL_BF16);
            cu_compare("backward bf16 dbias (rows 2 OC apart)", w_db, db, OC, CU_TOL_BF16);
        }
    }

    /* on a stream of its own: a second cuBLAS handle, bound to that stream (a blocking stream,
     * so it waits for the poisoning memset on the legacy default stream) */
    cudaStream_t stream;
    PW_CUDA_CHECK(cudaStreamCreate(&stream));
    pw_matmul_forward(out, inp, w, bias, N, C, OC);
    cu_poison(d_out, sizeof(float) * NO);
    pw_matmul_forward_cuda(d_out, d_inp, d_w, d_bias, N, C, OC, stream);
    PW_CUDA_CHECK(cudaStreamSynchronize(stream));
    cu_compare("forward fp32 on its own stream", d_out, out, NO, CU_TOL_F32);
    pw_cuda_release(); /* before the stream goes, as the header asks */
    PW_CUDA_CHECK(cudaStreamDestroy(stream));

    /* bf16 forward against fp32 CPU */
    pw_bf16 *h_inp = to_bf16_dev(d_inp, NC), *h_w = to_bf16_dev(d_w, OCC);
    pw_matmul_forward(out, inp, w, bias, N, C, OC);
    cu_poison(d_out, sizeof(float) * NO);
    pw_matmul_forward_bf16_cuda(d_out, h_inp, h_w, d_bias, N, C, OC, 0);
    cu_compare("forward bf16 (bias)", d_out, out, NO, CU_TOL_BF16);
    /* a bias at an offset of 4 bytes: the epilogue cannot take it, the seeded path must */
    if (OC > 1) {
        pw_matmul_forward(out, inp, w, bias, N, C, OC);
        for (size_t i = 0; i < NO; i++) out[i] += bias[(i % OC + 1) % OC] - bias[i % OC];
        float *d_bias2 = cu_dev(sizeof(float) * (OC + 1));
        PW_CUDA_CHECK(cudaMemcpy(d_bias2 + 1, d_bias + 1, sizeof(float) * (OC - 1),
                                 cudaMemcpyDeviceToDevice));
        PW_CUDA_CHECK(cudaMemcpy(d_bias2 + OC, d_bias, sizeof(float), cudaMemcpyDeviceToDevice));
        cu_poison(d_out, sizeof(float) * NO);
        pw_matmul_forward_bf16_cuda(d_out, h_inp, h_w, d_bias2 + 1, N, C, OC, 0);
        cu_compare("forward bf16 (bias misaligned)", d_out, out, NO, CU_TOL_BF16);
    }
    pw_matmul_forward(out, inp, w, NULL, N, C, OC);
    cu_poison(d_out, sizeof(float) * NO);
    pw_matmul_forward_bf16_cuda(d_out, h_inp, h_w, NULL, N, C, OC, 0);
    cu_compare("forward bf16 (bias NULL)", d_out, out, NO, CU_TOL_BF16);

    /* the same with the result rounded to bfloat16 by the product (widened here to compare):
     * with a bias in cuBLASLt's epilogue, with the epilogue off (a float32 scratch converted),
     * without a bias (cublasGemmEx writing bfloat16) */
    pw_bf16 *d_out16 = cu_dev(sizeof(pw_bf16) * NO + 2);
    for (int mode = 0; mode < 3; mode++) {
        const float *bb = mode < 2 ? d_bias : NULL;
        pw_matmul_forward(out, inp, w, mode < 2 ? bias : NULL, N, C, OC);
        pw_cuda_set_epilogue(mode != 1);
        cu_poison(d_out16, sizeof(pw_bf16) * NO);
        unsigned long f0, u0, f1, u1;
        pw_cuda_epilogue_calls(&f0, &u0);
        pw_matmul_forward_bf16_out_cuda(d_out16, h_inp, h_w, bb, N, C, OC, 0);
        pw_cuda_epilogue_calls(&f1, &u1);
        pw_cuda_set_epilogue(1);
        if (mode == 0) /* a figure to read: whether cuBLASLt took the bias, bf16 out */
            printf("  bf16 out with a bf16 bias: %s\n",
                   f1 > f0 ? "fused in cuBLASLt's epilogue" : "not fused (float32 scratch)");
        cu_poison(d_out, sizeof(float) * NO);
        pw_bf16_to_f32_cuda(d_out, d_out16, NO, 0);
        cu_compare(mode == 0 ? "forward bf16 out (bias in the epilogue)"
                   : mode == 1 ? "forward bf16 out (epilogue off)"
                               : "forward bf16 out (bias NULL)",
                   d_out, out, NO, CU_TOL_BF16);
    }
    /* with the epilogue's algorithms timed on first use (pw_cuda_set_lt_tune): a shape not seen
     * before (a row fewer), whichever candidate wins gives the product */
    pw_matmul_forward(out, inp, w, bias, N, C, OC);
    pw_cuda_set_lt_tune(1);
    cu_poison(d_out16, sizeof(pw_bf16) * NO);
    pw_matmul_forward_bf16_out_cuda(d_out16, h_inp, h_w, d_bias, N - 1, C, OC, 0);
    pw_cuda_set_lt_tune(0);
    cu_poison(d_out, sizeof(float) * NO);
    pw_bf16_to_f32_cuda(d_out, d_out16, NO - OC, 0);
    cu_compare("forward bf16 out (epilogue algorithms timed)", d_out, out, NO - OC, CU_TOL_BF16);
    /* with the bias kept in float32 for the epilogue (pw_cuda_set_lt_bias16(0); the bf16 bias
     * is the default, the cases above): the same product within the bf16 tolerance, whether
     * cuBLASLt took it or the float32 path ran */
    pw_cuda_set_lt_bias16(0);
    cu_poison(d_out16, sizeof(pw_bf16) * NO);
    unsigned long bf0, bu0, bf1, bu1;
    pw_cuda_epilogue_calls(&bf0, &bu0);
    pw_matmul_forward_bf16_out_cuda(d_out16, h_inp, h_w, d_bias, N, C, OC, 0);
    pw_cuda_epilogue_calls(&bf1, &bu1);
    pw_cuda_set_lt_bias16(1);
    printf("  bf16 out with a float32 bias: %s\n",
           bf1 > bf0 ? "fused in cuBLASLt's epilogue" : "not fused (float32 scratch)");
    cu_poison(d_out, sizeof(float) * NO);
    pw_bf16_to_f32_cuda(d_out, d_out16, NO, 0);
    cu_compare("forward bf16 out (float32 bias)", d_out, out, NO, CU_TOL_BF16);

    /* conversions: f32 -> bf16 rounds to nearest even, bf16 -> f32 is exact */
    float *back = cu_host(sizeof(float) * NC), *d_back = cu_dev(sizeof(float) * NC);
    cu_poison(d_back, sizeof(float) * NC);
    pw_bf16_to_f32_cuda(d_back, h_inp, NC, 0);
    cu_download(back, d_back, sizeof(float) * NC);
    size_t bad = 0;
    for (size_t i = 0; i < NC; i++) bad += back[i] != round_bf16(inp[i]);
    CHECK(bad == 0, "f32 -> bf16 -> f32: %zu of %zu values differ from round-to-nearest-even", bad,
          NC);
    cu_release();
}

/* n bfloat16 values on the device, widened into a float32 device buffer to compare */
static float *widened_dev(const pw_bf16 *d16, size_t n)
{
    float *d = cu_dev(sizeof(float) * n);
    pw_bf16_to_f32_cuda(d, d16, n, 0);
    return d;
}

static float *widened_host(const uint16_t *h16, size_t n)
{
    float *h = cu_host(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) h[i] = pw_bf16_to_f32(h16[i]);
    return h;
}

/* GPT-2's MLP entries (pw_matmul_gelu_forward_bf16_cuda, pw_matmul_backward_gelu_bf16_cuda)
 * against the CPU table's (GELU of the rounded sum, the two entries each pairs), with GELU in
 * cuBLASLt's epilogues (gelu 1: GELU of the float32 sum) and as kernels of its own (gelu 0):
 * the up-projection C -> F with the sum kept (pre), not kept (a float32 buffer given, or a
 * scratch), and the down-projection F -> C's backward through the GELU, dout in rows 2 C apart,
 * dweight and dbias accumulating. Returns the calls that took the GELU epilogue. */
static unsigned long mlp(int N, int C, int F, int gelu, unsigned long long *rng)
{
    printf("MLP N=%d C=%d F=%d, GELU %s\n", N, C, F, gelu ? "in the epilogues" : "kernels");
    const PwOps *o = pw_ops_cpu();
    size_t NC = (size_t)N * C, NF = (size_t)N * F, FC = (size_t)F * C;
    float *x = cu_randn(NC, 1.0, rng), *w1 = cu_randn(FC, 0.1, rng), *b1 = cu_randn(F, 0.5, rng);
    float *w2 = cu_randn(FC, 0.1, rng), *dout = cu_randn(2 * NC, 1.0, rng);
    float *dw0 = cu_randn(FC, 1.0, rng), *db0 = cu_randn(C, 1.0, rng);
    float *tmp = cu_host(sizeof(float) * 2 * (NC > FC ? NC : FC));
    uint16_t *x16 = cu_bf16_of(x, NC, tmp), *w116 = cu_bf16_of(w1, FC, tmp);
    uint16_t *w216 = cu_bf16_of(w2, FC, tmp), *dout16 = cu_bf16_of(dout, 2 * NC, tmp);
    pw_bf16 *d_x = cu_upload(x16, 2 * NC), *d_w1 = cu_upload(w116, 2 * FC);
    pw_bf16 *d_w2 = cu_upload(w216, 2 * FC), *d_dout = cu_upload(dout16, 4 * NC);
    float *d_b1 = cu_upload(b1, sizeof(float) * F);
    uint16_t *out = cu_host(2 * NF), *pre = cu_host(2 * NF);
    const int was = pw_cuda_get_lt_gelu();
    pw_cuda_set_lt_gelu(gelu);
    unsigned long f0, u0, f1, u1;
    pw_cuda_gelu_epilogue_calls(&f0, &u0);

    o->matmul_gelu_forward_bf16(o, out, pre, NULL, NULL, x16, NULL, w116, b1, N, C, F);
    pw_bf16 *d_out = cu_dev(2 * NF), *d_pre = cu_dev(2 * NF);
    float *d_pre32 = cu_dev(sizeof(float) * NF);
    cu_poison(d_out, 2 * NF), cu_poison(d_pre, 2 * NF);
    pw_matmul_gelu_forward_bf16_cuda(d_out, d_pre, NULL, d_x, d_w1, d_b1, N, C, F, 0);
    cu_compare("MLP forward: GELU's output", widened_dev(d_out, NF), widened_host(out, NF), NF,
               CU_TOL_BF16);
    cu_compare("MLP forward: its input kept", widened_dev(d_pre, NF), widened_host(pre, NF), NF,
               CU_TOL_BF16);
    for (int given = 0; given < 2; given++) {
        cu_poison(d_out, 2 * NF);
        pw_matmul_gelu_forward_bf16_cuda(d_out, NULL, given ? d_pre32 : NULL, d_x, d_w1, d_b1, N,
                                         C, F, 0);
        cu_compare(given ? "MLP forward, input not kept (buffer given)"
                         : "MLP forward, input not kept (scratch)",
                   widened_dev(d_out, NF), widened_host(out, NF), NF, CU_TOL_BF16);
    }

    /* the down-projection F -> C: its input GELU's output, dout's rows 2 C apart */
    float *dw = cu_copy(dw0, FC), *db = cu_copy(db0, C);
    uint16_t *dpre = cu_host(2 * NF);
    o->matmul_backward_gelu_bf16(o, dpre, pre, NULL, dw, db, NULL, dout16, 2 * (size_t)C, NULL,
                                 out, NULL, w216, N, F, C);
    pw_bf16 *d_gout = cu_upload(out, 2 * NF), *d_dpre = cu_dev(2 * NF);
    float *d_dw = cu_upload(dw0, sizeof(float) * FC), *d_db = cu_upload(db0, sizeof(float) * C);
    for (int given = 0; given < 2; given++) {
        cu_poison(d_dpre, 2 * NF);
        pw_matmul_backward_gelu_bf16_cuda(d_dpre, d_pre, given ? d_pre32 : NULL,
                                          given ? NULL : d_dw, given ? NULL : d_db, d_dout,
                                          2 * C, d_gout, d_w2, N, F, C, 0);
        cu_compare(given ? "MLP backward: dpre (buffer given, no dweight)"
                         : "MLP backward: dpre",
                   widened_dev(d_dpre, NF), widened_host(dpre, NF), NF, CU_TOL_BF16);
    }
    cu_compare("MLP backward: dweight accumulated", d_dw, dw, FC, CU_TOL_BF16);
    cu_compare("MLP backward: dbias accumulated", d_db, db, C, CU_TOL_BF16);
    pw_cuda_gelu_epilogue_calls(&f1, &u1);
    pw_cuda_set_lt_gelu(was);
    printf("  GELU epilogue: %lu calls fused, %lu not\n", f1 - f0, u1 - u0);
    cu_release();
    return f1 - f0;
}

/* A decode step's products (a few hundred rows, bf16 operands, float32 results as a cache pass
 * makes them and bfloat16 ones, with a bias and without) with K split (pw_cuda_set_lt_split,
 * the hook) and with the algorithms timed (pw_cuda_set_lt_tune, whose candidates include split
 * forms, summed apart or in a float32 output itself, and which takes the products without a
 * bias through cuBLASLt too): each against the CPU on the same rounded operands (float32
 * results within float32's bound), each twice for the same bits (a split's parts are summed in
 * a fixed order). Every setting makes a plan of its own. Returns the plans that split K:
 * cuBLASLt may refuse a split for a shape, and then the product runs whole, which the
 * comparison covers alike. */
/* A decode product's operands: random input (N x C) and weights (OC x C) rounded to bfloat16,
 * a float32 bias, on the host (the rounded values widened) and on the device; and the CPU's
 * results on the rounded operands, ref[0] with the bias, ref[1] without. */
typedef struct DecOps {
    float *xr, *wr, *bias, *ref[2];
    pw_bf16 *d_x, *d_w;
    float *d_bias;
} DecOps;

static DecOps dec_ops(int N, int C, int OC, unsigned long long *rng)
{
    size_t NC = (size_t)N * C, NO = (size_t)N * OC, OCC = (size_t)OC * C;
    DecOps o;
    float *x = cu_randn(NC, 1.0, rng), *w = cu_randn(OCC, 0.1, rng);
    o.bias = cu_randn(OC, 0.5, rng);
    o.xr = cu_host(sizeof(float) * NC);
    o.wr = cu_host(sizeof(float) * OCC);
    uint16_t *x16 = cu_bf16_of(x, NC, o.xr), *w16 = cu_bf16_of(w, OCC, o.wr);
    o.d_x = cu_upload(x16, 2 * NC);
    o.d_w = cu_upload(w16, 2 * OCC);
    o.d_bias = cu_upload(o.bias, sizeof(float) * OC);
    for (int nb = 0; nb < 2; nb++) {
        o.ref[nb] = cu_host(sizeof(float) * NO);
        pw_matmul_forward(o.ref[nb], o.xr, o.wr, nb ? NULL : o.bias, N, C, OC);
    }
    return o;
}

static unsigned long decode_products(int N, int C, int OC, unsigned long long *rng)
{
    printf("decode products N=%d C=%d OC=%d\n", N, C, OC);
    size_t NO = (size_t)N * OC;
    DecOps op = dec_ops(N, C, OC, rng);
    pw_bf16 *d_x = op.d_x, *d_w = op.d_w;
    float *d_bias = op.d_bias, **ref = op.ref;
    float *d_out = cu_dev(sizeof(float) * NO);
    pw_bf16 *d_out16 = cu_dev(2 * NO);
    char *first = cu_host(sizeof(float) * NO), *again = cu_host(sizeof(float) * NO);
    unsigned long p0, s0, p1, s1;
    pw_cuda_lt_plans(&p0, &s0);
    const int split[3] = {4, 16, 0}; /* 0: the algorithms timed */
    /* two float32 sums of K terms in different orders part by about sqrt(K) roundings (2^-24
     * each): at K = 11528 an H200 gave 1.45e-5 of the largest of 64 results, for every setting
     * alike; four times that growth, and never under float32's usual bound */
    const double f32_tol = fmax(CU_TOL_F32, 4.0 * sqrt((double)C) * 0x1p-24);
    for (int i = 0; i < 3; i++)
        for (int nb = 0; nb < 2; nb++)
            for (int o16 = 0; o16 < 2; o16++) {
                char what[64];
                snprintf(what, sizeof what, "%s%.0d, %s, %s out",
                         split[i] ? "K split in " : "timed", split[i], nb ? "no bias" : "bias",
                         o16 ? "bf16" : "float32");
                const float *bb = nb ? NULL : d_bias;
                size_t bytes = o16 ? 2 * NO : sizeof(float) * NO;
                for (int r = 0; r < 2; r++) {
                    pw_cuda_set_lt_split(split[i]);
                    pw_cuda_set_lt_tune(!split[i]);
                    cu_poison(o16 ? (void *)d_out16 : (void *)d_out, bytes);
                    if (o16)
                        pw_matmul_forward_bf16_out_cuda(d_out16, d_x, d_w, bb, N, C, OC, 0);
                    else
                        pw_matmul_forward_bf16_cuda(d_out, d_x, d_w, bb, N, C, OC, 0);
                    pw_cuda_set_lt_split(0);
                    pw_cuda_set_lt_tune(0);
                    cu_download(r ? again : first, o16 ? (void *)d_out16 : (void *)d_out, bytes);
                }
                cu_comparef(o16 ? widened_dev(d_out16, NO) : d_out, ref[nb], NO,
                            o16 ? CU_TOL_BF16 : f32_tol, "%s", what);
                CHECK(!memcmp(first, again, bytes), "%s: a second call gave other bits", what);
            }
    pw_cuda_lt_plans(&p1, &s1);
    printf("  %lu plans made, %lu of them split K\n", p1 - p0, s1 - s0);
    /* 12 keys; a bfloat16 product cuBLASLt has no algorithm for goes the float32 way, a 13th */
    CHECK(p1 - p0 >= 12, "each setting, bias and output makes its own plan: %lu plans, 12 wanted",
          p1 - p0);
    cu_release();
    return s1 - s0;
}

/* The backward's products through cuBLASLt (pw_cuda_set_lt_all), with the heuristic's plans
 * and then with each timed (pw_cuda_set_lt_tune): a weight gradient adds to its output, so its
 * timing runs write a scratch, and the gradient must come out as the CPU's accumulation (were
 * the timing's runs written into it, the old gradient would be lost and the product counted
 * twice). float32 and bf16 operands, every gradient added to random values; each setting makes
 * plans of its own for dinp and dweight. A shape of the training step's (768 x 768 over 2048
 * rows: K a multiple of 64, split forms offered) and an odd one. */
static void lt_all_backward(int N, int C, int OC, unsigned long long *rng)
{
    printf("backward through cuBLASLt N=%d C=%d OC=%d\n", N, C, OC);
    size_t NC = (size_t)N * C, NO = (size_t)N * OC, OCC = (size_t)OC * C;
    float *inp = cu_randn(NC, 1.0, rng), *w = cu_randn(OCC, 0.1, rng);
    float *dout = cu_randn(NO, 1.0, rng);
    float *dinp0 = cu_randn(NC, 1.0, rng), *dw0 = cu_randn(OCC, 1.0, rng);
    float *dinp = cu_copy(dinp0, NC), *dw = cu_copy(dw0, OCC);
    float *d_inp = cu_upload(inp, sizeof(float) * NC), *d_w = cu_upload(w, sizeof(float) * OCC);
    float *d_dout = cu_upload(dout, sizeof(float) * NO);
    pw_bf16 *h_dout = to_bf16_dev(d_dout, NO), *h_inp = to_bf16_dev(d_inp, NC);
    pw_bf16 *h_w = to_bf16_dev(d_w, OCC);
    pw_matmul_backward(dinp, dw, NULL, dout, inp, w, N, C, OC);
    /* float32 sums of up to N terms in another order (a split's parts): decode_products' bound */
    int K = N > OC ? N : OC;
    const double f32_tol = fmax(CU_TOL_F32, 4.0 * sqrt((double)K) * 0x1p-24);
    pw_cuda_set_lt_all(1);
    for (int tune = 0; tune < 2; tune++) {
        unsigned long p0, p1;
        pw_cuda_lt_plans(&p0, NULL);
        pw_cuda_set_lt_tune(tune);
        float *d_dinp = cu_upload(dinp0, sizeof(float) * NC),
              *d_dw = cu_upload(dw0, sizeof(float) * OCC);
        pw_matmul_backward_cuda(d_dinp, d_dw, NULL, d_dout, d_inp, d_w, N, C, OC, 0, 0);
        cu_comparef(d_dinp, dinp, NC, f32_tol, "fp32 dinp (+=)%s", tune ? ", timed" : "");
        cu_comparef(d_dw, dw, OCC, f32_tol, "fp32 dweight (+=)%s", tune ? ", timed" : "");
        float *b_dinp = cu_upload(dinp0, sizeof(float) * NC),
              *b_dw = cu_upload(dw0, sizeof(float) * OCC);
        pw_matmul_backward_bf16_cuda(b_dinp, b_dw, NULL, h_dout, OC, h_inp, h_w, N, C, OC, 0, 0);
        cu_comparef(b_dinp, dinp, NC, CU_TOL_BF16, "bf16 dinp (+=)%s", tune ? ", timed" : "");
        cu_comparef(b_dw, dw, OCC, CU_TOL_BF16, "bf16 dweight (+=)%s", tune ? ", timed" : "");
        pw_cuda_set_lt_tune(0);
        pw_cuda_lt_plans(&p1, NULL);
        printf("  %lu plans made\n", p1 - p0);
        /* dinp and dweight at float32 and bf16: 4 keys (a shape cuBLASLt has no algorithm for
         * goes to cublasGemmEx, which the comparisons cover alike) */
        CHECK(p1 - p0 >= 4, "%s: %lu plans made, 4 wanted", tune ? "timed" : "heuristic",
              p1 - p0);
    }
    pw_cuda_set_lt_all(0);
    /* the report: printed, and at K a multiple of 64 (split forms among the candidates) a
     * timed plan of a product that adds to its output, so the weight gradient was timed */
    FILE *f = tmpfile();
    CHECK(f != NULL, "no temporary file for the plans' report");
    if (f) {
        pw_cuda_lt_plan_report(f);
        rewind(f);
        char line[512];
        int timed_added = 0;
        while (fgets(line, sizeof line, f)) {
            fputs(line, stdout);
            timed_added += strstr(line, " added ") && strstr(line, " timed ");
        }
        fclose(f);
        if (N % 64 == 0)
            CHECK(timed_added > 0, "N=%d: no weight gradient's plan was timed", N);
    }
    cu_release();
}

/* A few-row epilogue's bfloat16 output (d_act, n values) bit for bit its kernel's (d_want), and
 * the one call (`calls` taken) that made it through the epilogue */
static void same_epilogue(const char *name, const pw_bf16 *d_act, const pw_bf16 *d_want, size_t n,
                          unsigned long calls)
{
    uint16_t *got = cu_host(2 * n), *want = cu_host(2 * n);
    cu_download(got, d_act, 2 * n);
    cu_download(want, d_want, 2 * n);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += got[i] != want[i];
    printf("  %s epilogue: %zu of %zu differ from %s's kernel (%lu call took it)\n", name, bad, n,
           name, calls);
    CHECK(bad == 0 && calls == 1, "few-row kernel's %s epilogue: %zu of %zu differ, %lu calls "
          "took it", name, bad, n, calls);
}

/* The same products through the few-row kernel of our own (pw_cuda_set_skinny,
 * skinny_kernels.cuh: K split in parts summed in part order by the last block of each tile),
 * float32 out, with a bias and without: against the CPU within float32's bound, twice for the
 * same bits (the tiles' counters back at zero after each launch). Returns the calls it took.
 * Where it took them, GPT-2's MLP entry with GELU (no pre-activation kept, as a cache pass
 * calls it) goes through the kernel's GELU epilogue: bit for bit GELU's own kernel on the
 * kernel's float32 output; and the Llama family's entry with SwiGLU (the weight's first OC / 2
 * rows the gates, the rest the ups; no bias) through its SwiGLU epilogue: bit for bit SwiGLU's
 * own kernel on the float32 output without a bias. */
static unsigned long skinny_products(int N, int C, int OC, unsigned long long *rng)
{
    printf("few-row kernel N=%d C=%d OC=%d\n", N, C, OC);
    size_t NO = (size_t)N * OC;
    DecOps op = dec_ops(N, C, OC, rng);
    float *d_out = cu_dev(sizeof(float) * NO);
    char *first = cu_host(sizeof(float) * NO), *again = cu_host(sizeof(float) * NO);
    unsigned long c0 = pw_cuda_skinny_calls();
    for (int nb = 0; nb < 2; nb++) {
        for (int r = 0; r < 2; r++) {
            pw_cuda_set_skinny(1);
            cu_poison(d_out, sizeof(float) * NO);
            pw_matmul_forward_bf16_cuda(d_out, op.d_x, op.d_w, nb ? NULL : op.d_bias, N, C, OC, 0);
            pw_cuda_set_skinny(0);
            cu_download(r ? again : first, d_out, sizeof(float) * NO);
        }
        cu_comparef(d_out, op.ref[nb], NO, CU_TOL_F32, "few-row kernel, %s",
                    nb ? "no bias" : "bias");
        CHECK(!memcmp(first, again, sizeof(float) * NO), "few-row kernel, %s: a second call "
              "gave other bits", nb ? "no bias" : "bias");
    }
    unsigned long c1 = pw_cuda_skinny_calls();
    printf("  %lu of 4 calls took the kernel\n", c1 - c0);
    if (c1 - c0 == 4) {
        pw_bf16 *d_act = cu_dev(2 * NO), *d_want = cu_dev(2 * NO);
        unsigned long g0 = pw_cuda_skinny_gelu_calls();
        pw_cuda_set_skinny(1);
        pw_matmul_forward_bf16_cuda(d_out, op.d_x, op.d_w, op.d_bias, N, C, OC, 0);
        pw_gelu_forward_bf16_cuda(d_want, NULL, d_out, NO, 0);
        cu_poison(d_act, 2 * NO);
        pw_matmul_gelu_forward_bf16_cuda(d_act, NULL, NULL, op.d_x, op.d_w, op.d_bias, N, C, OC,
                                         0);
        pw_cuda_set_skinny(0);
        same_epilogue("GELU", d_act, d_want, NO, pw_cuda_skinny_gelu_calls() - g0);
    }
    if (c1 - c0 == 4 && OC % 8 == 0) {
        int F = OC / 2;
        size_t NF = (size_t)N * F;
        pw_bf16 *d_act = cu_dev(2 * NF), *d_want = cu_dev(2 * NF);
        unsigned long s0 = pw_cuda_skinny_swiglu_calls();
        pw_cuda_set_skinny(1);
        pw_matmul_forward_bf16_cuda(d_out, op.d_x, op.d_w, NULL, N, C, OC, 0);
        pw_swiglu_forward_bf16_cuda(d_want, NULL, d_out, N, F, 0);
        cu_poison(d_act, 2 * NF);
        pw_matmul_swiglu_forward_bf16_cuda(d_act, NULL, op.d_x, op.d_w, N, C, F, 0);
        pw_cuda_set_skinny(0);
        same_epilogue("SwiGLU", d_act, d_want, NF, pw_cuda_skinny_swiglu_calls() - s0);
    }
    cu_release();
    return c1 - c0;
}

/* The largest shortfall of n device floats below `want` (0: every one is exactly want). */
static double short_of(const float *d, size_t n, double want)
{
    float *h = cu_host(sizeof(float) * n);
    cu_download(h, d, sizeof(float) * n);
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double gap = h[i] == h[i] ? want - h[i] : want; /* NaN: as if nothing was summed */
        if (gap < 0.0) gap = -gap;
        if (gap > worst) worst = gap;
    }
    return worst;
}

/* Sums whose length leaves a tail past a multiple of 64: all-ones bfloat16 operands, so every
 * result is exactly the length (float32 holds these whole numbers exactly), and a product that
 * left values of k out comes back short by a whole number. cuBLASLt's split-K has been reported
 * to drop the last K mod 64 values at K = 8648, 11528 and 57608 on H100s for shapes its own
 * heuristic splits (lt_plan.cu): here the bf16 forward over C = K (no bias: cublasGemmEx; a zero
 * bias: cuBLASLt) and the weight gradient over N = K rows, to 1 and 8 outputs, 8 rows. */
static void k_tails(void)
{
    enum { R = 8, KMAX = 57608 };
    const int Ks[3] = {8648, 11528, KMAX};
    uint16_t *h = cu_host(sizeof(uint16_t) * R * KMAX);
    for (size_t i = 0; i < (size_t)R * KMAX; i++) h[i] = 0x3f80; /* 1.0 in bfloat16 */
    pw_bf16 *ones = cu_upload(h, sizeof(uint16_t) * R * KMAX);
    float *zero = cu_dev(sizeof(float) * R), *out = cu_dev(sizeof(float) * R * R);
    PW_CUDA_CHECK(cudaMemset(zero, 0, sizeof(float) * R));
    double worst = 0.0;
    for (int i = 0; i < 3; i++)
        for (int w = 1; w <= R; w += R - 1) {
            const int K = Ks[i];
            for (int b = 0; b < 2; b++) {
                cu_poison(out, sizeof(float) * R * w);
                pw_matmul_forward_bf16_cuda(out, ones, ones, b ? zero : NULL, R, K, w, 0);
                double gap = short_of(out, (size_t)R * w, K);
                worst = gap > worst ? gap : worst;
                CHECK(gap == 0.0, "forward over K = %d to %d outputs (%s): short by up to %g",
                      K, w, b ? "zero bias" : "no bias", gap);
            }
            PW_CUDA_CHECK(cudaMemset(out, 0, sizeof(float) * R * w));
            pw_matmul_backward_bf16_cuda(NULL, out, NULL, ones, w, ones, ones, K, R, w, 0, 0);
            double gap = short_of(out, (size_t)R * w, K);
            worst = gap > worst ? gap : worst;
            CHECK(gap == 0.0, "weight gradient over N = %d rows to %d x %d: short by up to %g", K,
                  w, R, gap);
        }
    printf("sums over K = 8648, 11528, 57608 (forward, bias or not, and weight gradient): "
           "largest shortfall %g\n", worst);
    cu_release();
}

int main(void)
{
    cu_require_gpu("test_cuda_matmul");
    unsigned long long rng = 13;
    unsigned long fused0, unfused0, fused1, unfused1;
    pw_cuda_epilogue_calls(&fused0, &unfused0);
    run(64, 768, 2304, &rng);
    pw_cuda_epilogue_calls(&fused1, &unfused1);
    /* aligned operands and bias: cuBLASLt has an algorithm for the fp32, TF32 and bf16 forwards
     * (4 fused calls); the epilogue off (2), the misaligned bias (1) and the stream's own
     * forward with a fresh handle (fused too) make the rest */
    printf("bias epilogue: %lu fused, %lu seeded\n", fused1 - fused0, unfused1 - unfused0);
    CHECK(fused1 - fused0 >= 4, "the bias epilogue ran %lu times on aligned operands, 4 wanted",
          fused1 - fused0);
    run(37, 70, 129, &rng); /* odd sizes: no alignment to lean on */
    run(1000, 768, 768, &rng); /* 16 row chunks in the dbias sum */
    run(8, 768, 50257, &rng); /* an LM-head width */
    /* GPT-2's MLP (F = 4 C, a multiple of 8: the epilogue's aux wants it), a batch and a decode */
    CHECK(mlp(256, 768, 3072, 0, &rng) == 0, "GELU epilogue taken while switched off");
    unsigned long fused = mlp(256, 768, 3072, 1, &rng);
    /* three forwards and two backwards; the claim being tested is that cuBLASLt serves them */
    CHECK(fused == 5, "GELU epilogue took %lu of 5 calls on aligned operands", fused);
    mlp(64, 768, 3072, 1, &rng);
    CHECK(mlp(37, 70, 140 + 2, 1, &rng) == 0, "F = 142 (not a multiple of 8) took the epilogue");
    /* GPT-2's projections at a decode step of 256 rows (12 tiles of 128 x 128 walking K = 3072
     * whole), Qwen2.5-0.5B's down-projection at 64, and odd sizes */
    unsigned long split = decode_products(256, 3072, 768, &rng);
    split += decode_products(256, 768, 768, &rng);
    split += decode_products(64, 4864, 896, &rng);
    decode_products(37, 70, 129, &rng);
    /* K = 11528, 8 past a multiple of 64: where cuBLASLt's heuristic has been reported to split
     * K in 9 and leave the 8 out (lt_plan.cu), which asks it for no split there and offers
     * none */
    decode_products(8, 11528, 8, &rng);
    k_tails();
    lt_all_backward(2048, 768, 768, &rng);
    lt_all_backward(37, 70, 129, &rng);
    printf("decode products: %lu plans split K\n", split);
    /* GPT-2's four decode products at 256 rows (K in 8, 6, 4 and 3 parts on an H100), Qwen's
     * down-projection at 64 and its [gate | up] at 256 (one part: SwiGLU in the one block's
     * epilogue), rows and outputs off the tile; C = 70 and the LM head are cuBLAS's */
    const int sk[7][3] = {{256, 3072, 768}, {256, 768, 768}, {256, 768, 2304},
                          {256, 768, 3072}, {64, 4864, 896}, {37, 96, 132}, {256, 896, 9728}};
    for (int i = 0; i < 7; i++)
        CHECK(skinny_products(sk[i][0], sk[i][1], sk[i][2], &rng) == 4,
              "the few-row kernel did not take N=%d C=%d OC=%d", sk[i][0], sk[i][1], sk[i][2]);
    CHECK(skinny_products(37, 70, 132, &rng) == 0, "the few-row kernel took C = 70");
    CHECK(skinny_products(256, 768, 50304, &rng) == 0, "the few-row kernel took an LM head");
    pw_cuda_release();
    return pw_test_done("test_cuda_matmul");
}
