/* pw_bf16.h: float32 <-> bfloat16 on the host, shared by the checkpoint writer and the CPU's
 * bf16 matmuls (the same rounding as the GPU's __float2bfloat16_rn). */
#ifndef PW_BF16_H
#define PW_BF16_H

#include <stdint.h>
#include <string.h>

/* float32 <-> bfloat16, the top half of a float32. To bfloat16 rounds to nearest, ties to even,
 * as torch's .to(torch.bfloat16) does, and keeps a NaN a (quiet) NaN; back is exact. */
static inline uint16_t pw_bf16_from_f32(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40u);
    return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

static inline float pw_bf16_to_f32(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float x;
    memcpy(&x, &b, 4);
    return x;
}

/* x rounded to the nearest bfloat16, as a float32 */
static inline float pw_bf16_round(float x) { return pw_bf16_to_f32(pw_bf16_from_f32(x)); }

#endif
