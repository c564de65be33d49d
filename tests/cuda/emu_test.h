/* emu_test.h: what the emulated kernel tests share (tests/cuda/test_*_emu.c): random and copied
 * host arrays, a relative-error check that prints its figure, a bit-for-bit check of a bfloat16
 * result, and the launch shapes of the kernels' .cu files (launch.cuh). */
#ifndef PW_TEST_CUDA_EMU_TEST_H
#define PW_TEST_CUDA_EMU_TEST_H

#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "launch.cuh"
#include "pw_bf16.h"
#include "pw_test.h"

static inline float *emu_randn(size_t n, double sd, unsigned long long *rng)
{
    float *x = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) x[i] = (float)(sd * pw_test_normal(rng));
    return x;
}

static inline float *emu_copy(const float *x, size_t n)
{
    float *y = malloc(sizeof(float) * (n ? n : 1));
    memcpy(y, x, sizeof(float) * n);
    return y;
}

/* max relative error of got against want (floor 1e-6), printed, and at most tol */
static inline void emu_check(const char *what, const float *got, const float *want, size_t n,
                             double tol)
{
    double e = pw_max_rel_err_ff(got, want, n, 1e-6);
    printf("  %-30s rel err %.2e\n", what, e);
    CHECK(e <= tol, "%s: rel err %.3g", what, e);
}

/* got (bfloat16 bits) is f rounded to nearest even (pw_bf16.h), bit for bit: a kernel's bf16
 * output against the same kernel's float32 one */
static inline void emu_check_bf16(const char *what, const uint16_t *got, const float *f, size_t n)
{
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; i++)
        if (got[i] != pw_bf16_from_f32(f[i]) && bad++ == 0) first = i;
    printf("  %-30s %zu of %zu differ from the rounded float32\n", what, bad, n);
    CHECK(bad == 0, "%s: %zu values differ from their float32 rounded, first at %zu", what, bad,
          first);
}

/* x rounded to bfloat16 (a new array of bits) and, into widened (n floats), those values */
static inline uint16_t *emu_bf16_of(const float *x, size_t n, float *widened)
{
    uint16_t *h = malloc(sizeof(uint16_t) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        h[i] = pw_bf16_from_f32(x[i]);
        widened[i] = pw_bf16_to_f32(h[i]);
    }
    return h;
}

static inline EmuDim3 d1(unsigned x) { return (EmuDim3){x, 1, 1}; }

/* the grid of an elementwise kernel over n elements, as the .cu files launch it */
static inline EmuDim3 ew_grid(size_t n) { return d1(pw_ew_blocks(n)); }

#endif
