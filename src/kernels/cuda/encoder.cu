/* encoder.cu: GPT-2's input layer on the GPU: token plus position embeddings, forward and
 * backward, and the positions of a left-padded batch (twins of cpu/encoder.c). */
#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "encoder_kernels.cuh"

extern "C" void pw_positions_from_mask_cuda(int *pos, const int *mask, int B, int T,
                                            cudaStream_t stream)
{
    if (B <= 0 || T <= 0) return;
    positions_kernel<<<(B + POSITIONS_THREADS - 1) / POSITIONS_THREADS, POSITIONS_THREADS, 0,
                       stream>>>(pos, mask, B, T);
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_encoder_forward_cuda(float *out, const int *inp, const int *pos,
                                        const float *wte, const float *wpe, int B, int T, int C,
                                        cudaStream_t stream)
{
    size_t n = (size_t)B * T * C;
    if (n == 0) return;
    pw_launch(encoder_forward_kernel, pw_ew_blocks(n), PW_EW_THREADS, 0, stream, out, inp, pos,
              wte, wpe, B, T, C);
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
