/* gelu_kernels.cuh: the tanh GELU, forward and backward: grid-stride elementwise loops (launched
 * by gelu.cu; the CPU twin is cpu/gelu.c). Written in the C subset of CUDA, so that
 * tests/cuda/test_gpt2_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_GELU_KERNELS_CUH
#define PW_GELU_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "bf16.cuh"
#include "gelu.cuh"
#include "launch.cuh"
#include "warp.cuh"

/* d gelu(x) / dx times d */
static __device__ __forceinline__ float gelu_grad(float x, float d)
{
    float s = sigmoid2u(x), du = GELU_K * (1.0f + 3.0f * GELU_A * x * x);
    return (s + 2.0f * x * s * (1.0f - s) * du) * d;
}

/* The input by pw_input_at (inp16 is read when inp is NULL, written as keep16 otherwise). out
 * (float32) and out16 (the same values rounded to bfloat16): either may be NULL. */
__global__ void gelu_forward_kernel(float *out, uint16_t *out16, const float *inp,
                                    uint16_t *inp16, int round, size_t n)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float y = gelu_of(pw_input_at(inp, inp16, inp16, round, i));
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
        float g = gelu_grad(inp ? inp[i] : pw_bf16_float(inp16[i]), dout[i]);
        if (dinp) dinp[i] += g;
        else dinp16[i] = pw_bf16_bits_on_zero(g);
    }
}

/* The bf16 model's forms (bfloat16 in, bfloat16 out) 8 elements a thread: a 16-byte load and
 * store where the kernels above move 2 bytes an element each, too few in flight to cover the
 * memory's latency (the training step's GELU forward read and wrote its 200 MB a layer at half
 * the copy bandwidth: PW_PROFILE_OPS on an H100). The same operations: the same bits. gelu.cu
 * takes them where the pointers are 16-byte aligned; units as launch.cuh's PW_VEC says. */

static __device__ __forceinline__ unsigned int gelu_pair(unsigned int w)
{
    return pw_bf16_pair(gelu_of(pw_bf16_lo(w)), gelu_of(pw_bf16_hi(w)));
}

__global__ void gelu_forward_bf16_vec_kernel(uint16_t *out16, const uint16_t *inp16, size_t n)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    size_t n8 = n / PW_VEC, units = n8 + n % PW_VEC;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < units;
         i += (size_t)gridDim.x * blockDim.x) {
        if (i >= n8) {
            size_t k = n8 * PW_VEC + (i - n8);
            out16[k] = pw_bf16_bits(gelu_of(pw_bf16_float(inp16[k])));
            continue;
        }
        uint4 u = ((const uint4 *)inp16)[i];
        ((uint4 *)out16)[i] = make_uint4(gelu_pair(u.x), gelu_pair(u.y), gelu_pair(u.z),
                                         gelu_pair(u.w));
    }
}

static __device__ __forceinline__ unsigned int gelu_grad_pair(unsigned int w, float d0, float d1)
{
    return pw_bf16_pair_on_zero(gelu_grad(pw_bf16_lo(w), d0), gelu_grad(pw_bf16_hi(w), d1));
}

__global__ void gelu_backward_bf16_vec_kernel(uint16_t *dinp16, const uint16_t *inp16,
                                              const float *dout, size_t n)
{
    size_t n8 = n / PW_VEC, units = n8 + n % PW_VEC;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < units;
         i += (size_t)gridDim.x * blockDim.x) {
        if (i >= n8) {
            size_t k = n8 * PW_VEC + (i - n8);
            dinp16[k] = pw_bf16_bits_on_zero(gelu_grad(pw_bf16_float(inp16[k]), dout[k]));
            continue;
        }
        uint4 u = ((const uint4 *)inp16)[i];
        float4 a = ((const float4 *)dout)[2 * i], b = ((const float4 *)dout)[2 * i + 1];
        ((uint4 *)dinp16)[i] = make_uint4(gelu_grad_pair(u.x, a.x, a.y),
                                          gelu_grad_pair(u.y, a.z, a.w),
                                          gelu_grad_pair(u.z, b.x, b.y),
                                          gelu_grad_pair(u.w, b.z, b.w));
    }
}

/* whether the vector forms may take these pointers (NULL counts as aligned); on the host */
static inline int gelu_vec_ok(const void *a, const void *b, const void *c)
{
    return (((size_t)a | (size_t)b | (size_t)c) & 15) == 0;
}

#endif
