/* rmsnorm.cu: RMSNorm over the channels of each row on the GPU, forward and backward (twin of
 * cpu/rmsnorm.c); one warp per row, sums in double as the CPU twin does. */
#include "common.cuh"
#include "pw_kernels_cuda.h"

#define RMS_ROWS_PER_BLOCK 8 /* warps per block of 256 threads */

__global__ void rmsnorm_forward_kernel(float *out, float *rstd, const float *inp,
                                       const float *weight, int N, int C, float eps)
{
    int row = blockIdx.x * RMS_ROWS_PER_BLOCK + threadIdx.x / PW_WARP;
    int lane = threadIdx.x % PW_WARP;
    if (row >= N) return; /* a whole warp leaves together: the shuffles below stay full */
    const float *x = inp + (size_t)row * C;
    float *o = out + (size_t)row * C;
    double ss = 0.0;
    for (int c = lane; c < C; c += PW_WARP) ss += (double)x[c] * x[c];
    float s = (float)(1.0 / sqrt(pw_warp_sum_d(ss) / C + (double)eps));
    for (int c = lane; c < C; c += PW_WARP) o[c] = x[c] * s * weight[c];
    if (lane == 0 && rstd) rstd[row] = s;
}

extern "C" void pw_rmsnorm_forward_cuda(float *out, float *rstd, const float *inp,
                                        const float *weight, int N, int C, float eps,
                                        cudaStream_t stream)
{
    if (N <= 0 || C <= 0) return;
    int blocks = (N + RMS_ROWS_PER_BLOCK - 1) / RMS_ROWS_PER_BLOCK;
    rmsnorm_forward_kernel<<<blocks, RMS_ROWS_PER_BLOCK * PW_WARP, 0, stream>>>(
        out, rstd, inp, weight, N, C, eps);
    PW_CUDA_CHECK(cudaGetLastError());
}

/* dx = s (w dout - x s^2 mean(w dout x)); accumulated */
__global__ void rmsnorm_dinp_kernel(float *dinp, const float *dout, const float *inp,
                                    const float *weight, const float *rstd, int N, int C)
{
    int row = blockIdx.x * RMS_ROWS_PER_BLOCK + threadIdx.x / PW_WARP;
    int lane = threadIdx.x % PW_WARP;
    if (row >= N) return;
    const float *x = inp + (size_t)row * C, *d = dout + (size_t)row * C;
    float *g = dinp + (size_t)row * C;
    float s = rstd[row];
    double dot = 0.0;
    for (int c = lane; c < C; c += PW_WARP) dot += (double)weight[c] * d[c] * x[c];
    float k = (float)(pw_warp_sum_d(dot) / C) * s * s;
    for (int c = lane; c < C; c += PW_WARP) g[c] += s * (weight[c] * d[c] - x[c] * k);
}

/* the terms of dweight, x s dout, laid out as the rows, for the column sum */
__global__ void rmsnorm_dw_terms_kernel(float *terms, const float *dout, const float *inp,
                                        const float *rstd, int C, size_t n)
{
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x)
        terms[e] = inp[e] * rstd[e / C] * dout[e];
}

extern "C" void pw_rmsnorm_backward_cuda(float *dinp, float *dweight, const float *dout,
                                         const float *inp, const float *weight,
                                         const float *rstd, int N, int C, cudaStream_t stream)
{
    if (N <= 0 || C <= 0) return;
    if (dinp) {
        int blocks = (N + RMS_ROWS_PER_BLOCK - 1) / RMS_ROWS_PER_BLOCK;
        rmsnorm_dinp_kernel<<<blocks, RMS_ROWS_PER_BLOCK * PW_WARP, 0, stream>>>(
            dinp, dout, inp, weight, rstd, N, C);
        PW_CUDA_CHECK(cudaGetLastError());
    }
    if (!dweight) return;
    size_t n = (size_t)N * C;
    float *terms = (float *)pw_cuda_scratch(sizeof(float) * n, stream);
    rmsnorm_dw_terms_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(terms, dout, inp, rstd,
                                                                          C, n);
    PW_CUDA_CHECK(cudaGetLastError());
    pw_colsum_add_f32(dweight, terms, N, C, C, stream);
    pw_cuda_scratch_free(terms, stream);
}
