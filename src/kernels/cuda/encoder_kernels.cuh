/* encoder_kernels.cuh: positions from the padding mask, token plus position embeddings, and the
 * backward (atomicAdd into shared rows) (launched by encoder.cu; the CPU twin is cpu/encoder.c).
 * Written in the C subset of CUDA, so that tests/cuda/test_gpt2_emu.c compiles this very file on
 * the host and runs it under tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_ENCODER_KERNELS_CUH
#define PW_ENCODER_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "warp.cuh"

#define POSITIONS_THREADS 128 /* rows (sequences) per block of positions_kernel */

/* one thread per sequence: a running count over at most a few thousand columns is cheaper
 * than a parallel scan's launches, and the batch is tiny next to everything else */
__global__ void positions_kernel(int *pos, const int *mask, int B, int T)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B) return;
    int seen = 0;
    for (int t = 0; t < T; t++) {
        size_t i = (size_t)b * T + t;
        int real = mask ? mask[i] != 0 : 1;
        pos[i] = real ? seen : 0;
        seen += real;
    }
}

__global__ void encoder_forward_kernel(float *out, const int *inp, const int *pos, const float *wte,
                                       const float *wpe, int B, int T, int C)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    size_t n = (size_t)B * T * C;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t bt = i / C;
        int c = (int)(i % C);
        int p = pos ? pos[bt] : (int)(bt % T);
        out[i] = wte[(size_t)inp[bt] * C + c] + wpe[(size_t)p * C + c];
    }
}

/* Rows that share a token (or, always, a position) add into the same gradient row from many
 * threads, hence atomicAdd; the order of those additions is not fixed (see the header). */
__global__ void encoder_backward_kernel(float *dwte, float *dwpe, const float *dout, const int *inp,
                                        const int *pos, int B, int T, int C)
{
    size_t n = (size_t)B * T * C;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t bt = i / C;
        int c = (int)(i % C);
        float d = dout[i];
        if (dwte) atomicAdd(dwte + (size_t)inp[bt] * C + c, d);
        if (dwpe) {
            int p = pos ? pos[bt] : (int)(bt % T);
            atomicAdd(dwpe + (size_t)p * C + c, d);
        }
    }
}

#endif
