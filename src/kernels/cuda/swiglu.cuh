/* swiglu.cuh: SwiGLU of one gate and up value, silu(g) u: what the SwiGLU kernels
 * (swiglu_kernels.cuh) and the few-row product's SwiGLU epilogue (skinny_kernels.cuh) compute,
 * so that the fused and the separate paths give the same bits. C subset of CUDA (the emulated
 * tests compile it as C). */
#ifndef PW_SWIGLU_CUH
#define PW_SWIGLU_CUH

#include <math.h>

/* 1 / (1 + e^-g): e^-g overflows to inf for very negative g, which still gives the right 0 */
static __device__ __forceinline__ float swiglu_sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

static __device__ __forceinline__ float swiglu_of(float g, float u)
{
    return g * swiglu_sigmoid(g) * u;
}

#endif
