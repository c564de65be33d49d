/* rope_kernels.cuh: rotary position embeddings in place: one thread per rotated pair (launched by
 * rope.cu, the twin of cpu/rope.c). Written in the C subset of CUDA, so that
 * tests/cuda/test_kernels_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_ROPE_KERNELS_CUH
#define PW_ROPE_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "warp.cuh"

/* The angle is the fp32 product, as on the CPU; its cos and sin are taken in double so that
 * both devices round the same exact values to float. */
__global__ void rope_kernel(float *x, const int *pos, const float *inv_freq, int N, int nheads,
                            int hs, int stride, float sign)
{
    int half = hs / 2;
    size_t total = (size_t)N * nheads * half;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(e % half);
        size_t nh = e / half;
        int h = (int)(nh % nheads), n = (int)(nh / nheads);
        float a = (float)(pos ? pos[n] : n) * inv_freq[i];
        double sd, cd;
        sincos((double)a, &sd, &cd);
        float c = (float)cd, s = sign * (float)sd;
        float *v = x + (size_t)n * stride + (size_t)h * hs;
        float x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c - x2 * s;
        v[i + half] = x2 * c + x1 * s;
    }
}

#endif
