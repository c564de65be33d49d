/* pw_cuda_check.h: the one check of CUDA runtime and cuBLAS calls, for .c and .cu files alike:
 * a failure names the file, the line and the call, then ends the process through one path. */
#ifndef PW_CUDA_CHECK_H
#define PW_CUDA_CHECK_H

#ifdef PW_HAVE_CUDA

#include <cuda_runtime_api.h> /* cudaError_t, cudaGetErrorString; plain C */

#ifdef __cplusplus
extern "C" {
#endif

/* What a failed check calls with its location and one-line message; it must not return. The
 * kernels, which own this check, know no MPI: without a handler a failure prints
 * "[ppo_world] FILE:LINE: MESSAGE" and exits 1. The runtime installs one that ends the whole
 * job (MPI_Abort), since a rank that merely exits can leave the others waiting for it. */
typedef void (*PwCudaFailFn)(const char *file, int line, const char *msg);

/* Installs fn (NULL: the default again) and returns the handler it replaces. */
PwCudaFailFn pw_cuda_set_fail_handler(PwCudaFailFn fn);

#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 3, 4)))
#endif
void pw_cuda_fail(const char *file, int line, const char *fmt, ...);

#ifdef __cplusplus
}
#endif

/* Every CUDA runtime call goes through this, and so does cudaGetLastError() after each kernel
 * launch: a bad launch configuration is then reported at the launch, not at a later call. */
#define PW_CUDA_CHECK(call)                                                                  \
    do {                                                                                     \
        cudaError_t pw_cu_rc_ = (call);                                                      \
        if (pw_cu_rc_ != cudaSuccess)                                                        \
            pw_cuda_fail(__FILE__, __LINE__, "CUDA call %s failed: %s", #call,               \
                         cudaGetErrorString(pw_cu_rc_));                                     \
    } while (0)

/* The same for cuBLAS; the file that uses it includes <cublas_v2.h>, so that the many users of
 * PW_CUDA_CHECK alone do not need the cuBLAS headers. */
#define PW_CUBLAS_CHECK(call)                                                                \
    do {                                                                                     \
        cublasStatus_t pw_cb_rc_ = (call);                                                   \
        if (pw_cb_rc_ != CUBLAS_STATUS_SUCCESS)                                              \
            pw_cuda_fail(__FILE__, __LINE__, "cuBLAS call %s failed: %s (%d)", #call,        \
                         cublasGetStatusString(pw_cb_rc_), (int)pw_cb_rc_);                  \
    } while (0)

#endif /* PW_HAVE_CUDA */
#endif
