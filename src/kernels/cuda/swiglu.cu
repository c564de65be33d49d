/* swiglu.cu: the SwiGLU activation on the GPU, silu(gate) * up from [gate | up] rows, forward
 * and backward (twin of cpu/swiglu.c). */
#include "common.cuh"
#include "pw_kernels_cuda.h"

/* 1 / (1 + e^-g): e^-g overflows to inf for very negative g, which still gives the right 0 */
__device__ __forceinline__ float swiglu_sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

__global__ void swiglu_forward_kernel(float *out, const float *gate_up, int F, size_t n)
{
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t row = e / F, i = e % F;
        float g = gate_up[row * 2 * F + i], u = gate_up[row * 2 * F + F + i];
        out[e] = g * swiglu_sigmoid(g) * u;
    }
}

__global__ void swiglu_backward_kernel(float *dgate_up, const float *gate_up, const float *dout,
                                       int F, size_t n)
{
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t row = e / F, i = e % F, at = row * 2 * F + i;
        float g = gate_up[at], u = gate_up[at + F], d = dout[e];
        float sg = swiglu_sigmoid(g);
        /* silu'(g) = s (1 + g (1 - s)) */
        dgate_up[at] += d * u * sg * (1.0f + g * (1.0f - sg));
        dgate_up[at + F] += d * g * sg;
    }
}

extern "C" void pw_swiglu_forward_cuda(float *out, const float *gate_up, int N, int F,
                                       cudaStream_t stream)
{
    size_t n = (size_t)N * F;
    if (n == 0) return;
    swiglu_forward_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(out, gate_up, F, n);
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_swiglu_backward_cuda(float *dgate_up, const float *gate_up, const float *dout,
                                        int N, int F, cudaStream_t stream)
{
    size_t n = (size_t)N * F;
    if (n == 0) return;
    swiglu_backward_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(dgate_up, gate_up, dout,
                                                                          F, n);
    PW_CUDA_CHECK(cudaGetLastError());
}
