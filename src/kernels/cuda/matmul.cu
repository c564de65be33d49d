/* matmul.cu: the linear layer on the GPU through cuBLAS, out = inp . weight^T + bias, in fp32
 * (twin of cpu/matmul.c) and with bf16 operands accumulated in fp32. A forward with a bias
 * goes through lt.cu (cuBLASLt, the bias in the epilogue) where cuBLASLt has an algorithm for
 * it, and so may GPT-2's MLP products with GELU; the rest, and every other backward product,
 * through cublasGemmEx, a reduction length past a multiple of 64 cut there and its tail sent to
 * cuBLASLt (gemm, below). A bf16 forward of a decode step's few rows goes to skinny.cu's kernel
 * first, where pw_cuda_set_skinny asks for it. */
#include <cuda_bf16.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "matmul_kernels.cuh"
#include "k_split.h"

/* cuBLAS is column-major: a row-major (R, K) matrix is its (K, R) column-major transpose, so
 * out(N,OC) = inp(N,C) W(OC,C)^T is computed as out^T(OC,N) = W(C,OC)^T inp(C,N), and so on.
 * The comments write each product in those column-major views. */

static float seed_bias(float *out, const float *bias, int N, int OC, cudaStream_t stream)
{
    if (!bias) return 0.0f;
    size_t n = (size_t)N * OC;
    bias_seed_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(out, bias, N, OC);
    PW_CUDA_CHECK(cudaGetLastError());
    return 1.0f;
}

/* d (m x n, ldd, float32) = op(a) . op(b) (+ d where beta is 1): cublasGemmEx, or, for k (or
 * its tail past the last multiple) not a multiple of PW_SPLIT_SAFE_K, cuBLASLt asked for no
 * split-K (lt_plan.cu: a split there has been reported to drop the tail of k; a weight
 * gradient's k is the batch's rows), or cuBLASLt for every product where pw_cuda_set_lt_all asks
 * (lt.cu says why) */
static void gemm(cudaStream_t stream, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                 int k, const void *a, int lda, const void *b, int ldb, float beta, float *d,
                 int ldd, cudaDataType_t ab, cublasComputeType_t compute)
{
    /* k past a multiple of PW_SPLIT_SAFE_K (a weight gradient over an odd count of rows): the
     * whole steps as any product, then the tail of fewer than PW_SPLIT_SAFE_K added to them.
     * Asked for no split over the whole k, cuBLASLt ran the 768 x 768 weight gradient over 10248
     * rows at 53 TFLOP/s on an H200, where cuBLAS's own choice over 10240 ran at 433
     * (bench_kernels_cuda's weight grad rows): its few output tiles each summed every row. */
    const PwKSplit ks = pw_k_split(ta == CUBLAS_OP_T, tb == CUBLAS_OP_T, k, lda, ldb,
                                   PW_SPLIT_SAFE_K);
    if (ks.tail && ks.k0) {
        const size_t es = ab == CUDA_R_16BF ? 2 : 4;
        gemm(stream, ta, tb, m, n, ks.k0, a, lda, b, ldb, beta, d, ldd, ab, compute);
        gemm(stream, ta, tb, m, n, ks.tail, (const char *)a + es * ks.a_off, lda,
             (const char *)b + es * ks.b_off, ldb, 1.0f, d, ldd, ab, compute);
        return;
    }
    if ((ks.tail || pw_cuda_get_lt_all()) &&
        pw_lt_gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, d, ldd, ab, compute, stream))
        return;
    float alpha = 1.0f;
    PW_CUBLAS_CHECK(cublasGemmEx(pw_cuda_cublas(stream), ta, tb, m, n, k, &alpha, a, ab, lda, b,
                                 ab, ldb, &beta, d, CUDA_R_32F, ldd, compute,
                                 CUBLAS_GEMM_DEFAULT));
}

/* The three products of a linear layer for operands of type ab (fp32 or bf16), results fp32. */
static void linear_forward(float *out, const void *inp, const void *weight, const float *bias,
                           int N, int C, int OC, cudaDataType_t ab, cublasComputeType_t compute,
                           cudaStream_t stream)
{
    if (N <= 0 || OC <= 0) return;
    /* a decode step's few rows through a kernel of our own, where switched on (skinny.cu) */
    if (ab == CUDA_R_16BF &&
        pw_skinny_forward(out, NULL, (const pw_bf16 *)inp, (const pw_bf16 *)weight, bias, N, C,
                          OC, stream))
        return;
    /* the bias in cuBLASLt's epilogue (lt.cu) where it has an algorithm; else seeded below
     * (without a bias lt.cu takes it only while its algorithm is timed or split, or where C is
     * not a multiple of PW_SPLIT_SAFE_K) */
    if (pw_lt_linear_forward(out, CUDA_R_32F, inp, weight, bias, N, C, OC, ab, compute, stream))
        return;
    float beta = seed_bias(out, bias, N, OC, stream);
    /* out^T(OC,N) = W^T . inp: W is (C,OC) column-major, transposed; inp is (C,N) */
    gemm(stream, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, weight, C, inp, C, beta, out, OC, ab,
         compute);
}

