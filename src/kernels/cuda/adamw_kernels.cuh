/* adamw_kernels.cuh: the AdamW update: one thread per parameter, grid-stride, bias corrections
 * from the host (launched by adamw.cu; the CPU twin is cpu/adamw.c). Written in the C subset of
 * CUDA, so that tests/cuda/test_gpt2_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_ADAMW_KERNELS_CUH
#define PW_ADAMW_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "warp.cuh"

__global__ void adamw_kernel(float *params, const float *grads, float *m, float *v, size_t n,
                             float lr, float beta1, float beta2, float eps, float weight_decay,
                             float c1, float c2)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = grads[i];
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float p = params[i];
        params[i] = p - lr * (mi * c1 / (sqrtf(vi * c2) + eps) + weight_decay * p);
    }
}

#endif
