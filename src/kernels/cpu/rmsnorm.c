/* rmsnorm.c: RMSNorm over the channels of each row on the CPU, forward and backward (the Llama
 * family's norm: no mean is taken out and there is no bias). */
#include <math.h>

#include "pw_kernels.h"

/* Channels per task when summing dweight over rows, so that tasks never share them */
#define RMS_CHUNK 64

void pw_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int N,
                        int C, float eps)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        float *o = out + (size_t)i * C;
        /* the sum of squares in double: every term is positive, so nothing cancels, but a float
         * sum over thousands of channels would lose the last digits the 1e-5 bound needs */
        double ss = 0.0;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < C; c++) ss += (double)x[c] * x[c];
        float s = (float)(1.0 / sqrt(ss / C + (double)eps));
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] = x[c] * s * weight[c];
        if (rstd) rstd[i] = s;
    }
}

void pw_rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp,
                         const float *weight, const float *rstd, int N, int C)
{
    if (dinp) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < N; i++) {
            const float *x = inp + (size_t)i * C, *d = dout + (size_t)i * C;
            float *g = dinp + (size_t)i * C;
            float s = rstd[i];
            /* dx = s * (w dout - x s^2 mean(w dout x)): rstd depends on every x of the row */
            double dot = 0.0;
#pragma omp simd reduction(+ : dot)
            for (int c = 0; c < C; c++) dot += (double)weight[c] * d[c] * x[c];
            float k = (float)(dot / C) * s * s;
#pragma omp simd
            for (int c = 0; c < C; c++) g[c] += s * (weight[c] * d[c] - x[c] * k);
        }
    }
    if (!dweight) return;
    int nchunks = (C + RMS_CHUNK - 1) / RMS_CHUNK;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < nchunks; k++) {
        int c0 = k * RMS_CHUNK, c1 = c0 + RMS_CHUNK < C ? c0 + RMS_CHUNK : C;
        for (int i = 0; i < N; i++) {
            const float *x = inp + (size_t)i * C, *d = dout + (size_t)i * C;
            float s = rstd[i];
#pragma omp simd
            for (int c = c0; c < c1; c++) dweight[c] += x[c] * s * d[c];
        }
    }
}

/* Qwen3's q/k norm: head h of row n starts at n * stride + h * hs; heads below NH are queries
 * (wq), the NKV after them keys (wk). Each head is one pw_rmsnorm row, so the statistic and the
 * output are computed exactly as there. */
static const float *head_weight(const float *wq, const float *wk, int NH, int h)
{
    return h < NH ? wq : wk;
}

void pw_head_rmsnorm_forward(float *x, float *raw, float *rstd, const float *wq, const float *wk,
                             int N, int NH, int NKV, int hs, int stride, float eps)
{
    const int H = NH + NKV;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N * H; i++) {
        int n = i / H, h = i % H;
        float *v = x + (size_t)n * stride + (size_t)h * hs;
        if (raw)
            for (int c = 0; c < hs; c++) raw[(size_t)i * hs + c] = v[c];
        float s;
        pw_rmsnorm_forward(v, &s, v, head_weight(wq, wk, NH, h), 1, hs, eps);
        if (rstd) rstd[i] = s;
    }
}

void pw_head_rmsnorm_backward(float *dx, float *dwq, float *dwk, const float *raw,
                              const float *rstd, const float *wq, const float *wk, int N, int NH,
                              int NKV, int hs, int stride)
{
    const int H = NH + NKV;
    /* the weights' gradients first: they read the normed heads' gradient, which the input's
     * then replaces; one task per weight, its rows in order (the same sums on any thread count) */
#pragma omp parallel for schedule(static)
    for (int w = 0; w < 2; w++) {
        float *dw = w ? dwk : dwq;
        if (!dw) continue;
        for (int i = 0; i < N * H; i++) {
            int n = i / H, h = i % H;
            if ((h >= NH) != w) continue;
            const float *d = dx + (size_t)n * stride + (size_t)h * hs, *r = raw + (size_t)i * hs;
            float s = rstd[i];
            for (int c = 0; c < hs; c++) dw[c] += r[c] * s * d[c];
        }
    }
    /* then each head's input gradient in place, pw_rmsnorm_backward's arithmetic: the dot
     * product is taken before anything is written */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N * H; i++) {
        int n = i / H, h = i % H;
        float *d = dx + (size_t)n * stride + (size_t)h * hs;
        const float *r = raw + (size_t)i * hs, *w = head_weight(wq, wk, NH, h);
        float s = rstd[i];
        double dot = 0.0;
        for (int c = 0; c < hs; c++) dot += (double)w[c] * d[c] * r[c];
        float k = (float)(dot / hs) * s * s;
        for (int c = 0; c < hs; c++) d[c] = s * (w[c] * d[c] - r[c] * k);
    }
}
