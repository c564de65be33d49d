/* common.cuh: what the CUDA kernel files share (private): warp reductions (warp.cuh), launch
 * sizes (launch.cuh), the cuBLAS handle of a stream, the cuBLASLt forward with its bias in the
 * epilogue, and the deterministic column sum behind dbias/dweight. */
#ifndef PW_CUDA_COMMON_CUH
#define PW_CUDA_COMMON_CUH

#include <stddef.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "launch.cuh"
#include "pw_cuda_check.h"
#include "pw_kernels_cuda.h" /* pw_bf16 */
#include "pdl.cuh"
#include "warp.cuh"

/* Loop unrolling for the kernel headers written in C-subset CUDA (flash_kernels.cuh,
 * attention_cache_kernels.cuh); tests/cuda/emu.h defines both as nothing on the host. */
#define PW_UNROLL _Pragma("unroll")
#define PW_PRAGMA_(x) _Pragma(#x)
#define PW_UNROLL_BY(n) PW_PRAGMA_(unroll n)

/* The handle bound to this stream (context.cu), and the compute type of the fp32 GEMMs. */
cublasHandle_t pw_cuda_cublas(cudaStream_t stream);
cublasComputeType_t pw_cuda_f32_compute(void);
/* 1 while stream is being captured into a graph (nothing queued on it runs until the graph
 * does: it can be neither timed nor given buffers by a memset), or when the query fails */
int pw_cuda_capturing(cudaStream_t stream);

/* A product whose reduction length is not a multiple of this is asked for no split-K
 * (lt_plan.cu says why): a forward with a bias whole, matmul.cu's others as the largest
 * multiple (any algorithm) and the tail after it (cuBLASLt, unsplit; k_split.h). */
#define PW_SPLIT_SAFE_K 64
/* The column-major product d (m x n, ldd, float32) = op(a) . op(b) (+ d where beta is 1) with
 * ta, tb cublasOperation_t, through cuBLASLt (no split of k where k is not a multiple of
 * PW_SPLIT_SAFE_K; its plan timed where pw_cuda_set_lt_tune asks, an accumulation into a
 * scratch); 1 when queued, 0 (nothing queued) when cuBLASLt is off or has no algorithm: the
 * caller then runs cublasGemmEx. */
int pw_lt_gemm(int ta, int tb, int m, int n, int k, const void *a, int lda, const void *b,
               int ldb, float beta, float *d, int ldd, cudaDataType_t ab,
               cublasComputeType_t compute, cudaStream_t stream);
/* out(N,OC) = inp . weight^T + bias (float32) with the bias added in cuBLASLt's epilogue
 * (lt.cu); out of type dtype (CUDA_R_32F, or CUDA_R_16BF: the float32 result rounded once).
 * Without a bias (NULL) it takes the product only while the algorithms are timed or a split
 * forced, or where C is not a multiple of PW_SPLIT_SAFE_K. Returns 1 when queued; 0, having
 * queued nothing, when the fused path is off or has no algorithm for these operands: the caller
 * then runs its own. */
int pw_lt_linear_forward(void *out, cudaDataType_t dtype, const void *inp, const void *weight,
                         const float *bias, int N, int C, int OC, cudaDataType_t ab,
                         cublasComputeType_t compute, cudaStream_t stream);
/* GPT-2's MLP products with GELU in cuBLASLt's epilogue, in bfloat16 (lt.cu; pw_cuda_set_lt_gelu).
 * pw_lt_gelu_forward: out(N,OC) = GELU(inp . weight^T + bias), aux (NULL: none) the sum before
 * GELU (GELU_AUX_BIAS; GELU_BIAS without aux). pw_lt_dgelu: dinp(N,C) = (dout . weight) times
 * GELU'(aux) element by element (DGELU), aux (N,C) the forward's GELU input, dout's rows ldo
 * apart. Each returns 1 when queued; 0, having queued nothing, when the switch is off, the
 * shape or alignment does not suit the epilogue, or cuBLASLt has no algorithm for it. */
