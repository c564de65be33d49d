/* gelu.cu: GPT-2's GELU (the tanh form, "gelu_new") on the GPU, forward and backward (twin of
 * cpu/gelu.c, in the same x * sigmoid(2u) form). */
#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "gelu_kernels.cuh"

static void forward(float *out, pw_bf16 *out16, const float *inp, pw_bf16 *inp16, int round,
                    size_t N, cudaStream_t stream)
{
    if (N == 0) return;
    if (!out && !inp && gelu_vec_ok(out16, inp16, NULL)) { /* bfloat16 in and out */
        pw_launch(gelu_forward_bf16_vec_kernel, pw_ew_blocks(pw_vec_units(N)), PW_EW_THREADS, 0,
                  stream, out16, inp16, N);
    } else {
        pw_launch(gelu_forward_kernel, pw_ew_blocks(N), PW_EW_THREADS, 0, stream, out, out16, inp,
                  inp16, round, N);
    }
}

static void backward(float *dinp, pw_bf16 *dinp16, const float *inp, const pw_bf16 *inp16,
                     const float *dout, size_t N, cudaStream_t stream)
{
    if (N == 0) return;
    /* the bf16 form sets dinp rounded, the float32 one adds to it (pw_ops.h) */
    if (!dinp && !inp && gelu_vec_ok(dinp16, inp16, dout)) {
        gelu_backward_bf16_vec_kernel<<<pw_ew_blocks(pw_vec_units(N)), PW_EW_THREADS, 0, stream>>>(
            dinp16, inp16, dout, N);
    } else {
        gelu_backward_kernel<<<pw_ew_blocks(N), PW_EW_THREADS, 0, stream>>>(dinp, dinp16, inp,
                                                                             inp16, dout, N);
    }
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_gelu_forward_cuda(float *out, const float *inp, size_t N, cudaStream_t stream)
{
    forward(out, NULL, inp, NULL, 0, N, stream);
}

extern "C" void pw_gelu_forward_bf16_cuda(pw_bf16 *out, pw_bf16 *inp16, const float *inp,
                                          size_t N, cudaStream_t stream)
{
    forward(NULL, out, inp, inp16, 1, N, stream);
}

extern "C" void pw_gelu_backward_cuda(float *dinp, const float *inp, const float *dout, size_t N,
                                      cudaStream_t stream)
{
    backward(dinp, NULL, inp, NULL, dout, N, stream);
}

extern "C" void pw_gelu_backward_bf16_cuda(pw_bf16 *dinp, const pw_bf16 *inp, const float *dout,
                                           size_t N, cudaStream_t stream)
{
    backward(NULL, dinp, NULL, inp, dout, N, stream);
}
