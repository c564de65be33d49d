/* gelu_kernels.cuh: the tanh GELU, forward and backward: grid-stride elementwise loops (launched
 * by gelu.cu; the CPU twin is cpu/gelu.c). Written in the C subset of CUDA, so that
 * tests/cuda/test_gpt2_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_GELU_KERNELS_CUH
#define PW_GELU_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "bf16.cuh"
#include "warp.cuh"

#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_A 0.044715f

/* 0.5 x (1 + tanh u) = x sigmoid(2u): the negative tail keeps its relative accuracy */
static __device__ __forceinline__ float sigmoid2u(float x)
{
    return 1.0f / (1.0f + expf(-2.0f * GELU_K * (x + GELU_A * x * x * x)));
}

/* The input by pw_input_at (inp16 is read when inp is NULL, written as keep16 otherwise). out
 * (float32) and out16 (the same values rounded to bfloat16): either may be NULL. */
__global__ void gelu_forward_kernel(float *out, uint16_t *out16, const float *inp,
                                    uint16_t *inp16, int round, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = pw_input_at(inp, inp16, inp16, round, i), y = x * sigmoid2u(x);
        if (out) out[i] = y;
        if (out16) out16[i] = pw_bf16_bits(y);
    }
}

/* The gradient added to dinp (float32), or set rounded into dinp16 (bfloat16: the bf16 entry's
 * contract, pw_ops.h, the float32 result added to zeros and rounded; the product it feeds rounds
 * it anyway) when dinp is NULL */
__global__ void gelu_backward_kernel(float *dinp, uint16_t *dinp16, const float *inp,
                                     const uint16_t *inp16, const float *dout, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = inp ? inp[i] : pw_bf16_float(inp16[i]), s = sigmoid2u(x);
        float du = GELU_K * (1.0f + 3.0f * GELU_A * x * x);
        float g = (s + 2.0f * x * s * (1.0f - s) * du) * dout[i];
        if (dinp) dinp[i] += g;
        else dinp16[i] = pw_bf16_bits_on_zero(g);
    }
}

#endif
