/* layernorm.c: LayerNorm over the channels of each row on the CPU, forward and backward,
 * eps 1e-5 and biased variance as PyTorch. */
#include <math.h>

#include "pw_kernels.h"

/* Channels per task when summing dweight and dbias over rows, so that tasks never share them */
#define LN_CHUNK 64

void pw_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                          const float *weight, const float *bias, int N, int C)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        float *o = out + (size_t)i * C;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int c = 0; c < C; c++) sum += x[c];
        float m = sum / C;
        /* two passes rather than E[x^2] - m^2, which cancels badly for rows far from zero */
        float var = 0.0f;
#pragma omp simd reduction(+ : var)
        for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        float s = 1.0f / sqrtf(var / C + 1e-5f);
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * weight[c] + bias[c];
        if (mean) mean[i] = m;
        if (rstd) rstd[i] = s;
    }
}

void pw_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                           const float *inp, const float *weight, const float *mean,
                           const float *rstd, int N, int C)
{
    if (dinp) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < N; i++) {
            const float *x = inp + (size_t)i * C, *d = dout + (size_t)i * C;
            float *g = dinp + (size_t)i * C;
            float m = mean[i], s = rstd[i];
            /* dx = s * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = w * dout */
            float dsum = 0.0f, dnsum = 0.0f;
#pragma omp simd reduction(+ : dsum, dnsum)
            for (int c = 0; c < C; c++) {
                float dn = weight[c] * d[c];
                dsum += dn;
                dnsum += dn * (x[c] - m) * s;
            }
            dsum /= C;
            dnsum /= C;
#pragma omp simd
            for (int c = 0; c < C; c++) {
                float norm = (x[c] - m) * s;
                g[c] += s * (weight[c] * d[c] - dsum - norm * dnsum);
            }
        }
    }
    if (!dweight && !dbias) return;
    int nchunks = (C + LN_CHUNK - 1) / LN_CHUNK;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < nchunks; k++) {
        int c0 = k * LN_CHUNK, c1 = c0 + LN_CHUNK < C ? c0 + LN_CHUNK : C;
        for (int i = 0; i < N; i++) {
            const float *x = inp + (size_t)i * C, *d = dout + (size_t)i * C;
            float m = mean[i], s = rstd[i];
            if (dweight) {
#pragma omp simd
                for (int c = c0; c < c1; c++) dweight[c] += (x[c] - m) * s * d[c];
            }
            if (dbias) {
#pragma omp simd
                for (int c = c0; c < c1; c++) dbias[c] += d[c];
            }
        }
    }
}
