/* swiglu.cu: the SwiGLU activation on the GPU, silu(gate) * up from [gate | up] rows, forward
 * and backward (twin of cpu/swiglu.c). */
#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "swiglu_kernels.cuh"

static void forward(float *out, pw_bf16 *out16, const float *gate_up, pw_bf16 *gu16, int round,
                    int N, int F, cudaStream_t stream)
{
    size_t n = (size_t)N * F;
    if (n == 0) return;
    if (!out && !gate_up && swiglu_vec_ok(F, out16, gu16, NULL)) /* bfloat16 in and out */
        pw_launch(swiglu_forward_bf16_vec_kernel, pw_ew_blocks(n / PW_VEC), PW_EW_THREADS, 0,
                  stream, out16, gu16, F, n);
    else
        pw_launch(swiglu_forward_kernel, pw_ew_blocks(n), PW_EW_THREADS, 0, stream, out, out16,
                  gate_up, gu16, round, F, n);
}

static void backward(float *dgate_up, pw_bf16 *dgu16, const float *gate_up, const pw_bf16 *gu16,
                     const float *dout, int N, int F, cudaStream_t stream)
{
    size_t n = (size_t)N * F;
    if (n == 0) return;
    /* the bf16 form sets dgate_up rounded, the float32 one adds to it (pw_ops.h) */
    if (!dgate_up && !gate_up && swiglu_vec_ok(F, dgu16, gu16, dout))
        swiglu_backward_bf16_vec_kernel<<<pw_ew_blocks(n / PW_VEC), PW_EW_THREADS, 0,
                                          stream>>>(dgu16, gu16, dout, F, n);
    else
        swiglu_backward_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(
            dgate_up, dgu16, gate_up, gu16, dout, F, n);
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_swiglu_forward_cuda(float *out, const float *gate_up, int N, int F,
                                       cudaStream_t stream)
{
    forward(out, NULL, gate_up, NULL, 0, N, F, stream);
}

extern "C" void pw_swiglu_forward_bf16_cuda(pw_bf16 *out, pw_bf16 *gu16, const float *gate_up,
                                            int N, int F, cudaStream_t stream)
{
    forward(NULL, out, gate_up, gu16, 1, N, F, stream);
}

extern "C" void pw_swiglu_backward_cuda(float *dgate_up, const float *gate_up, const float *dout,
                                        int N, int F, cudaStream_t stream)
{
    backward(dgate_up, NULL, gate_up, NULL, dout, N, F, stream);
}

extern "C" void pw_swiglu_backward_bf16_cuda(pw_bf16 *dgate_up, const pw_bf16 *gate_up,
                                             const float *dout, int N, int F,
                                             cudaStream_t stream)
{
    backward(NULL, dgate_up, NULL, gate_up, dout, N, F, stream);
}