/* dout's rows are ldo elements apart (OC where dense) */
static void linear_backward_products(float *dinp, float *dweight, const void *dout, int ldo,
                                     const void *inp, const void *weight, int N, int C, int OC,
                                     cudaDataType_t ab, cublasComputeType_t compute, int set_dinp,
                                     cudaStream_t stream)
{
    /* dinp(N,C) (+)= dout(N,OC) W(OC,C): dinp^T(C,N) (+)= W(C,OC) . dout^T(OC,N) */
    if (dinp && N > 0 && C > 0)
        gemm(stream, CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, weight, C, dout, ldo,
             set_dinp ? 0.0f : 1.0f, dinp, C, ab, compute);
    /* dweight(OC,C) += dout^T(OC,N) inp(N,C): dweight^T(C,OC) += inp^T(C,N) . dout(N,OC) */
    if (dweight && OC > 0 && C > 0)
        gemm(stream, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, inp, C, dout, ldo, 1.0f, dweight, C, ab,
             compute);
}

extern "C" void pw_matmul_forward_cuda(float *out, const float *inp, const float *weight,
                                       const float *bias, int N, int C, int OC, cudaStream_t stream)
{
    linear_forward(out, inp, weight, bias, N, C, OC, CUDA_R_32F, pw_cuda_f32_compute(), stream);
}

extern "C" void pw_matmul_backward_cuda(float *dinp, float *dweight, float *dbias,
                                        const float *dout, const float *inp, const float *weight,
                                        int N, int C, int OC, int set_dinp, cudaStream_t stream)
{
    linear_backward_products(dinp, dweight, dout, OC, inp, weight, N, C, OC, CUDA_R_32F,
                             pw_cuda_f32_compute(), set_dinp, stream);
    if (dbias) pw_colsum_add_f32(dbias, dout, N, OC, OC, stream);
}

/* bf16 operands, fp32 accumulation and results: CUBLAS_COMPUTE_32F on bf16 inputs runs on the
 * tensor cores (there is no "pedantic" bf16 path to avoid) */
extern "C" void pw_matmul_forward_bf16_cuda(float *out, const pw_bf16 *inp, const pw_bf16 *weight,
                                            const float *bias, int N, int C, int OC,
                                            cudaStream_t stream)
{
    linear_forward(out, inp, weight, bias, N, C, OC, CUDA_R_16BF, CUBLAS_COMPUTE_32F, stream);
}

extern "C" void pw_matmul_backward_bf16_cuda(float *dinp, float *dweight, float *dbias,
                                             const pw_bf16 *dout, int ldo, const pw_bf16 *inp,
                                             const pw_bf16 *weight, int N, int C, int OC,
                                             int set_dinp, cudaStream_t stream)
{
    linear_backward_products(dinp, dweight, dout, ldo, inp, weight, N, C, OC, CUDA_R_16BF,
                             CUBLAS_COMPUTE_32F, set_dinp, stream);
    if (dbias) pw_colsum_add_bf16(dbias, dout, N, OC, ldo, stream);
}

/* The same rounded to bfloat16 into out: the float32 result (product and bias) rounded once, by
 * the GEMM's own epilogue (cuBLASLt with the float32 bias, or cublasGemmEx with a bfloat16 C
 * when there is no bias); where cuBLASLt has no algorithm for it, into a float32 scratch,
 * then converted. */
extern "C" void pw_matmul_forward_bf16_out_cuda(pw_bf16 *out, const pw_bf16 *inp,
                                                const pw_bf16 *weight, const float *bias, int N,
                                                int C, int OC, cudaStream_t stream)
{
    if (N <= 0 || OC <= 0) return;
    if (pw_lt_linear_forward(out, CUDA_R_16BF, inp, weight, bias, N, C, OC, CUDA_R_16BF,
                             CUBLAS_COMPUTE_32F, stream))
        return;
    if (!bias) {
        float alpha = 1.0f, beta = 0.0f;
        PW_CUBLAS_CHECK(cublasGemmEx(pw_cuda_cublas(stream), CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C,
                                     &alpha, weight, CUDA_R_16BF, C, inp, CUDA_R_16BF, C, &beta,
                                     out, CUDA_R_16BF, OC, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT));
        return;
    }
    size_t n = (size_t)N * OC;
    float *f = (float *)pw_cuda_scratch(sizeof(float) * n, stream);
    linear_forward(f, inp, weight, bias, N, C, OC, CUDA_R_16BF, CUBLAS_COMPUTE_32F, stream);
    pw_f32_to_bf16_cuda(out, f, n, stream);
    pw_cuda_scratch_free(f, stream);
}

/* GPT-2's MLP with GELU in the products' epilogues where lt.cu takes it (pw_cuda_set_lt_gelu);
 * a cache pass's (no pre-activation kept) with GELU in the few-row kernel's epilogue where
 * skinny.cu takes it (the same bits as the two calls below); else the product and GELU's own
 * kernel: the very calls the model made before this entry */
