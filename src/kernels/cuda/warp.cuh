/* warp.cuh: sums and maxima over the 32 lanes of a warp, every lane getting the result (a
 * butterfly of __shfl_xor_sync, all lanes taking part). Plain C-subset CUDA, so that kernels
 * built on it can also be compiled on the host under tests/cuda/emu.h. */
#ifndef PW_CUDA_WARP_CUH
#define PW_CUDA_WARP_CUH

#define PW_WARP 32

static __device__ __forceinline__ float pw_warp_sum(float x)
{
    for (int o = PW_WARP / 2; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

static __device__ __forceinline__ double pw_warp_sum_d(double x)
{
    for (int o = PW_WARP / 2; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

static __device__ __forceinline__ float pw_warp_max(float x)
{
    for (int o = PW_WARP / 2; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

#endif
