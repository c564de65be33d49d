/* rope.cu: rotary position embeddings on the GPU, in place, forward and backward (twin of
 * cpu/rope.c), or read and written rounded to bfloat16 rows: one thread per rotated pair. */
#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "rope_kernels.cuh"

static void rope_launch(float *x, pw_bf16 *x16, const int *pos, const float *inv_freq, int N,
                        int nheads, int hs, int stride, float sign, cudaStream_t stream)
{
    size_t total = (size_t)N * nheads * (hs / 2) + (x16 ? (size_t)N * (stride - nheads * hs) : 0);
    if (total == 0) return;
    pw_launch(rope_kernel, pw_ew_blocks(total), PW_EW_THREADS, 0, stream, x, x16, pos, inv_freq,
              N, nheads, hs, stride, sign);
}

extern "C" void pw_rope_forward_cuda(float *x, const int *pos, const float *inv_freq, int N,
                                     int nheads, int hs, int stride, cudaStream_t stream)
{
    rope_launch(x, NULL, pos, inv_freq, N, nheads, hs, stride, 1.0f, stream);
}

/* x is only read when x16 is given */
extern "C" void pw_rope_forward_bf16_cuda(pw_bf16 *x16, const float *x, const int *pos,
                                          const float *inv_freq, int N, int nheads, int hs,
                                          int stride, cudaStream_t stream)
{
    rope_launch((float *)x, x16, pos, inv_freq, N, nheads, hs, stride, 1.0f, stream);
}

/* the transpose of a rotation is the rotation by the opposite angle */
extern "C" void pw_rope_backward_cuda(float *dx, const int *pos, const float *inv_freq, int N,
                                      int nheads, int hs, int stride, cudaStream_t stream)
{
    rope_launch(dx, NULL, pos, inv_freq, N, nheads, hs, stride, -1.0f, stream);
}

extern "C" void pw_rope_backward_bf16_cuda(pw_bf16 *dx16, const float *dx, const int *pos,
                                           const float *inv_freq, int N, int nheads, int hs,
                                           int stride, cudaStream_t stream)
{
    rope_launch((float *)dx, dx16, pos, inv_freq, N, nheads, hs, stride, -1.0f, stream);
}
