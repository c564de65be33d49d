/* test_cuda_attention.c: the CUDA attention against the CPU twin on the same random data, the
 * fused kernels and the GEMM path (pw_cuda_set_flash): NULL mask, left padding of different
 * lengths (a padding-only row too), T up to 1024, GPT-2 124M's 12 heads, poisoned outputs, and
 * the backward accumulating into pre-filled gradients. */
#include "cutest.h"

static void run(int B, int T, int C, int NH, const int *pads, int npads, int use_mask,
                unsigned long long *rng)
{
    printf("B=%d T=%d C=%d NH=%d mask=%d\n", B, T, C, NH, use_mask);
    size_t BT = (size_t)B * T, n3 = BT * 3 * C, nout = BT * C, natt = (size_t)B * NH * T /* lse */;
    int *mask = use_mask ? cu_left_mask(B, T, pads, npads) : NULL;
    float *qkv = cu_randn(n3, 1.0, rng), *dout = cu_randn(nout, 1.0, rng);
    float *dqkv0 = cu_randn(n3, 1.0, rng);
    float *out = cu_host(sizeof(float) * nout), *att = cu_host(sizeof(float) * natt);
    pw_attention_forward(out, att, qkv, mask, B, T, C, NH);
    float *dqkv = cu_copy(dqkv0, n3);
    pw_attention_backward(dqkv, dout, qkv, att, mask, B, T, C, NH);

    int *d_mask = mask ? cu_upload(mask, sizeof(int) * BT) : NULL;
    float *d_qkv = cu_upload(qkv, sizeof(float) * n3),
          *d_dout = cu_upload(dout, sizeof(float) * nout);
    float *d_out = cu_dev(sizeof(float) * nout), *d_att = cu_dev(sizeof(float) * natt);
    cu_poison(d_out, sizeof(float) * nout);
    cu_poison(d_att, sizeof(float) * natt);
    pw_attention_forward_cuda(d_out, d_att, d_qkv, d_mask, B, T, C, NH, 0);
    cu_compare("forward out", d_out, out, nout, CU_TOL_F32);
    cu_compare("forward lse", d_att, att, natt, CU_TOL_F32);

    /* padding queries: output rows exactly 0, as the contract says */
    if (mask) {
        float *h_out = cu_host(sizeof(float) * nout);
        cu_download(h_out, d_out, sizeof(float) * nout);
        size_t nonzero = 0;
        for (size_t bt = 0; bt < BT; bt++)
            if (!mask[bt])
                for (int c = 0; c < C; c++) nonzero += h_out[bt * C + c] != 0.0f;
        CHECK(nonzero == 0, "%zu output values of padding queries are not 0", nonzero);
    }

    /* the backward reads the CPU's lse, so that only the backward itself is compared */
    float *d_attc = cu_upload(att, sizeof(float) * natt);
    float *d_dqkv = cu_upload(dqkv0, sizeof(float) * n3);
    pw_attention_backward_cuda(d_dqkv, d_dout, d_qkv, d_attc, d_mask, B, T, C, NH, 0);
    cu_compare("backward dqkv (+=)", d_dqkv, dqkv, n3, CU_TOL_F32);

    cu_release();
}

int main(void)
{
    cu_require_gpu("test_cuda_attention");
    unsigned long long rng = 14;
    int pads[] = {0, 5, 33, 64, 1};
    int all_pad[] = {3, 64}; /* row 1 is padding only */
    int long_pads[] = {0, 700};
    /* the fused kernels (the default), then the GEMM path */
    for (int flash = 1; flash >= 0; flash--) {
        pw_cuda_set_flash(flash);
        printf("%s path\n", flash ? "fused" : "GEMM");
        run(2, 16, 32, 2, pads, 5, 0, &rng);
        run(5, 64, 96, 3, pads, 5, 1, &rng);
        run(2, 64, 64, 4, all_pad, 2, 1, &rng);
        run(3, 150, 48, 2, pads, 5, 1, &rng); /* T not a multiple of the warp */
        run(2, 1024, 64, 2, long_pads, 2, 1, &rng);
        run(1, 1024, 128, 2, long_pads, 1, 0, &rng);
        run(4, 1024, 768, 12, long_pads, 2, 1, &rng); /* GPT-2 124M's heads */
    }
    pw_cuda_release();
    return pw_test_done("test_cuda_attention");
}
