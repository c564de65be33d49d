/* copy.cu: the kernel table's copy_batch on the GPU: many copies within the device, and zero
 * fills, queued as one launch a PW_COPY_SEGS pieces (copy_kernels.cuh says why). */
#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "copy_kernels.cuh"

extern "C" void pw_copy_batch_cuda(void *const *dst, const void *const *src, const size_t *bytes,
                                   int n, cudaStream_t stream)
{
    PwCopyLaunch a;
    int next = 0;
    while (next < n) {
        unsigned int blocks = pw_copy_plan(&a, dst, src, bytes, n, &next);
        if (!blocks) continue; /* only empty pieces were left */
        copy_batch_kernel<<<blocks, PW_COPY_THREADS, 0, stream>>>(a);
        PW_CUDA_CHECK(cudaGetLastError());
    }
}
