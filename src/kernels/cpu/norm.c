/* norm.c: the two halves of global-norm gradient clipping on the CPU: a sum of squares per
 * buffer (the caller adds them over buffers and ranks) and a scale. */
#include "pw_kernels.h"

/* double accumulation: 124M squares summed in float would lose the small gradients */
double pw_sumsq(const float *x, size_t n)
{
    double sum = 0.0;
#pragma omp parallel for simd reduction(+ : sum) schedule(static)
    for (size_t i = 0; i < n; i++) sum += (double)x[i] * x[i];
    return sum;
}

void pw_scale(float *x, float s, size_t n)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) x[i] *= s;
}
