/* swiglu.c: the SwiGLU activation of the Llama family's MLP on the CPU, forward and backward:
 * silu(gate) * up, with gate and up side by side in one (N, 2F) matmul output. */
#include <math.h>

#include "pw_kernels.h"

/* 1 / (1 + e^-g): e^-g overflows to inf for very negative g, which still gives the right 0 */
static inline float sigmoidf(float g) { return 1.0f / (1.0f + expf(-g)); }

void pw_swiglu_forward(float *out, const float *gate_up, int N, int F)
{
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *g = gate_up + (size_t)n * 2 * F, *u = g + F;
        float *o = out + (size_t)n * F;
        for (int i = 0; i < F; i++) o[i] = g[i] * sigmoidf(g[i]) * u[i];
    }
}

void pw_swiglu_backward(float *dgate_up, const float *gate_up, const float *dout, int N, int F)
{
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *g = gate_up + (size_t)n * 2 * F, *u = g + F, *d = dout + (size_t)n * F;
        float *dg = dgate_up + (size_t)n * 2 * F, *du = dg + F;
        for (int i = 0; i < F; i++) {
            float sg = sigmoidf(g[i]), silu = g[i] * sg;
            /* silu'(g) = s (1 + g (1 - s)) */
            dg[i] += d[i] * u[i] * sg * (1.0f + g[i] * (1.0f - sg));
            du[i] += d[i] * silu;
        }
    }
}
