/* rounded.h: a copy of a float32 array rounded to bfloat16 (pw_bf16.h), kept in float32 so that
 * sgemm takes it, and one of a bfloat16 array widened: how the CPU's bf16 twins (matmul.c,
 * attention.c) give their products the GPU's operands. abort()s when the host has no room,
 * naming the caller, as a kernel cannot return an error and no caller can go on without its
 * product. */
#ifndef PW_KERNELS_CPU_ROUNDED_H
#define PW_KERNELS_CPU_ROUNDED_H

#include <stdio.h>
#include <stdlib.h>

#include "pw_bf16.h"

static inline float *pw_floats_or_abort(size_t n, const char *who)
{
    float *r = malloc((n ? n : 1) * sizeof(float));
    if (!r) {
        fprintf(stderr, "%s: out of host memory for %zu floats\n", who, n);
        abort();
    }
    return r;
}

static inline float *pw_rounded_copy(const float *x, size_t n, const char *who)
{
    float *r = pw_floats_or_abort(n, who);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) r[i] = pw_bf16_round(x[i]);
    return r;
}

/* the same for values that are bfloat16 already (their bits): n rows of cols, ld apart,
 * widened into a dense copy */
static inline float *pw_widened_rows(const uint16_t *x, size_t n, size_t cols, size_t ld,
                                     const char *who)
{
    float *r = pw_floats_or_abort(n * cols, who);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < cols; c++) r[i * cols + c] = pw_bf16_to_f32(x[i * ld + c]);
    return r;
}

#endif
