/* matmul.c: the linear layer on the CPU: out = inp . weight^T + bias, each product one
 * OpenBLAS sgemm that reads the operands in place through its transpose flags. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#include "pw_kernels.h"
#include "rounded.h"

/* Output channels per task when summing dbias over rows (tasks never share a channel) */
#define MM_CHUNK 64

void pw_matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                       int N, int C, int OC)
{
    float beta = 0.0f;
    if (bias) {
        /* seed every row with the bias and let sgemm add onto it (beta = 1) */
#pragma omp parallel for schedule(static)
        for (int i = 0; i < N; i++) {
            float *o = out + (size_t)i * OC;
#pragma omp simd
            for (int o_ = 0; o_ < OC; o_++) o[o_] = bias[o_];
        }
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C,
                1.0f, inp, C, weight, C, beta, out, OC);
}

void pw_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, int N, int C, int OC)
{
    /* dinp(N,C) += dout(N,OC) . weight(OC,C) */
    if (dinp)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC,
                    1.0f, dout, OC, weight, C, 1.0f, dinp, C);
    /* dweight(OC,C) += dout^T(OC,N) . inp(N,C) */
    if (dweight)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N,
                    1.0f, dout, OC, inp, C, 1.0f, dweight, C);
    if (!dbias) return;
    int nchunks = (OC + MM_CHUNK - 1) / MM_CHUNK;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < nchunks; k++) {
        int o0 = k * MM_CHUNK, o1 = o0 + MM_CHUNK < OC ? o0 + MM_CHUNK : OC;
        for (int i = 0; i < N; i++) {
            const float *d = dout + (size_t)i * OC;
#pragma omp simd
            for (int o = o0; o < o1; o++) dbias[o] += d[o];
        }
    }
}

void pw_matmul_forward_bf16(float *out, const float *inp, const float *weight, const float *bias,
                            int N, int C, int OC)
{
    float *ri = pw_rounded_copy(inp, (size_t)N * C, "bf16 matmul");
    float *rw = pw_rounded_copy(weight, (size_t)OC * C, "bf16 matmul");
    pw_matmul_forward(out, ri, rw, bias, N, C, OC);
    free(ri);
    free(rw);
}

void pw_matmul_backward_bf16(float *dinp, float *dweight, float *dbias, const float *dout,
                             const float *inp, const float *weight, int N, int C, int OC)
{
    float *rd = pw_rounded_copy(dout, (size_t)N * OC, "bf16 matmul");
    float *ri = dweight ? pw_rounded_copy(inp, (size_t)N * C, "bf16 matmul") : NULL;
    float *rw = dinp ? pw_rounded_copy(weight, (size_t)OC * C, "bf16 matmul") : NULL;
    pw_matmul_backward(dinp, dweight, dbias, rd, ri, rw, N, C, OC);
    free(rd);
    free(ri);
    free(rw);
}
