/* attention.cu: causal self-attention with a key padding mask on the GPU, forward and backward,
 * grouped-query and multi-head (twin of cpu/attention.c). Two implementations behind the same
 * entry points:
 *  - fused (flash.cuh, the default for hs <= 128): one kernel for the forward, two for the
 *    backward, no T x T matrix anywhere, pure float32 arithmetic;
 *  - GEMMs (below): per sequence the scores of its heads go through a scratch of NH*T*T floats
 *    (twice that in backward), batched cuBLAS GEMMs around a masked softmax kernel; used for
 *    heads larger than 128 and when pw_cuda_set_flash(0) asks for it (the benchmark times both;
 *    with TF32 on, its GEMMs run on the tensor cores).
 * Between forward and backward only the log-sum-exp of each query row (B,NH,T) is kept, as the
 * CPU twin does; both backwards recompute the probabilities from it. */
#include <math.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"

#include "attention_gemm_kernels.cuh"
#include "flash.cuh"

/* ---- the GEMM path. The GEMMs read q, k, v in place in qkv: head h of sequence b is a (T,hs)
 * matrix with row stride W (the whole qkv row). cuBLAS is column-major: a row-major (R,K) matrix
 * with row stride ld is a column-major (K,R) matrix with leading dimension ld; each call below
 * is written in those views. */

/* The rows of one sequence's NH heads for the row kernels (attention_gemm_kernels.cuh): one
 * launch, B = 1 and the sequence's own mask row */
#define ATT_LAUNCH(rows) pw_row_blocks(rows), PW_ROW_THREADS, 0

/* Query head h = kv G + j (G = NH / NKV) reads key/value head kv. For one sequence and one j,
 * the NKV heads kv G + j are G hs apart in q (and G T T apart in att), while their key and value
 * heads are hs apart: one strided-batched GEMM of NKV, and a loop over j (multi-head: G = 1). */
typedef struct GqaDims {
    int G, W, C;
    long long TT;
    float scale;
    cublasHandle_t handle;
    cublasComputeType_t compute;
} GqaDims;

static GqaDims gqa_dims(int T, int NH, int NKV, int hs, cudaStream_t stream)
{
    GqaDims d;
    d.G = NH / NKV;
    d.W = (NH + 2 * NKV) * hs;
    d.C = NH * hs;
    d.TT = (long long)T * T;
    d.scale = 1.0f / sqrtf((float)hs);
    d.handle = pw_cuda_cublas(stream);
    d.compute = pw_cuda_f32_compute();
    return d;
}

static void gemm_forward(float *out, float *lse, const float *qkv, const int *mask, int B, int T,
                         int NH, int NKV, int hs, cudaStream_t stream)
{
    GqaDims d = gqa_dims(T, NH, NKV, hs, stream);
    int G = d.G, W = d.W, C = d.C;
    long long TT = d.TT;
    float zero = 0.0f, one = 1.0f;
    float *att = (float *)pw_cuda_scratch(sizeof(float) * (size_t)NH * TT, stream);
    size_t rows = (size_t)NH * T;
    for (int b = 0; b < B; b++) {
        const float *k = qkv + (size_t)b * T * W + (size_t)NH * hs;
        const float *v = qkv + (size_t)b * T * W + (size_t)(NH + NKV) * hs;
        /* scores, as pw_attention_forward_cuda: column-major att^T = k^T^T . q^T per head */
        for (int j = 0; j < G; j++)
            PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                d.handle, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &d.scale, k, CUDA_R_32F, W, hs,
                qkv + (size_t)b * T * W + (size_t)j * hs, CUDA_R_32F, W, (long long)G * hs, &zero,
                att + (size_t)j * TT, CUDA_R_32F, T, G * TT, NKV, d.compute,
                CUBLAS_GEMM_DEFAULT));
        masked_softmax_kernel<<<ATT_LAUNCH(rows), stream>>>(
            att, lse + (size_t)b * rows, mask ? mask + (size_t)b * T : NULL, NH, T);
        PW_CUDA_CHECK(cudaGetLastError());
        /* out^T(hs,T) = v^T(hs,T) . P^T(T,T) per head */
        for (int j = 0; j < G; j++)
            PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                d.handle, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &one, v, CUDA_R_32F, W, hs,
                att + (size_t)j * TT, CUDA_R_32F, T, G * TT, &zero,
                out + (size_t)b * T * C + (size_t)j * hs, CUDA_R_32F, C, (long long)G * hs, NKV,
                d.compute, CUBLAS_GEMM_DEFAULT));
    }
    pw_cuda_scratch_free(att, stream);
}

