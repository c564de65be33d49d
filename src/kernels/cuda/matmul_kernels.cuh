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
#include "launch.cuh"

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

/* The same 8 elements a thread where the pointers are 16-byte aligned (matmul.cu checks): two
 * 16-byte loads and one store, where a thread of the kernel above has 4 bytes in flight (the
 * bf16 copy of the parameters after every update: 744 MB moved for GPT-2 124M); units as
 * launch.cuh's PW_VEC says. */

__global__ void f32_to_bf16_vec_kernel(uint16_t *out, const float *inp, size_t n)
{
    size_t n8 = n / PW_VEC, units = n8 + n % PW_VEC;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < units;
         i += (size_t)gridDim.x * blockDim.x) {
        if (i >= n8) {
            size_t k = n8 * PW_VEC + (i - n8);
            out[k] = pw_bf16_bits(inp[k]);
            continue;
        }
        float4 a = ((const float4 *)inp)[2 * i], b = ((const float4 *)inp)[2 * i + 1];
        ((uint4 *)out)[i] = make_uint4(pw_bf16_pair(a.x, a.y), pw_bf16_pair(a.z, a.w),
                                       pw_bf16_pair(b.x, b.y), pw_bf16_pair(b.z, b.w));
    }
}

__global__ void bf16_to_f32_kernel(float *out, const uint16_t *inp, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = pw_bf16_float(inp[i]);
}

#endif
