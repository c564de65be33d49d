/* gelu.c: GPT-2's GELU (the tanh form, "gelu_new") on the CPU, forward and backward. */
#include "pw_kernels.h"
#include "vecmath.h"

#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_A 0.044715f

/* 0.5 x (1 + tanh u) = x sigmoid(2u): the same function, but in this form the negative tail
 * keeps its relative accuracy instead of cancelling in 1 + tanh u, and exp vectorises. */
static inline float sigmoid2u(float x)
{
    return 1.0f / (1.0f + pw_vexpf(-2.0f * GELU_K * (x + GELU_A * x * x * x)));
}

void pw_gelu_forward(float *out, const float *inp, size_t N)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < N; i++) out[i] = inp[i] * sigmoid2u(inp[i]);
}

void pw_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < N; i++) {
        float x = inp[i], s = sigmoid2u(x);
        float du = GELU_K * (1.0f + 3.0f * GELU_A * x * x);
        dinp[i] += (s + 2.0f * x * s * (1.0f - s) * du) * dout[i];
    }
}
