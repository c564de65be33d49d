/* test_cuda_swiglu.c: the CUDA SwiGLU against the CPU twin on the same random data: forward
 * into a poisoned output, backward accumulating into pre-filled gradients; the bf16 forms (a
 * bf16 model's: [gate | up] and the output in bfloat16) give the float32 kernels' results on the
 * widened input, rounded, bit for bit, and the same gradient, set into a poisoned one. */
#include "cutest.h"

static void run(int N, int F, unsigned long long *rng)
{
    printf("N=%d F=%d\n", N, F);
    size_t n = (size_t)N * F, n2 = 2 * n;
    float *gu = cu_randn(n2, 3.0, rng), *dout = cu_randn(n, 1.0, rng);
    gu[0] = -120.0f; /* e^-g overflows */
    float *dgu = cu_randn(n2, 1.0, rng), *out = cu_host(sizeof(float) * n);
    float *d_gu = cu_upload(gu, sizeof(float) * n2), *d_dout = cu_upload(dout, sizeof(float) * n);
    float *d_dgu = cu_upload(dgu, sizeof(float) * n2), *d_out = cu_dev(sizeof(float) * n);
    cu_poison(d_out, sizeof(float) * n);
    pw_swiglu_forward(out, gu, N, F);
    pw_swiglu_forward_cuda(d_out, d_gu, N, F, 0);
    cu_compare("forward out", d_out, out, n, CU_TOL_F32);
    pw_swiglu_backward(dgu, gu, dout, N, F);
    pw_swiglu_backward_cuda(d_dgu, d_gu, d_dout, N, F, 0);
    cu_compare("backward dgate_up (+=)", d_dgu, dgu, n2, CU_TOL_F32);
    float *guw = cu_host(sizeof(float) * n2);
    uint16_t *gu16 = cu_bf16_of(gu, n2, guw);
    float *d_guw = cu_upload(guw, sizeof(float) * n2), *d_ref = cu_dev(sizeof(float) * n);
    uint16_t *d_gu16 = cu_upload(gu16, sizeof(uint16_t) * n2);
    uint16_t *d_out16 = cu_dev(sizeof(uint16_t) * n + 2);
    pw_swiglu_forward_cuda(d_ref, d_guw, N, F, 0);
    pw_swiglu_forward_bf16_cuda(d_out16, d_gu16, NULL, N, F, 0);
    cu_compare_bf16("forward (bf16 in and out)", d_out16, d_ref, n);
    /* on the float32 input rounded in the kernel: the same bits, the rounding kept */
    uint16_t *h_out16 = cu_host(sizeof(uint16_t) * n + 2);
    cu_download(h_out16, d_out16, sizeof(uint16_t) * n);
    uint16_t *d_f16 = cu_dev(sizeof(uint16_t) * n + 2), *d_keep = cu_dev(sizeof(uint16_t) * n2 + 2);
    cu_poison(d_f16, sizeof(uint16_t) * n);
    cu_poison(d_keep, sizeof(uint16_t) * n2);
    pw_swiglu_forward_bf16_cuda(d_f16, d_keep, d_gu, N, F, 0);
    cu_same_bits16("forward (float32 in, rounded)", d_f16, h_out16, n);
    cu_same_bits16("forward: the rounding kept", d_keep, gu16, n2);
    /* the bf16 form sets its gradient rounded (a poisoned one is never read): the float32
     * kernel's result added to zeros, rounded, bit for bit */
    float *d_gw = cu_dev(sizeof(float) * n2);
    uint16_t *d_g16 = cu_dev(sizeof(uint16_t) * n2 + 2);
    PW_CUDA_CHECK(cudaMemset(d_gw, 0, sizeof(float) * n2));
    cu_poison(d_g16, sizeof(uint16_t) * n2);
    pw_swiglu_backward_cuda(d_gw, d_guw, d_dout, N, F, 0);
    pw_swiglu_backward_bf16_cuda(d_g16, d_gu16, d_dout, N, F, 0);
    cu_compare_bf16("backward (bf16 in, set)", d_g16, d_gw, n2);
    cu_release();
}

int main(void)
{
    cu_require_gpu("test_cuda_swiglu");
    unsigned long long rng = 23;
    run(5, 37, &rng);
    run(64, 1536, &rng);
    return pw_test_done("test_cuda_swiglu");
}
