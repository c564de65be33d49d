/* norm_kernels.cuh: sums of squares in double over a fixed grid (then one block), and a scale
 * (launched by norm.cu; the CPU twin is cpu/norm.c). Written in the C subset of CUDA, so that
 * tests/cuda/test_gpt2_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_NORM_KERNELS_CUH
#define PW_NORM_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "warp.cuh"

#define SUMSQ_THREADS 256
#define SUMSQ_BLOCKS 1024 /* fixed, so the partials and their order never depend on n */

/* the sum of s over a block of SUMSQ_THREADS threads, valid in thread 0 */
static __device__ double block_sum_d(double s)
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

__global__ void scale_kernel(float *x, float s, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] *= s;
}

#endif
