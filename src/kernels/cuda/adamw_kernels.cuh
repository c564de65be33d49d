/* adamw_kernels.cuh: the AdamW update: one thread per parameter, grid-stride, bias corrections
 * from the host (launched by adamw.cu; the CPU twin is cpu/adamw.c). Each gradient is times
 * gscale as it is read (a clipping's factor: the separate scaling pass read and wrote every
 * gradient once more), and the new weight is rounded into params16 when it is not NULL (a bf16
 * model's copy: the separate conversion read every weight once more). Written in the C subset
 * of CUDA, so that tests/cuda/test_gpt2_emu.c compiles this very file on the host and runs it
 * under tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_ADAMW_KERNELS_CUH
#define PW_ADAMW_KERNELS_CUH

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "bf16.cuh"
#include "warp.cuh"

__global__ void adamw_kernel(float *params, uint16_t *params16, const float *grads, float gscale,
                             float *m, float *v, size_t n, float lr, float beta1, float beta2,
                             float eps, float weight_decay, float c1, float c2)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = grads[i] * gscale;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float p = params[i];
        p = p - lr * (mi * c1 / (sqrtf(vi * c2) + eps) + weight_decay * p);
        params[i] = p;
        if (params16) params16[i] = pw_bf16_bits(p);
    }
}

#endif
