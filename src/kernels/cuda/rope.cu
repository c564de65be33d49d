/* rope.cu: rotary position embeddings on the GPU, in place, forward and backward (twin of
 * cpu/rope.c): one thread per rotated pair. */
#include "common.cuh"
#include "pw_kernels_cuda.h"

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

static void rope_launch(float *x, const int *pos, const float *inv_freq, int N, int nheads, int hs,
                        int stride, float sign, cudaStream_t stream)
{
    size_t total = (size_t)N * nheads * (hs / 2);
    if (total == 0) return;
    rope_kernel<<<pw_ew_blocks(total), PW_EW_THREADS, 0, stream>>>(x, pos, inv_freq, N, nheads,
                                                                   hs, stride, sign);
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_rope_forward_cuda(float *x, const int *pos, const float *inv_freq, int N,
                                     int nheads, int hs, int stride, cudaStream_t stream)
{
    rope_launch(x, pos, inv_freq, N, nheads, hs, stride, 1.0f, stream);
}

/* the transpose of a rotation is the rotation by the opposite angle */
extern "C" void pw_rope_backward_cuda(float *dx, const int *pos, const float *inv_freq, int N,
                                      int nheads, int hs, int stride, cudaStream_t stream)
{
    rope_launch(dx, pos, inv_freq, N, nheads, hs, stride, -1.0f, stream);
}
