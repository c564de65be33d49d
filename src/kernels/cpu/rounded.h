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

static inline float *pw_rounded_copy(const float *x, size_t n, const char *who)
{
    float *r = malloc((n ? n : 1) * sizeof(float));
    if (!r) {
        fprintf(stderr, "%s: out of host memory for %zu floats\n", who, n);
        abort();
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) r[i] = pw_bf16_round(x[i]);
    return r;
}

/* the same for values that are bfloat16 already (their bits): widened */
static inline float *pw_widened_copy(const uint16_t *x, size_t n, const char *who)
{
    float *r = malloc((n ? n : 1) * sizeof(float));
    if (!r) {
        fprintf(stderr, "%s: out of host memory for %zu floats\n", who, n);
        abort();
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) r[i] = pw_bf16_to_f32(x[i]);
    return r;
}

#endif