int pw_lt_gelu_forward(pw_bf16 *out, pw_bf16 *aux, const pw_bf16 *inp, const pw_bf16 *weight,
                       const float *bias, int N, int C, int OC, cudaStream_t stream);
int pw_lt_dgelu(pw_bf16 *dinp, const pw_bf16 *aux, const pw_bf16 *dout, int ldo,
                const pw_bf16 *weight, int N, int C, int OC, cudaStream_t stream);
/* frees the cuBLASLt handles and workspaces (called by pw_cuda_release) */
void pw_lt_release(void);
/* out(N,OC) = inp . weight^T + bias (float32; bias may be NULL) for a product of a few rows
 * through skinny_kernels.cuh (skinny.cu), where pw_cuda_set_skinny asks for it and the shape
 * and alignments suit it; with act16 set, act16 = GELU of that sum in bfloat16 instead (out
 * unused): the product into float32 and then pw_gelu_forward_bf16_cuda, bit for bit. Returns 1
 * when queued; 0, having queued nothing, otherwise: the caller then runs its own. */
int pw_skinny_forward(float *out, pw_bf16 *act16, const pw_bf16 *inp, const pw_bf16 *weight,
                      const float *bias, int N, int C, int OC, cudaStream_t stream);
/* act16 (N x F, bfloat16) = SwiGLU of the product's first F columns (gates) and last F (ups),
 * weight (2F x C), no bias, the same way: the product into float32 and then
 * pw_swiglu_forward_bf16_cuda, bit for bit; F a multiple of 4. 1 when queued, else 0. */
int pw_skinny_swiglu_forward(pw_bf16 *act16, const pw_bf16 *inp, const pw_bf16 *weight, int N,
                             int C, int F, cudaStream_t stream);
/* whether the kernels on Hopper's warpgroup products may run for a call on stream: what
 * pw_cuda_wgmma_ok says, except that while stream is being captured into a graph a device not
 * yet asked is not asked (its one-thread kernel and copy would break the capture): 0 then, the
 * call takes the mma.sync kernels (wgmma.cu) */
int pw_wgmma_usable(cudaStream_t stream);
/* __CUDA_ARCH__ of the code the current device runs (900 for sm_90 and sm_90a), asked of the
 * device once (wgmma.cu); 0 while not known, and not asked while stream is being captured */
int pw_cuda_code_arch(cudaStream_t stream);
/* frees the few-row products' workspaces and counters (called by pw_cuda_release) */
void pw_skinny_release(void);

/* The head-size bucket (32, 64 or 128) whose fused attention kernels, float32 or tensor-core,
 * run a head of hs floats; 0 when none does (hs over 128, or pw_cuda_set_flash(0)): the GEMM
 * path (attention.cu). */
int pw_flash_bucket(int hs);

/* The norms' float4 forwards (layernorm.cu): whether one takes a call (pw_cuda_set_ln_vec on,
 * C a multiple of 4 up to PW_ROW_VEC * 128, every row 16-byte aligned, bfloat16 rows 8; NULL
 * pointers pass), and the count pw_cuda_ln_vec_calls reads */
int pw_row_vec_fits(int C, const float *inp, const float *inp2, const float *res,
                    const float *out, const void *out16, const float *weight, const float *bias);
void pw_row_vec_count(void);

/* Temporary device memory in stream order (cudaMallocAsync from the device's default pool,
 * which keeps freed blocks for the next call); free it on the same stream once queued work is
 * done with it. */
void *pw_cuda_scratch(size_t bytes, cudaStream_t stream);
void pw_cuda_scratch_free(void *p, cudaStream_t stream);

/* dst[c] += sum over rows i of src[i*ld + c], c < C, for float or bf16 src, summed in a fixed
 * order (row chunks, then the chunks in sequence): no atomics, the same bits every run
 * (colsum.cu). */
void pw_colsum_add_f32(float *dst, const float *src, int N, int C, int ld, cudaStream_t stream);
void pw_colsum_add_bf16(float *dst, const void *src, int N, int C, int ld, cudaStream_t stream);

#endif
