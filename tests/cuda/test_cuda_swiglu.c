/* test_cuda_swiglu.c: the CUDA SwiGLU against the CPU twin on the same random data: forward
 * into a poisoned output, its bf16 form (the float32 result rounded, bit for bit), backward
 * accumulating into pre-filled gradients. */
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
    uint16_t *d_out16 = cu_dev(sizeof(uint16_t) * n + 2);
    pw_swiglu_forward_bf16_cuda(d_out16, d_gu, N, F, 0);
    cu_compare_bf16("forward out (bf16)", d_out16, d_out, n);
    pw_swiglu_backward(dgu, gu, dout, N, F);
    pw_swiglu_backward_cuda(d_dgu, d_gu, d_dout, N, F, 0);
    cu_compare("backward dgate_up (+=)", d_dgu, dgu, n2, CU_TOL_F32);
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
