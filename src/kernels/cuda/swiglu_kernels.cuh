/* swiglu_kernels.cuh: the SwiGLU activation, forward and backward: grid-stride elementwise loops
 * (launched by swiglu.cu, the twin of cpu/swiglu.c). Written in the C subset of CUDA, so that
 * tests/cuda/test_kernels_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_SWIGLU_KERNELS_CUH
#define PW_SWIGLU_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "bf16.cuh"
#include "launch.cuh"
#include "swiglu.cuh"
#include "warp.cuh"


/* the gradients of gate and up for dout d; silu'(g) = s (1 + g (1 - s)) */
static __device__ __forceinline__ void swiglu_grad(float g, float u, float d, float *dg, float *du)
{
    float sg = swiglu_sigmoid(g);
    *dg = d * u * sg * (1.0f + g * (1.0f - sg));
    *du = d * g * sg;
}

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
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t row = e / F, i = e % F, at = row * 2 * F + i;
        float g = pw_input_at(gate_up, gu16, gu16, round, at);
        float u = pw_input_at(gate_up, gu16, gu16, round, at + F);
        float y = swiglu_of(g, u);
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
        float g = swiglu_at(gate_up, gu16, at), u = swiglu_at(gate_up, gu16, at + F), dg, du;
        swiglu_grad(g, u, dout[e], &dg, &du);
        if (dgate_up) {
            dgate_up[at] += dg;
            dgate_up[at + F] += du;
        } else {
            dgu16[at] = pw_bf16_bits_on_zero(dg);
            dgu16[at + F] = pw_bf16_bits_on_zero(du);
        }
    }
}

/* The bf16 model's forms (bfloat16 [gate | up] in, bfloat16 out), 8 columns a thread: 16-byte
 * loads and stores where the kernels above move 2 bytes an element (gelu_kernels.cuh says why).
 * Rows of F a multiple of 8 and 16-byte aligned pointers only (swiglu.cu checks); the same
 * operations, the same bits. Unit j is columns 8j.. of the (N, F) output (PW_VEC, launch.cuh). */

static __device__ __forceinline__ unsigned int swiglu_pair(unsigned int g, unsigned int u)
{
    return pw_bf16_pair(swiglu_of(pw_bf16_lo(g), pw_bf16_lo(u)),
                        swiglu_of(pw_bf16_hi(g), pw_bf16_hi(u)));
}

__global__ void swiglu_forward_bf16_vec_kernel(uint16_t *out16, const uint16_t *gu16, int F,
                                               size_t n)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    size_t units = n / PW_VEC;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < units;
         j += (size_t)gridDim.x * blockDim.x) {
        size_t e = j * PW_VEC, at = (e / F) * 2 * F + e % F;
        uint4 g = *(const uint4 *)(gu16 + at), u = *(const uint4 *)(gu16 + at + F);
        *(uint4 *)(out16 + e) = make_uint4(swiglu_pair(g.x, u.x), swiglu_pair(g.y, u.y),
                                           swiglu_pair(g.z, u.z), swiglu_pair(g.w, u.w));
    }
}

/* two columns' gradients (gate's into *dg, up's into *du, each two halves) */
static __device__ __forceinline__ void swiglu_grad_pair(unsigned int g, unsigned int u, float d0,
                                                        float d1, unsigned int *dg,
                                                        unsigned int *du)
{
    float g0, u0, g1, u1;
    swiglu_grad(pw_bf16_lo(g), pw_bf16_lo(u), d0, &g0, &u0);
    swiglu_grad(pw_bf16_hi(g), pw_bf16_hi(u), d1, &g1, &u1);
    *dg = pw_bf16_pair_on_zero(g0, g1);
    *du = pw_bf16_pair_on_zero(u0, u1);
}

__global__ void swiglu_backward_bf16_vec_kernel(uint16_t *dgu16, const uint16_t *gu16,
                                                const float *dout, int F, size_t n)
{
    size_t units = n / PW_VEC;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < units;
         j += (size_t)gridDim.x * blockDim.x) {
        size_t e = j * PW_VEC, at = (e / F) * 2 * F + e % F;
        uint4 g = *(const uint4 *)(gu16 + at), u = *(const uint4 *)(gu16 + at + F);
        float4 a = *(const float4 *)(dout + e), b = *(const float4 *)(dout + e + 4);
        uint4 dg, du;
        swiglu_grad_pair(g.x, u.x, a.x, a.y, &dg.x, &du.x);
        swiglu_grad_pair(g.y, u.y, a.z, a.w, &dg.y, &du.y);
        swiglu_grad_pair(g.z, u.z, b.x, b.y, &dg.z, &du.z);
        swiglu_grad_pair(g.w, u.w, b.z, b.w, &dg.w, &du.w);
        *(uint4 *)(dgu16 + at) = dg;
        *(uint4 *)(dgu16 + at + F) = du;
    }
}

/* whether the vector forms may take rows of F and these pointers; on the host */
static inline int swiglu_vec_ok(int F, const void *a, const void *b, const void *c)
{
    return F % PW_VEC == 0 && (((size_t)a | (size_t)b | (size_t)c) & 15) == 0;
}

#endif