extern "C" void pw_matmul_gelu_forward_bf16_cuda(pw_bf16 *out, pw_bf16 *pre, float *pre32,
                                                 const pw_bf16 *inp, const pw_bf16 *weight,
                                                 const float *bias, int N, int C, int OC,
                                                 cudaStream_t stream)
{
    if (N <= 0 || OC <= 0) return;
    if (pw_lt_gelu_forward(out, pre, inp, weight, bias, N, C, OC, stream)) return;
    if (!pre && pw_skinny_forward(NULL, out, inp, weight, bias, N, C, OC, stream)) return;
    size_t n = (size_t)N * OC;
    if (pre) {
        pw_matmul_forward_bf16_out_cuda(pre, inp, weight, bias, N, C, OC, stream);
        pw_gelu_forward_bf16_cuda(out, pre, NULL, n, stream);
        return;
    }
    float *f = pre32 ? pre32 : (float *)pw_cuda_scratch(sizeof(float) * n, stream);
    pw_matmul_forward_bf16_cuda(f, inp, weight, bias, N, C, OC, stream);
    pw_gelu_forward_bf16_cuda(out, NULL, f, n, stream);
    if (!pre32) pw_cuda_scratch_free(f, stream);
}

/* the Llama family's up-projection and SwiGLU in a cache pass: the few-row kernel's SwiGLU
 * epilogue where skinny.cu takes it, else the product into float32 and SwiGLU's kernel (the
 * very calls the model made before this entry) */
extern "C" void pw_matmul_swiglu_forward_bf16_cuda(pw_bf16 *out, float *pre32, const pw_bf16 *inp,
                                                   const pw_bf16 *weight, int N, int C, int F,
                                                   cudaStream_t stream)
{
    if (N <= 0 || F <= 0) return;
    if (pw_skinny_swiglu_forward(out, inp, weight, N, C, F, stream)) return;
    size_t n = (size_t)N * 2 * F;
    float *f = pre32 ? pre32 : (float *)pw_cuda_scratch(sizeof(float) * n, stream);
    pw_matmul_forward_bf16_cuda(f, inp, weight, NULL, N, C, 2 * F, stream);
    pw_swiglu_forward_bf16_cuda(out, NULL, f, N, F, stream);
    if (!pre32) pw_cuda_scratch_free(f, stream);
}

extern "C" void pw_matmul_backward_gelu_bf16_cuda(pw_bf16 *dpre, const pw_bf16 *pre, float *dinp32,
                                                  float *dweight, float *dbias,
                                                  const pw_bf16 *dout, int ldo,
                                                  const pw_bf16 *inp, const pw_bf16 *weight,
                                                  int N, int C, int OC, cudaStream_t stream)
{
    if (N <= 0 || C <= 0) return;
    if (!pw_lt_dgelu(dpre, pre, dout, ldo, weight, N, C, OC, stream)) {
        size_t n = (size_t)N * C;
        float *f = dinp32 ? dinp32 : (float *)pw_cuda_scratch(sizeof(float) * n, stream);
        pw_matmul_backward_bf16_cuda(f, NULL, NULL, dout, ldo, inp, weight, N, C, OC, 1, stream);
        pw_gelu_backward_bf16_cuda(dpre, pre, f, n, stream);
        if (!dinp32) pw_cuda_scratch_free(f, stream);
    }
    if (dweight || dbias)
        pw_matmul_backward_bf16_cuda(NULL, dweight, dbias, dout, ldo, inp, weight, N, C, OC, 0,
                                     stream);
}

/* ---- conversions */
/* pw_bf16 is the storage type of __nv_bfloat16: same size, so the casts below are views */
static_assert(sizeof(pw_bf16) == sizeof(__nv_bfloat16), "pw_bf16 must be 16 bits");
static_assert(sizeof(pw_bf16) == sizeof(uint16_t), "pw_bf16 is the kernels' uint16_t");

extern "C" void pw_f32_to_bf16_cuda(pw_bf16 *out, const float *inp, size_t n, cudaStream_t stream)
{
    if (n == 0) return;
    if ((((size_t)out | (size_t)inp) & 15) == 0) /* 8 a thread (matmul_kernels.cuh) */
        f32_to_bf16_vec_kernel<<<pw_ew_blocks(pw_vec_units(n)), PW_EW_THREADS, 0, stream>>>(
            out, inp, n);
    else
        f32_to_bf16_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(out, inp, n);
    PW_CUDA_CHECK(cudaGetLastError());
}

extern "C" void pw_bf16_to_f32_cuda(float *out, const pw_bf16 *inp, size_t n, cudaStream_t stream)
{
    if (n == 0) return;
    bf16_to_f32_kernel<<<pw_ew_blocks(n), PW_EW_THREADS, 0, stream>>>(out, inp, n);
    PW_CUDA_CHECK(cudaGetLastError());
}
