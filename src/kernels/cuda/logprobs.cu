/* logprobs.cu: log-probabilities, entropies and cross-entropy of chosen tokens on the GPU, and
 * their backward (twin of cpu/logprobs.c): one block per row of logits, no softmax stored. */
#include <math.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "logprobs_kernels.cuh"

extern "C" void pw_logprobs_forward_cuda(float *logp, float *entropy, float *stats,
                                         const float *logits, const int *targets, int N, int V,
                                         int ld, cudaStream_t stream)
{
    if (N <= 0) return;
    logprobs_forward_kernel<<<N, LP_THREADS, 0, stream>>>(logp, entropy, NULL, stats, logits,
                                                          targets, V, ld);
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_logprobs_backward_cuda(float *dlogits, const float *logits, const float *stats,
                                          const int *targets, const float *dlogp,
                                          const float *dentropy, int N, int V, int ld,
                                          cudaStream_t stream)
{
    if (N <= 0) return;
    logprobs_backward_kernel<<<N, LP_THREADS, 0, stream>>>(dlogits, logits, stats, targets, dlogp,
                                                           dentropy, 1.0f, V, ld);
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_logprobs_backward_bf16_cuda(pw_bf16 *dlogits16, const float *logits,
                                               const float *stats, const int *targets,
                                               const float *dlogp, const float *dentropy, int N,
                                               int V, int ld, float mul, cudaStream_t stream)
{
    if (N <= 0) return;
    logprobs_backward_bf16_kernel<<<N, LP_THREADS, 0, stream>>>(dlogits16, logits, stats, targets,
                                                                dlogp, dentropy, V, ld, mul);
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_crossentropy_forward_cuda(float *losses, const float *logits, const int *targets,
                                             int N, int V, cudaStream_t stream)
{
    if (N <= 0) return;
    logprobs_forward_kernel<<<N, LP_THREADS, 0, stream>>>(NULL, NULL, losses, NULL, logits,
                                                          targets, V, V);
    PW_CUDA_CHECK(cudaGetLastError());
}

/* the cross-entropy is -log p_t: the log-prob backward with g = -dloss, h = 0 */
extern "C" void pw_crossentropy_backward_cuda(float *dlogits, const float *logits,
                                              const int *targets, const float *dlosses, int N,
                                              int V, cudaStream_t stream)
{
    if (N <= 0) return;
    logprobs_backward_kernel<<<N, LP_THREADS, 0, stream>>>(dlogits, logits, NULL, targets,
                                                           dlosses, NULL, -1.0f, V, V);
    PW_CUDA_CHECK(cudaGetLastError());
}
