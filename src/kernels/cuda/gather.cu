/* gather.cu: copy chosen rows of a matrix into a dense one on the GPU (twin of cpu/gather.c). */
#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "gather_kernels.cuh"

extern "C" void pw_gather_rows_cuda(float *dst, const float *src, const int *rows, int n, int C,
                                    cudaStream_t stream)
{
    if (n <= 0 || C <= 0) return;
    pw_launch(gather_rows_kernel, pw_ew_blocks((size_t)n * C), PW_EW_THREADS, 0, stream, dst, src,
              rows, n, C);
}
