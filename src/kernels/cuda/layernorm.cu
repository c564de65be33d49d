/* layernorm.cu: LayerNorm over the channels of each row on the GPU, forward and backward,
 * eps 1e-5 and biased variance (twin of cpu/layernorm.c); one warp per row. */
#include <stdint.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "layernorm_kernels.cuh"

static unsigned long vec_calls; /* the norms' forwards the float4 kernels took */

extern "C" unsigned long pw_cuda_ln_vec_calls(void)
{
    return __atomic_load_n(&vec_calls, __ATOMIC_RELAXED);
}

void pw_row_vec_count(void) { __atomic_fetch_add(&vec_calls, 1ul, __ATOMIC_RELAXED); }

static int aligned(const void *p, uintptr_t n) { return ((uintptr_t)p % n) == 0; }

int pw_row_vec_fits(int C, const float *inp, const float *inp2, const float *res,
                    const float *out, const void *out16, const float *weight, const float *bias)
{
    return pw_cuda_get_ln_vec() && C % 4 == 0 && C <= PW_ROW_VEC * 4 * PW_WARP &&
           aligned(inp, 16) && aligned(inp2, 16) && aligned(res, 16) && aligned(out, 16) &&
           aligned(out16, 8) && aligned(weight, 16) && aligned(bias, 16);
}

/* the float4 forward (pw_cuda_set_ln_vec) where it applies (pw_row_vec_fits) */
static int forward_vec(float *out, pw_bf16 *out16, float *mean, float *rstd, float *res,
                       const float *inp, const float *inp2, const float *weight,
                       const float *bias, int N, int C, cudaStream_t stream)
{
    if (!pw_row_vec_fits(C, inp, inp2, res, out, out16, weight, bias)) return 0;
    pw_launch(layernorm_forward_vec_kernel, pw_row_vec_blocks(N),
              (unsigned)(pw_row_vec_warps(N) * PW_WARP), 0, stream, out, (uint16_t *)out16, mean,
              rstd, res, inp, inp2, weight, bias, N, C);
    pw_row_vec_count();
    return 1;
}

static void forward(float *out, pw_bf16 *out16, float *mean, float *rstd, float *res,
                    const float *inp, const float *inp2, const float *weight, const float *bias,
                    int N, int C, cudaStream_t stream)
{
    if (N <= 0 || C <= 0) return;
    if (forward_vec(out, out16, mean, rstd, res, inp, inp2, weight, bias, N, C, stream)) return;
    pw_launch(layernorm_forward_kernel, pw_row_blocks(N), PW_ROW_THREADS, 0, stream, out, out16,
              mean, rstd, res, inp, inp2, weight, bias, N, C);
}

extern "C" void pw_layernorm_forward_cuda(float *out, float *mean, float *rstd, const float *inp,
                                          const float *weight, const float *bias, int N, int C,
                                          cudaStream_t stream)
{
    forward(out, NULL, mean, rstd, NULL, inp, NULL, weight, bias, N, C, stream);
}

extern "C" void pw_layernorm_forward_bf16_cuda(pw_bf16 *out, float *mean, float *rstd,
                                               const float *inp, const float *weight,
                                               const float *bias, int N, int C,
                                               cudaStream_t stream)
{
    forward(NULL, out, mean, rstd, NULL, inp, NULL, weight, bias, N, C, stream);
}

extern "C" void pw_residual_layernorm_forward_cuda(float *res, float *out, pw_bf16 *out16,
                                                   float *mean, float *rstd, const float *a,
                                                   const float *b, const float *weight,
                                                   const float *bias, int N, int C,
                                                   cudaStream_t stream)
{
    forward(out, out16, mean, rstd, res, a, b, weight, bias, N, C, stream);
}

extern "C" void pw_layernorm_backward_cuda(float *dinp, pw_bf16 *dinp16, float *dweight,
                                           float *dbias, const float *dout, const float *inp,
                                           const float *weight, const float *mean,
                                           const float *rstd, int N, int C, cudaStream_t stream)
{
    if (N <= 0 || C <= 0) return;
    if (!dweight && !dbias) {
        if (dinp) {
            layernorm_dinp_kernel<<<pw_row_blocks(N), PW_ROW_THREADS, 0, stream>>>(
                dinp, dinp16, dout, inp, weight, mean, rstd, N, C);
            PW_CUDA_CHECK(cudaGetLastError());
        }
        return;
    }
    unsigned fblocks = pw_lnb_finish_blocks(C);
    if (pw_lnb_one_pass(C)) {
        /* one read of dout and inp for all three (layernorm_backward_rows_kernel says why) */
        int rows = pw_lnb_rows((size_t)N);
        unsigned blocks = pw_lnb_blocks((size_t)N, rows);
        float *partial = (float *)pw_cuda_scratch(2 * sizeof(float) * (size_t)blocks * C, stream);
        float *pw = partial, *pb = partial + (size_t)blocks * C;
        layernorm_backward_rows_kernel<<<blocks, PW_ROW_THREADS, 0, stream>>>(
            dinp, dinp16, pw, pb, dout, inp, weight, mean, rstd, N, C, rows);
        PW_CUDA_CHECK(cudaGetLastError());
        layernorm_dwdb_finish_kernel<<<fblocks, PW_ROW_THREADS, 0, stream>>>(dweight, dbias, pw,
                                                                             pb, (int)blocks, C);
        PW_CUDA_CHECK(cudaGetLastError());
        pw_cuda_scratch_free(partial, stream);
        return;
    }
    if (dinp) {
        layernorm_dinp_kernel<<<pw_row_blocks(N), PW_ROW_THREADS, 0, stream>>>(
            dinp, dinp16, dout, inp, weight, mean, rstd, N, C);
        PW_CUDA_CHECK(cudaGetLastError());
    }
    int rows = pw_colsum_chunk_rows(N), nchunks = (N + rows - 1) / rows;
    unsigned cblocks = (unsigned)((C + PW_COLSUM_THREADS - 1) / PW_COLSUM_THREADS);
    float *partial = (float *)pw_cuda_scratch(2 * sizeof(float) * (size_t)nchunks * C, stream);
    float *pw = partial, *pb = partial + (size_t)nchunks * C;
    dim3 grid(cblocks, nchunks);
    layernorm_dwdb_partial_kernel<<<grid, PW_COLSUM_THREADS, 0, stream>>>(pw, pb, dout, inp, mean,
                                                                          rstd, N, C, rows);
    PW_CUDA_CHECK(cudaGetLastError());
    layernorm_dwdb_finish_kernel<<<fblocks, PW_ROW_THREADS, 0, stream>>>(dweight, dbias, pw, pb,
                                                                         nchunks, C);
    PW_CUDA_CHECK(cudaGetLastError());
    pw_cuda_scratch_free(partial, stream);
}
