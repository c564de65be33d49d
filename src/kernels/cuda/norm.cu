/* norm.cu: the two halves of global-norm gradient clipping on the GPU: a sum of squares in
 * double (twin of cpu/norm.c's pw_sumsq) and a scale. */
#include "common.cuh"
#include "pw_kernels_cuda.h"

#define SUMSQ_THREADS 256
#define SUMSQ_BLOCKS 1024 /* fixed, so the partials and their order never depend on n */

/* the sum of s over a block of SUMSQ_THREADS threads, valid in thread 0 */
__device__ double block_sum_d(double s)
{
    __shared__ double warp_sums[SUMSQ_THREADS / PW_WARP];
    int warp = threadIdx.x / PW_WARP, lane = threadIdx.x % PW_WARP;
    s = pw_warp_sum_d(s);
    if (lane == 0) warp_sums[warp] = s;
    __syncthreads();
    s = 0.0;
    if (warp == 0) s = pw_warp_sum_d(lane < SUMSQ_THREADS / PW_WARP ? warp_sums[lane] : 0.0);
    return s;
}

/* stage one: block j sums its grid-stride share into partial[j] (double throughout) */
__global__ void sumsq_partial_kernel(double *partial, const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += (double)x[i] * x[i];
    s = block_sum_d(s);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

/* stage two: one block adds the partials in a fixed order, then into *sum */
__global__ void sumsq_finish_kernel(double *sum, const double *partial)
{
    double s = 0.0;
    for (int i = threadIdx.x; i < SUMSQ_BLOCKS; i += blockDim.x) s += partial[i];
    s = block_sum_d(s);
    if (threadIdx.x == 0) *sum += s;
}

extern "C" void pw_sumsq_add_cuda(double *sum, const float *x, size_t n, cudaStream_t stream)
{
    if (n == 0) return;
    double *partial = (double *)pw_cuda_scratch(sizeof(double) * SUMSQ_BLOCKS, stream);
    sumsq_partial_kernel<<<SUMSQ_BLOCKS, SUMSQ_THREADS, 0, stream>>>(partial, x, n);
    PW_CUDA_CHECK(cudaGetLastError());
    sumsq_finish_kernel<<<1, SUMSQ_THREADS, 0, stream>>>(sum, partial);
    PW_CUDA_CHECK(cudaGetLastError());
    pw_cuda_scratch_free(partial, stream);
}

extern "C" double pw_sumsq_cuda(const float *x, size_t n, cudaStream_t stream)
{
    if (n == 0) return 0.0;
    double h = 0.0, *d = (double *)pw_cuda_scratch(sizeof(double), stream);
    PW_CUDA_CHECK(cudaMemsetAsync(d, 0, sizeof(double), stream));
    pw_sumsq_add_cuda(d, x, n, stream);
    PW_CUDA_CHECK(cudaMemcpyAsync(&h, d, sizeof(double), cudaMemcpyDeviceToHost, stream));
    pw_cuda_scratch_free(d, stream);
    PW_CUDA_CHECK(cudaStreamSynchronize(stream));
    return h;
}

__global__ void scale_kernel(float *x, float s, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] *= s;
}

extern "C" void pw_scale_cuda(float *x, float s, size_t n, cudaStream_t stream)
{
    if (n == 0) return;
    scale_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(x, s, n);
    PW_CUDA_CHECK(cudaGetLastError());
}
