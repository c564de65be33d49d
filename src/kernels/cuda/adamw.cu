/* adamw.cu: the AdamW update on the GPU (decoupled weight decay, bias correction as PyTorch;
 * twin of cpu/adamw.c). */
#include <math.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "adamw_kernels.cuh"

extern "C" void pw_adamw_update_cuda(float *params, pw_bf16 *params16, const float *grads,
                                     float gscale, float *m, float *v, size_t n, float lr,
                                     float beta1, float beta2, float eps, float weight_decay,
                                     int t, cudaStream_t stream)
{
    if (n == 0) return;
    /* bias corrections on the host in double, exactly as the CPU twin computes them */
    float c1 = (float)(1.0 / (1.0 - pow(beta1, t)));
    float c2 = (float)(1.0 / (1.0 - pow(beta2, t)));
    adamw_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(
        params, params16, grads, gscale, m, v, n, lr, beta1, beta2, eps, weight_decay, c1, c2);
    PW_CUDA_CHECK(cudaGetLastError());
}
