/* matmul_kernels.cuh: what the linear layer computes besides cuBLAS's GEMMs (launched by
 * matmul.cu): the bias seeding every row of the output, and the float32 <-> bfloat16 conversions
 * (by the bits, bf16.cuh, as pw_bf16.h on the host). Written in the C subset of CUDA, so that
 * tests/cuda/test_gpt2_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU. */
#ifndef PW_MATMUL_KERNELS_CUH
#define PW_MATMUL_KERNELS_CUH

#include <stddef.h>
#include <stdint.h>

#include "bf16.cuh"

/* every row of out(N,OC) starts as the bias, and the GEMM adds onto it (beta = 1), as the CPU */
__global__ void bias_seed_kernel(float *out, const float *bias, int N, int OC)
{
    size_t n = (size_t)N * OC;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = bias[i % OC];
}

__global__ void f32_to_bf16_kernel(uint16_t *out, const float *inp, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = pw_bf16_bits(inp[i]);
}

__global__ void bf16_to_f32_kernel(float *out, const uint16_t *inp, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = pw_bf16_float(inp[i]);
}

#endif
