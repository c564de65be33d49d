/* emu_test.h: what the emulated kernel tests share (tests/cuda/test_*_emu.c): random and copied
 * host arrays, a relative-error check that prints its figure, and the launch shapes of the
 * kernels' .cu files (launch.cuh). */
#ifndef PW_TEST_CUDA_EMU_TEST_H
#define PW_TEST_CUDA_EMU_TEST_H

#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "launch.cuh"
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

static inline EmuDim3 d1(unsigned x) { return (EmuDim3){x, 1, 1}; }

/* the grid of an elementwise kernel over n elements, as the .cu files launch it */
static inline EmuDim3 ew_grid(size_t n) { return d1(pw_ew_blocks(n)); }

#endif
