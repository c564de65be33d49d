/* bf16.cuh: bfloat16 by its 16 bits (uint16_t, the pw_bf16 of pw_kernels_cuda.h), as pw_bf16.h
 * converts on the host: rounded to nearest even (a NaN stays a quiet NaN), widened by a shift.
 * The same bits as __float2bfloat16_rn and __bfloat162float for every non-NaN value, in plain
 * C-subset CUDA, so that kernels using it can also run under tests/cuda/emu.h. */
#ifndef PW_CUDA_BF16_CUH
#define PW_CUDA_BF16_CUH

#include <stdint.h>

static __device__ __forceinline__ uint16_t pw_bf16_bits(float x)
{
    uint32_t b = __float_as_uint(x);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40u);
    return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

/* x + 0 rounded, as a gradient set on zeros is: -0 becomes +0 (IEEE's -0 + +0), which a bare
 * pw_bf16_bits(x) would keep as the bits 0x8000; spelled as a test, not an addition, so that no
 * compiler folds it away */
static __device__ __forceinline__ uint16_t pw_bf16_bits_on_zero(float x)
{
    return x == 0.0f ? (uint16_t)0 : pw_bf16_bits(x);
}

static __device__ __forceinline__ float pw_bf16_float(uint32_t bits16)
{
    return __uint_as_float(bits16 << 16);
}

/* Two neighbouring elements of a bfloat16 row as one 32-bit word, the first in the low half:
 * rounded and packed (and its _on_zero form), and widened back. mma.cuh's pw_bf16x2 packs for
 * the tensor cores by cvt, whose NaN bits are not pw_bf16.h's: these are. */
static __device__ __forceinline__ uint32_t pw_bf16_pair(float lo, float hi)
{
    return (uint32_t)pw_bf16_bits(lo) | (uint32_t)pw_bf16_bits(hi) << 16;
}

static __device__ __forceinline__ uint32_t pw_bf16_pair_on_zero(float lo, float hi)
{
    return (uint32_t)pw_bf16_bits_on_zero(lo) | (uint32_t)pw_bf16_bits_on_zero(hi) << 16;
}

static __device__ __forceinline__ float pw_bf16_lo(uint32_t w)
{
    return pw_bf16_float(w & 0xffffu);
}

static __device__ __forceinline__ float pw_bf16_hi(uint32_t w) { return pw_bf16_float(w >> 16); }

/* An activation's input element i (GELU's, SwiGLU's): inp's (float32), or with round its
 * bfloat16 rounding (kept into keep16 when that is not NULL: a bf16 model keeps it for the
 * backward), or inp16's (bfloat16) when inp is NULL */
static __device__ __forceinline__ float pw_input_at(const float *inp, uint16_t *keep16,
                                                    const uint16_t *inp16, int round, size_t i)
{
    if (!inp) return pw_bf16_float(inp16[i]);
    if (!round) return inp[i];
    uint16_t h = pw_bf16_bits(inp[i]);
    if (keep16) keep16[i] = h;
    return pw_bf16_float(h);
}

#endif
