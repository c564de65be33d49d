/* rmsnorm.cu: RMSNorm over the channels of each row on the GPU, forward and backward (twin of
 * cpu/rmsnorm.c); one warp per row, sums in double as the CPU twin does. */
#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "rmsnorm_kernels.cuh"

/* the float4 forward (pw_cuda_set_ln_vec) where it applies, as layernorm.cu's */
static int forward_vec(float *out, pw_bf16 *out16, float *rstd, float *res, const float *inp,
                       const float *inp2, const float *weight, int N, int C, float eps,
                       cudaStream_t stream)
{
    if (!pw_row_vec_fits(C, inp, inp2, res, out, out16, weight, weight)) return 0;
    pw_launch(rmsnorm_forward_vec_kernel, pw_row_vec_blocks(N),
              (unsigned)(pw_row_vec_warps(N) * PW_WARP), 0, stream, out, (uint16_t *)out16, rstd,
              res, inp, inp2, weight, N, C, eps);
    pw_row_vec_count();
    return 1;
}

static void forward(float *out, pw_bf16 *out16, float *rstd, float *res, const float *inp,
                    const float *inp2, const float *weight, int N, int C, float eps,
                    cudaStream_t stream)
{
    if (N <= 0 || C <= 0) return;
    if (forward_vec(out, out16, rstd, res, inp, inp2, weight, N, C, eps, stream)) return;
    pw_launch(rmsnorm_forward_kernel, pw_row_blocks(N), PW_ROW_THREADS, 0, stream, out, out16,
              rstd, res, inp, inp2, weight, N, C, eps);
}

extern "C" void pw_rmsnorm_forward_cuda(float *out, float *rstd, const float *inp,
                                        const float *weight, int N, int C, float eps,
                                        cudaStream_t stream)
{
    forward(out, NULL, rstd, NULL, inp, NULL, weight, N, C, eps, stream);
}

extern "C" void pw_rmsnorm_forward_bf16_cuda(pw_bf16 *out, float *rstd, const float *inp,
                                             const float *weight, int N, int C, float eps,
                                             cudaStream_t stream)
{
    forward(NULL, out, rstd, NULL, inp, NULL, weight, N, C, eps, stream);
}

extern "C" void pw_residual_rmsnorm_forward_cuda(float *res, float *out, pw_bf16 *out16,
                                                 float *rstd, const float *a, const float *b,
                                                 const float *weight, int N, int C, float eps,
                                                 cudaStream_t stream)
{
    forward(out, out16, rstd, res, a, b, weight, N, C, eps, stream);
}

extern "C" void pw_rmsnorm_backward_cuda(float *dinp, pw_bf16 *dinp16, float *dweight,
                                         const float *dout, const float *inp, const float *weight,
                                         const float *rstd, int N, int C, cudaStream_t stream)
{
    if (N <= 0 || C <= 0) return;
    if (dinp) {
        rmsnorm_dinp_kernel<<<pw_row_blocks(N), PW_ROW_THREADS, 0, stream>>>(
            dinp, dinp16, dout, inp, weight, rstd, N, C);
        PW_CUDA_CHECK(cudaGetLastError());
    }
    if (!dweight) return;
    size_t n = (size_t)N * C;
    float *terms = (float *)pw_cuda_scratch(sizeof(float) * n, stream);
    rmsnorm_dw_terms_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(terms, dout, inp, rstd,
                                                                          C, n);
    PW_CUDA_CHECK(cudaGetLastError());
    pw_colsum_add_f32(dweight, terms, N, C, C, stream);
    pw_cuda_scratch_free(terms, stream);
}
