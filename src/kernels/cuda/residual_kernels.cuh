/* residual_kernels.cuh: the residual sum and its backward: grid-stride elementwise loops (launched
 * by residual.cu; the CPU twin is cpu/residual.c). Written in the C subset of CUDA, so that
 * tests/cuda/test_gpt2_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_RESIDUAL_KERNELS_CUH
#define PW_RESIDUAL_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "warp.cuh"

__global__ void residual_forward_kernel(float *out, const float *a, const float *b, size_t n)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}

/* da or db may be NULL (not needed) */
__global__ void residual_backward_kernel(float *da, float *db, const float *dout, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float d = dout[i];
        if (da) da[i] += d;
        if (db) db[i] += d;
    }
}

#endif
