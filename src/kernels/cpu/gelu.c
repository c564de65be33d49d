/* gelu.c: GPT-2's GELU (the tanh form, "gelu_new") on the CPU, forward and backward. */
#include "pw_kernels.h"
#include "vecmath.h"

#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_A 0.044715f

void pw_gelu_forward(float *out, const float *inp, size_t N)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < N; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + pw_vtanhf(GELU_K * (x + GELU_A * x * x * x)));
    }
}

void pw_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < N; i++) {
        float x = inp[i];
        float th = pw_vtanhf(GELU_K * (x + GELU_A * x * x * x));
        float du = GELU_K * (1.0f + 3.0f * GELU_A * x * x);
        float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
        dinp[i] += grad * dout[i];
    }
}
