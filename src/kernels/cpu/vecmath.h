/* vecmath.h: exp for the CPU kernels, written so that GCC vectorises the loops that call it
 * (libm's expf stays scalar unless the build uses -ffast-math). */
#ifndef PW_KERNELS_CPU_VECMATH_H
#define PW_KERNELS_CPU_VECMATH_H

#include <stdint.h>
#include <string.h>

/* exp(x) = 2^n exp(r) with n = round(x / ln 2) and |r| <= ln2 / 2; exp(r) by the Cephes
 * minimax polynomial (relative error about 2 ulp). Results below FLT_MIN flush to 0, so
 * -INFINITY (a masked score) gives 0; above 88 the result stays e^88, finite. */
static inline float pw_vexpf(float x)
{
    float xc = x < -87.3f ? -87.3f : (x > 88.0f ? 88.0f : x);
    /* adding and subtracting 1.5 * 2^23 rounds to the nearest integer without a libm call */
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = xc - n * 0.693359375f;           /* ln 2 split in two so n * hi is exact */
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return x < -87.3f ? 0.0f : p * scale;
}

#endif
