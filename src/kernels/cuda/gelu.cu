/* gelu.cu: GPT-2's GELU (the tanh form, "gelu_new") on the GPU, forward and backward (twin of
 * cpu/gelu.c, in the same x * sigmoid(2u) form). */
#include "common.cuh"
#include "pw_kernels_cuda.h"

#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_A 0.044715f

/* 0.5 x (1 + tanh u) = x sigmoid(2u): the negative tail keeps its relative accuracy */
__device__ __forceinline__ float sigmoid2u(float x)
{
    return 1.0f / (1.0f + expf(-2.0f * GELU_K * (x + GELU_A * x * x * x)));
}

__global__ void gelu_forward_kernel(float *out, const float *inp, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = inp[i];
        out[i] = x * sigmoid2u(x);
    }
}

__global__ void gelu_backward_kernel(float *dinp, const float *inp, const float *dout, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = inp[i], s = sigmoid2u(x);
        float du = GELU_K * (1.0f + 3.0f * GELU_A * x * x);
        dinp[i] += (s + 2.0f * x * s * (1.0f - s) * du) * dout[i];
    }
}

extern "C" void pw_gelu_forward_cuda(float *out, const float *inp, size_t N, cudaStream_t stream)
{
    if (N == 0) return;
    gelu_forward_kernel<<<pw_ew_blocks(N), PW_EW_THREADS, 0, stream>>>(out, inp, N);
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_gelu_backward_cuda(float *dinp, const float *inp, const float *dout, size_t N,
                                      cudaStream_t stream)
{
    if (N == 0) return;
    gelu_backward_kernel<<<pw_ew_blocks(N), PW_EW_THREADS, 0, stream>>>(dinp, inp, dout, N);
    PW_CUDA_CHECK(cudaGetLastError());
}