static void gemm_backward(float *dqkv, const float *dout, const float *qkv, const float *lse,
                          const int *mask, int B, int T, int NH, int NKV, int hs,
                          cudaStream_t stream)
{
    GqaDims d = gqa_dims(T, NH, NKV, hs, stream);
    int G = d.G, W = d.W, C = d.C;
    long long TT = d.TT, Ghs = (long long)G * hs, GTT = G * TT;
    float zero = 0.0f, one = 1.0f;

    float *P = (float *)pw_cuda_scratch(sizeof(float) * 2 * (size_t)NH * TT, stream);
    float *dp = P + (size_t)NH * TT;
    size_t rows = (size_t)NH * T;
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (size_t)b * T * W, *k = q + (size_t)NH * hs;
        const float *v = q + (size_t)(NH + NKV) * hs;
        float *dq = dqkv + (size_t)b * T * W, *dk = dq + (size_t)NH * hs;
        float *dv = dq + (size_t)(NH + NKV) * hs;
        const float *dO = dout + (size_t)b * T * C;
        const int *mb = mask ? mask + (size_t)b * T : NULL;

        /* the forward's scores and probabilities again; dP^T = v^T^T . dout^T per head */
        for (int j = 0; j < G; j++) {
            PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                d.handle, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &d.scale, k, CUDA_R_32F, W, hs,
                q + (size_t)j * hs, CUDA_R_32F, W, Ghs, &zero, P + (size_t)j * TT, CUDA_R_32F, T,
                GTT, NKV, d.compute, CUBLAS_GEMM_DEFAULT));
            PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                d.handle, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &one, v, CUDA_R_32F, W, hs,
                dO + (size_t)j * hs, CUDA_R_32F, C, Ghs, &zero, dp + (size_t)j * TT, CUDA_R_32F,
                T, GTT, NKV, d.compute, CUBLAS_GEMM_DEFAULT));
        }
        softmax_recompute_kernel<<<ATT_LAUNCH(rows), stream>>>(P, lse + (size_t)b * rows, mb, NH,
                                                               T);
        PW_CUDA_CHECK(cudaGetLastError());
        softmax_backward_kernel<<<ATT_LAUNCH(rows), stream>>>(dp, P, mb, NH, T, d.scale);
        PW_CUDA_CHECK(cudaGetLastError());

        /* the G heads of a group add into one dk and dv: the calls over j are in stream order,
         * and within a call every batch entry writes its own key/value head */
        for (int j = 0; j < G; j++) {
            const float *dS = dp + (size_t)j * TT, *Pj = P + (size_t)j * TT;
            /* dq^T += k^T . dS^T */
            PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                d.handle, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &one, k, CUDA_R_32F, W, hs, dS,
                CUDA_R_32F, T, GTT, &one, dq + (size_t)j * hs, CUDA_R_32F, W, Ghs, NKV, d.compute,
                CUBLAS_GEMM_DEFAULT));
            /* dk^T += q^T . dS */
            PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                d.handle, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, &one, q + (size_t)j * hs, CUDA_R_32F,
                W, Ghs, dS, CUDA_R_32F, T, GTT, &one, dk, CUDA_R_32F, W, hs, NKV, d.compute,
                CUBLAS_GEMM_DEFAULT));
            /* dv^T += dout^T . P */
            PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                d.handle, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, &one, dO + (size_t)j * hs,
                CUDA_R_32F, C, Ghs, Pj, CUDA_R_32F, T, GTT, &one, dv, CUDA_R_32F, W, hs, NKV,
                d.compute, CUBLAS_GEMM_DEFAULT));
        }
    }
    pw_cuda_scratch_free(P, stream);
}

