/* encoder.cu: GPT-2's input layer on the GPU: token plus position embeddings, forward and
 * backward, and the positions of a left-padded batch (twins of cpu/encoder.c). */
#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "encoder_kernels.cuh"

#define EMBED_ROWS_THREADS 128 /* columns of a group's block */

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

static void embed_rows_backward(float *dw, const float *dout, const PwRowGroups *g, int C,
                                cudaStream_t stream)
{
    if (!dw || !g || g->n <= 0 || C <= 0) return;
    dim3 grid((unsigned)g->n, (unsigned)((C + EMBED_ROWS_THREADS - 1) / EMBED_ROWS_THREADS));
    embed_rows_backward_kernel<<<grid, EMBED_ROWS_THREADS, 0, stream>>>(dw, dout, g->order,
                                                                         g->start, g->key, C);
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_encoder_backward_cuda(float *dwte, float *dwpe, const float *dout,
                                         const PwRowGroups *tok, const PwRowGroups *pos, int C,
                                         cudaStream_t stream)
{
    embed_rows_backward(dwte, dout, tok, C, stream);
    embed_rows_backward(dwpe, dout, pos, C, stream);
}
