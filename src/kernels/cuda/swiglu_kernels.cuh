/* swiglu_kernels.cuh: the SwiGLU activation, forward and backward: grid-stride elementwise loops
 * (launched by swiglu.cu, the twin of cpu/swiglu.c). Written in the C subset of CUDA, so that
 * tests/cuda/test_kernels_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_SWIGLU_KERNELS_CUH
#define PW_SWIGLU_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "bf16.cuh"
#include "warp.cuh"

/* 1 / (1 + e^-g): e^-g overflows to inf for very negative g, which still gives the right 0 */
static __device__ __forceinline__ float swiglu_sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

/* [gate | up] of row r at r 2F: gate_up (float32), or gu16 (bfloat16: a bf16 model's) when
 * gate_up is NULL */
static __device__ __forceinline__ float swiglu_at(const float *gate_up, const uint16_t *gu16,
                                                  size_t at)
{
    return gate_up ? gate_up[at] : pw_bf16_float(gu16[at]);
}

/* [gate | up] by pw_input_at (gu16 is read when gate_up is NULL, written as the kept rounding
 * otherwise). out (float32) and out16 (the same values rounded to bfloat16): either may be
 * NULL. */
__global__ void swiglu_forward_kernel(float *out, uint16_t *out16, const float *gate_up,
                                      uint16_t *gu16, int round, int F, size_t n)
{
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t row = e / F, i = e % F, at = row * 2 * F + i;
        float g = pw_input_at(gate_up, gu16, gu16, round, at);
        float u = pw_input_at(gate_up, gu16, gu16, round, at + F);
        float y = g * swiglu_sigmoid(g) * u;
        if (out) out[e] = y;
        if (out16) out16[e] = pw_bf16_bits(y);
    }
}

/* set: dgate_up is set, not added to (the bf16 entry's contract, pw_ops.h) */
__global__ void swiglu_backward_kernel(float *dgate_up, uint16_t *dgu16, const float *gate_up,
                                       const uint16_t *gu16, const float *dout, int F, size_t n)
{
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t row = e / F, i = e % F, at = row * 2 * F + i;
        float g = swiglu_at(gate_up, gu16, at), u = swiglu_at(gate_up, gu16, at + F), d = dout[e];
        float sg = swiglu_sigmoid(g);
        /* silu'(g) = s (1 + g (1 - s)) */
        float dg = d * u * sg * (1.0f + g * (1.0f - sg)), du = d * g * sg;
        if (dgate_up) {
            dgate_up[at] += dg;
            dgate_up[at + F] += du;
        } else {
            dgu16[at] = pw_bf16_bits_on_zero(dg);
            dgu16[at + F] = pw_bf16_bits_on_zero(du);
        }
    }
}

#endif
