/* head_norm.cu: Qwen3's q/k norm on the GPU, forward and backward (twin of pw_head_rmsnorm_* in
 * cpu/rmsnorm.c); the weights' gradients by the deterministic column sum, as rmsnorm.cu's. */
#include "common.cuh"
#include "head_norm_kernels.cuh"
#include "pw_kernels_cuda.h"

extern "C" void pw_head_rmsnorm_forward_cuda(float *x, float *raw, float *rstd, const float *wq,
                                             const float *wk, int N, int NH, int NKV, int hs,
                                             int stride, float eps, cudaStream_t stream)
{
    size_t heads = (size_t)N * (NH + NKV);
    if (!heads || hs <= 0) return;
    head_rmsnorm_forward_kernel<<<pw_row_blocks(heads), PW_ROW_THREADS, 0, stream>>>(
        x, raw, rstd, wq, wk, N, NH, NKV, hs, stride, eps);
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_head_rmsnorm_backward_cuda(float *dx, float *dwq, float *dwk, const float *raw,
                                              const float *rstd, const float *wq,
                                              const float *wk, int N, int NH, int NKV, int hs,
                                              int stride, cudaStream_t stream)
{
    size_t heads = (size_t)N * (NH + NKV), n = heads * hs;
    if (!heads || hs <= 0) return;
    if (dwq || dwk) { /* first: the terms read the gradient the input's then replaces */
        float *terms = (float *)pw_cuda_scratch(sizeof(float) * n, stream);
        head_rmsnorm_dw_terms_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(
            terms, dx, raw, rstd, N, NH, NKV, hs, stride);
        PW_CUDA_CHECK(cudaGetLastError());
        if (dwq) pw_colsum_add_f32(dwq, terms, N * NH, hs, hs, stream);
        if (dwk) pw_colsum_add_f32(dwk, terms + (size_t)N * NH * hs, N * NKV, hs, hs, stream);
        pw_cuda_scratch_free(terms, stream);
    }
    head_rmsnorm_dinp_kernel<<<pw_row_blocks(heads), PW_ROW_THREADS, 0, stream>>>(
        dx, raw, rstd, wq, wk, N, NH, NKV, hs, stride);
    PW_CUDA_CHECK(cudaGetLastError());
}
