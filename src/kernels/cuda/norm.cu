/* norm.cu: the two halves of global-norm gradient clipping on the GPU: a sum of squares in
 * double (twin of cpu/norm.c's pw_sumsq) and a scale. */
#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "norm_kernels.cuh"

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

extern "C" void pw_scale_cuda(float *x, float s, size_t n, cudaStream_t stream)
{
    if (n == 0) return;
    scale_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(x, s, n);
    PW_CUDA_CHECK(cudaGetLastError());
}
