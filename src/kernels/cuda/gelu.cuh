/* gelu.cuh: GPT-2's tanh GELU of one value, in the x * sigmoid(2u) form of cpu/gelu.c: what the
 * GELU kernels (gelu_kernels.cuh) and the few-row product's GELU epilogue (skinny_kernels.cuh)
 * compute, so that the fused and the separate paths give the same bits. C subset of CUDA (the
 * emulated tests compile it as C). */
#ifndef PW_GELU_CUH
#define PW_GELU_CUH

#include <math.h>

#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_A 0.044715f

/* 0.5 x (1 + tanh u) = x sigmoid(2u): the negative tail keeps its relative accuracy */
static __device__ __forceinline__ float sigmoid2u(float x)
{
    return 1.0f / (1.0f + expf(-2.0f * GELU_K * (x + GELU_A * x * x * x)));
}

static __device__ __forceinline__ float gelu_of(float x) { return x * sigmoid2u(x); }

#endif
