/* rope_kernels.cuh: rotary position embeddings in place: one thread per rotated pair (launched by
 * rope.cu, the twin of cpu/rope.c). Written in the C subset of CUDA, so that
 * tests/cuda/test_kernels_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_ROPE_KERNELS_CUH
#define PW_ROPE_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "bf16.cuh"
#include "warp.cuh"

/* The angle is the fp32 product, as on the CPU; its cos and sin are taken in double so that
 * both devices round the same exact values to float. In place; or, with x16, x is only read and
 * each whole row (stride values: the rotated heads, then the rest as they are) goes rounded to
 * bfloat16 into x16 (a bf16 Llama's dqkv, the qkv product's dout): the rows' tail after the
 * pairs in the same grid-stride loop. */
__global__ void rope_kernel(float *x, uint16_t *x16, const int *pos, const float *inv_freq,
                            int N, int nheads, int hs, int stride, float sign)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    int half = hs / 2, rot = nheads * hs;
    size_t pairs = (size_t)N * nheads * half;
    size_t total = pairs + (x16 ? (size_t)N * (stride - rot) : 0);
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        if (e >= pairs) { /* a tail value of a row, rounded as it is */
            size_t t = e - pairs;
            size_t at = t / (stride - rot) * stride + rot + t % (stride - rot);
            x16[at] = pw_bf16_bits(x[at]);
            continue;
        }
        int i = (int)(e % half);
        size_t nh = e / half;
        int h = (int)(nh % nheads), n = (int)(nh / nheads);
        float a = (float)(pos ? pos[n] : n) * inv_freq[i];
        double sd, cd;
        sincos((double)a, &sd, &cd);
        float c = (float)cd, s = sign * (float)sd;
        size_t at = (size_t)n * stride + (size_t)h * hs;
        float x1 = x[at + i], x2 = x[at + i + half];
        float y1 = x1 * c - x2 * s, y2 = x2 * c + x1 * s;
        if (x16) {
            x16[at + i] = pw_bf16_bits(y1);
            x16[at + i + half] = pw_bf16_bits(y2);
        } else {
            x[at + i] = y1;
            x[at + i + half] = y2;
        }
    }
}

#endif
