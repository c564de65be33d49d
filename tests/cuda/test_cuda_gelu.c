/* test_cuda_gelu.c: the CUDA GELU against the CPU twin on the same random data, including the
 * far tails; the backward accumulates into a pre-filled gradient; the bf16 forms (a bf16
 * model's: input and output in bfloat16) give the float32 kernels' results on the widened
 * input, rounded, bit for bit, and the same gradient, set into a poisoned one. */
#include "cutest.h"

int main(void)
{
    cu_require_gpu("test_cuda_gelu");
    unsigned long long rng = 15;
    size_t sizes[] = {1, 1000, 3 * 1024 * 1024 + 7};
    for (int k = 0; k < 3; k++) {
        size_t N = sizes[k];
        printf("N=%zu\n", N);
        float *inp = cu_randn(N, 3.0, &rng), *dout = cu_randn(N, 1.0, &rng);
        float *dinp0 = cu_randn(N, 1.0, &rng);
        if (N > 4) {
            inp[0] = -20.0f; /* tails: sigmoid near 0 and near 1 */
            inp[1] = 20.0f;
            inp[2] = 0.0f;
        }
        float *out = cu_host(sizeof(float) * N), *dinp = cu_copy(dinp0, N);
        pw_gelu_forward(out, inp, N);
        pw_gelu_backward(dinp, inp, dout, N);
        float *d_inp = cu_upload(inp, sizeof(float) * N),
              *d_dout = cu_upload(dout, sizeof(float) * N);
        float *d_out = cu_dev(sizeof(float) * N), *d_dinp = cu_upload(dinp0, sizeof(float) * N);
        cu_poison(d_out, sizeof(float) * N);
        pw_gelu_forward_cuda(d_out, d_inp, N, 0);
        pw_gelu_backward_cuda(d_dinp, d_inp, d_dout, N, 0);
        cu_compare("forward", d_out, out, N, CU_TOL_F32);
        float *xw = cu_host(sizeof(float) * N);
        uint16_t *x16 = cu_bf16_of(inp, N, xw);
        float *d_xw = cu_upload(xw, sizeof(float) * N), *d_ref = cu_dev(sizeof(float) * N);
        uint16_t *d_x16 = cu_upload(x16, sizeof(uint16_t) * N);
        uint16_t *d_out16 = cu_dev(sizeof(uint16_t) * N + 2);
        pw_gelu_forward_cuda(d_ref, d_xw, N, 0);
        pw_gelu_forward_bf16_cuda(d_out16, d_x16, NULL, N, 0);
        cu_compare_bf16("forward (bf16 in and out)", d_out16, d_ref, N);
        /* on the float32 input rounded in the kernel: the same bits, the rounding kept */
        uint16_t *h_out16 = cu_host(sizeof(uint16_t) * N + 2);
        cu_download(h_out16, d_out16, sizeof(uint16_t) * N);
        uint16_t *d_f16 = cu_dev(sizeof(uint16_t) * N + 2);
        uint16_t *d_keep = cu_dev(sizeof(uint16_t) * N + 2);
        cu_poison(d_f16, sizeof(uint16_t) * N);
        cu_poison(d_keep, sizeof(uint16_t) * N);
        pw_gelu_forward_bf16_cuda(d_f16, d_keep, d_inp, N, 0);
        cu_same_bits16("forward (float32 in, rounded)", d_f16, h_out16, N);
        cu_same_bits16("forward: the rounding kept", d_keep, x16, N);
        /* the bf16 form sets its gradient rounded (a poisoned one is never read): the float32
         * kernel's result added to zeros, rounded, bit for bit */
        float *d_gw = cu_dev(sizeof(float) * N);
        uint16_t *d_g16 = cu_dev(sizeof(uint16_t) * N + 2);
        PW_CUDA_CHECK(cudaMemset(d_gw, 0, sizeof(float) * N));
        cu_poison(d_g16, sizeof(uint16_t) * N);
        pw_gelu_backward_cuda(d_gw, d_xw, d_dout, N, 0);
        pw_gelu_backward_bf16_cuda(d_g16, d_x16, d_dout, N, 0);
        cu_compare_bf16("backward (bf16 in, set)", d_g16, d_gw, N);
        cu_compare("backward dinp (+=)", d_dinp, dinp, N, CU_TOL_F32);
        cu_release();
    }
    return pw_test_done("test_cuda_gelu");
}
