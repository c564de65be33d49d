/* residual.c: the residual connection on the CPU: out = a + b, and its backward, which passes
 * the gradient to both branches. */
#include "pw_kernels.h"

void pw_residual_forward(float *out, const float *a, const float *b, size_t N)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}

void pw_residual_backward(float *da, float *db, const float *dout, size_t N)
{
    if (da) {
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < N; i++) da[i] += dout[i];
    }
    if (db) {
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < N; i++) db[i] += dout[i];
    }
}
