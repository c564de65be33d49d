/* sample.cu: the launch of the sampler (sample_kernel.cuh, the twin of cpu/sample.c, the kernel
 * table's `sample` entry): one block per row, nothing of V size stored. */
#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "sample_kernel.cuh"

void pw_sample_rows_cuda(const float *logits, int ld, int n, int V, const int *rows,
                         const PwSampleConfig *sc, uint64_t *rng, int *token, float *logp,
                         float *logp_full, cudaStream_t stream)
{
    if (n <= 0) return;
    pw_launch(sample_kernel, n, SAMPLE_THREADS, 0, stream, logits, ld, V, rows,
              (double)sc->temperature, sc->top_k, (double)sc->top_p, rng, token, logp, logp_full);
}