/* ---- the fused kernels' launches (flash.cuh: grids and block sizes) */
#define FLASH_LAUNCH(name, HS, grid, block, ...)                                                   \
    do {                                                                                         \
        if ((HS) == 32)                                                                          \
            pw_flash_##name##_32<<<grid, block, 0, stream>>>(__VA_ARGS__);                       \
        else if ((HS) == 64)                                                                     \
            pw_flash_##name##_64<<<grid, block, 0, stream>>>(__VA_ARGS__);                       \
        else                                                                                     \
            pw_flash_##name##_128<<<grid, block, 0, stream>>>(__VA_ARGS__);                      \
        PW_CUDA_CHECK(cudaGetLastError());                                                       \
    } while (0)

/* the bucket of head sizes whose kernels run a head of hs floats; 0: none (GEMM path) */
int pw_flash_bucket(int hs)
{
    if (!pw_cuda_get_flash() || hs <= 0) return 0;
    return hs <= 32 ? 32 : hs <= 64 ? 64 : hs <= 128 ? 128 : 0;
}

extern "C" void pw_attention_gqa_forward_cuda(float *out, float *lse, const float *qkv,
                                              const int *mask, int B, int T, int NH, int NKV,
                                              int hs, cudaStream_t stream)
{
    if (B <= 0 || T <= 0) return;
    int HS = pw_flash_bucket(hs);
    if (!HS) {
        gemm_forward(out, lse, qkv, mask, B, T, NH, NKV, hs, stream);
        return;
    }
    dim3 grid((unsigned)((T + FLASH_BQ - 1) / FLASH_BQ), (unsigned)NH, (unsigned)B);
    FLASH_LAUNCH(fwd, HS, grid, FLASH_BQ, out, lse, qkv, mask, T, NH, NKV, hs,
                 1.0f / sqrtf((float)hs));
}

extern "C" void pw_attention_gqa_backward_cuda(float *dqkv, const float *dout, const float *qkv,
                                               const float *lse, const int *mask, int B, int T,
                                               int NH, int NKV, int hs, cudaStream_t stream)
{
    if (B <= 0 || T <= 0) return;
    int HS = pw_flash_bucket(hs);
    if (!HS) {
        gemm_backward(dqkv, dout, qkv, lse, mask, B, T, NH, NKV, hs, stream);
        return;
    }
    float scale = 1.0f / sqrtf((float)hs);
    /* D = rowsum(P * dP) per query, from the dq kernel to the dkv kernel */
    float *drow = (float *)pw_cuda_scratch(sizeof(float) * (size_t)B * NH * T, stream);
    int bkv = FLASH_BKV(HS);
    dim3 gq((unsigned)((T + FLASH_BQ - 1) / FLASH_BQ), (unsigned)NH, (unsigned)B);
    dim3 gk((unsigned)((T + bkv - 1) / bkv), (unsigned)NKV, (unsigned)B);
    FLASH_LAUNCH(dq, HS, gq, FLASH_BQ, dqkv, drow, dout, qkv, lse, mask, T, NH, NKV, hs, scale);
    FLASH_LAUNCH(dkv, HS, gk, bkv, dqkv, drow, dout, qkv, lse, mask, T, NH, NKV, hs, scale);
    pw_cuda_scratch_free(drow, stream);
}

/* GPT-2's attention is the grouped case with a key and value head per query head, as on the
 * CPU: qkv (B,T,3C) is [q heads | k heads | v heads] with hs = C / NH */
extern "C" void pw_attention_forward_cuda(float *out, float *lse, const float *qkv, const int *mask,
                                          int B, int T, int C, int NH, cudaStream_t stream)
{
    pw_attention_gqa_forward_cuda(out, lse, qkv, mask, B, T, NH, NH, C / NH, stream);
}

extern "C" void pw_attention_backward_cuda(float *dqkv, const float *dout, const float *qkv,
                                           const float *lse, const int *mask, int B, int T, int C,
                                           int NH, cudaStream_t stream)
{
    pw_attention_gqa_backward_cuda(dqkv, dout, qkv, lse, mask, B, T, NH, NH, C / NH, stream);
}
