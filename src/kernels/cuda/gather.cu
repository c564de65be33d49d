/* gather.cu: copy chosen rows of a matrix into a dense one on the GPU (twin of cpu/gather.c). */
#include "common.cuh"
#include "pw_kernels_cuda.h"

__global__ void gather_rows_kernel(float *dst, const float *src, const int *rows, int n, int C)
{
    size_t total = (size_t)n * C;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t i = e / C, c = e % C;
        dst[e] = src[(size_t)rows[i] * C + c];
    }
}

extern "C" void pw_gather_rows_cuda(float *dst, const float *src, const int *rows, int n, int C,
                                    cudaStream_t stream)
{
    if (n <= 0 || C <= 0) return;
    gather_rows_kernel<<<pw_ew_blocks((size_t)n * C), PW_EW_THREADS, 0, stream>>>(dst, src, rows,
                                                                                  n, C);
    PW_CUDA_CHECK(cudaGetLastError());
}
