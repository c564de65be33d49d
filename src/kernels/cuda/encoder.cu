/* encoder.cu: GPT-2's input layer on the GPU: token plus position embeddings, forward and
 * backward, and the positions of a left-padded batch (twins of cpu/encoder.c). */
#include "common.cuh"
#include "pw_kernels_cuda.h"

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

extern "C" void pw_positions_from_mask_cuda(int *pos, const int *mask, int B, int T,
                                            cudaStream_t stream)
{
    if (B <= 0 || T <= 0) return;
    positions_kernel<<<(B + 127) / 128, 128, 0, stream>>>(pos, mask, B, T);
    PW_CUDA_CHECK(cudaGetLastError());
}

__global__ void encoder_forward_kernel(float *out, const int *inp, const int *pos, const float *wte,
                                       const float *wpe, int B, int T, int C)
{
    size_t n = (size_t)B * T * C;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t bt = i / C;
        int c = (int)(i % C);
        int p = pos ? pos[bt] : (int)(bt % T);
        out[i] = wte[(size_t)inp[bt] * C + c] + wpe[(size_t)p * C + c];
    }
}

extern "C" void pw_encoder_forward_cuda(float *out, const int *inp, const int *pos,
                                        const float *wte, const float *wpe, int B, int T, int C,
                                        cudaStream_t stream)
{
    size_t n = (size_t)B * T * C;
    if (n == 0) return;
    encoder_forward_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(out, inp, pos, wte, wpe,
                                                                          B, T, C);
    PW_CUDA_CHECK(cudaGetLastError());
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

extern "C" void pw_encoder_backward_cuda(float *dwte, float *dwpe, const float *dout,
                                         const int *inp, const int *pos, int B, int T, int C,
                                         cudaStream_t stream)
{
    size_t n = (size_t)B * T * C;
    if (n == 0 || (!dwte && !dwpe)) return;
    encoder_backward_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(dwte, dwpe, dout, inp,
                                                                           pos, B, T, C);
    PW_CUDA_CHECK(cudaGetLastError());
}
