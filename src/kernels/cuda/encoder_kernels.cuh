/* encoder_kernels.cuh: positions from the padding mask, token plus position embeddings, and the
 * backward (a block a group of rows that share an embedding row, summed in row order) (launched
 * by encoder.cu; the CPU twin is cpu/encoder.c).
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

/* The rows of one group (pw_row_groups: a token's, or a position's) added into their embedding
 * row, a thread a column: the row's value first, then each row's gradient in ascending row
 * order, as the CPU's loop adds them, so the sums are the same bits on every run and the CPU's.
 * Blocks (group, slice of columns); no two blocks write one row. */
__global__ void embed_rows_backward_kernel(float *dw, const float *dout, const int *order,
                                           const int *start, const int *key, int C)
{
    int g = blockIdx.x, c = blockIdx.y * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float *row = dw + (size_t)key[g] * C + c;
    float acc = *row;
    for (int i = start[g]; i < start[g + 1]; i++) acc += dout[(size_t)order[i] * C + c];
    *row = acc;
}

#endif
