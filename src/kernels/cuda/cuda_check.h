/* cuda_check.h: the check macros of the CUDA kernels (private): a failed CUDA or cuBLAS call
 * prints what failed, with file and line, and aborts; the kernels layer knows no MPI. */
#ifndef PW_CUDA_CHECK_H
#define PW_CUDA_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

static inline void pw_cuda_check_(cudaError_t err, const char *what, const char *file, int line)
{
    if (err == cudaSuccess) return;
    fprintf(stderr, "CUDA error at %s:%d: %s: %s\n", file, line, what, cudaGetErrorString(err));
    abort();
}

static inline void pw_cublas_check_(cublasStatus_t st, const char *what, const char *file, int line)
{
    if (st == CUBLAS_STATUS_SUCCESS) return;
    fprintf(stderr, "cuBLAS error at %s:%d: %s: %s (%d)\n", file, line, what,
            cublasGetStatusString(st), (int)st);
    abort();
}

#define CUDA_CHECK(call) pw_cuda_check_((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) pw_cublas_check_((call), #call, __FILE__, __LINE__)
/* after every launch: a bad configuration is reported here, not at some later call */
#define CUDA_CHECK_LAUNCH() pw_cuda_check_(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

#endif
