/* record_kernels.cuh: the rows' bookkeeping after a draw: one thread per drawn row (launched by
 * record.cu; the CPU twin is cpu/record.c). Written in the C subset of CUDA, so that
 * tests/cuda/test_gpt2_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_RECORD_KERNELS_CUH
#define PW_RECORD_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "pw_sample.h" /* PwGenRows */
#include "warp.cuh"

#define RECORD_THREADS 128 /* drawn rows per block */

__global__ void record_kernel(PwGenRows g, int n, const int *rows, const int *token,
                                     const float *logp, const float *logp_full, int *pass_tok,
                                     int *pass_pos, int *pass_slot0)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int b = rows[i], t = token[i];
    if (pass_tok) {
        pass_tok[i] = t;
        pass_pos[i]++;
        pass_slot0[i]++;
    }
    if (!g.live[b]) return;
    const size_t at = (size_t)b * g.R + g.length[b];
    g.tokens[at] = t;
    g.logp[at] = logp[i];
    g.logp_full[at] = logp_full[i];
    g.length[b]++;
    g.next[b] = t;
    if (t == g.stop_token) g.live[b] = 0;
}

#endif
