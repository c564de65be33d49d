/* record.cu: the rows' bookkeeping after a draw on the GPU, the twin of pw_sample_record
 * (src/kernels/cpu/record.c, the kernel table's `record` entry): one thread per drawn row; a
 * decode pass holds each row once, so no two threads touch the same row. */
#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "record_kernels.cuh"

void pw_sample_record_cuda(const PwGenRows *g, int n, const int *rows, const int *token,
                           const float *logp, const float *logp_full, int *pass_tok,
                           int *pass_pos, int *pass_slot0, cudaStream_t stream)
{
    if (n <= 0) return;
    pw_launch(record_kernel, (n + RECORD_THREADS - 1) / RECORD_THREADS, RECORD_THREADS, 0, stream,
              *g, n, rows, token, logp, logp_full, pass_tok, pass_pos, pass_slot0);
}
