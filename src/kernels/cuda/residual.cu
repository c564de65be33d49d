/* residual.cu: the residual connection on the GPU, out = a + b, and its backward, which adds
 * the gradient into both branches (twin of cpu/residual.c). */
#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "residual_kernels.cuh"

extern "C" void pw_residual_forward_cuda(float *out, const float *a, const float *b, size_t N,
                                         cudaStream_t stream)
{
    if (N == 0) return;
    pw_launch(residual_forward_kernel, pw_ew_blocks(N), PW_EW_THREADS, 0, stream, out, a, b, N);
}

extern "C" void pw_residual_backward_cuda(float *da, float *db, const float *dout, size_t N,
                                          cudaStream_t stream)
{
    if (N == 0 || (!da && !db)) return;
    residual_backward_kernel<<<pw_ew_blocks(N), PW_EW_THREADS, 0, stream>>>(da, db, dout, N);
    PW_CUDA_CHECK(cudaGetLastError());
}
