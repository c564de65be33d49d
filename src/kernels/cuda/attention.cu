/* attention.cu: causal self-attention with a key padding mask on the GPU, forward and backward,
 * multi-head and grouped-query (twin of cpu/attention.c): batched cuBLAS GEMMs around a masked
 * softmax. */
#include <math.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"

/* This first version materialises the (B,NH,T,T) scores in att, as the CPU twin does, and
 * multiplies whole T x T tiles; a fused kernel that never stores them is later work.
 *
 * The GEMMs read q, k, v in place in qkv (B,T,3C): head h of sequence b is a (T,hs) matrix at
 * qkv + b*T*3C + h*hs with row stride 3C (k at +C, v at +2C). Within one sequence the heads
 * are hs apart, so one strided-batched GEMM per sequence covers its NH heads; sequences are
 * T*3C apart, a second stride cuBLAS cannot take, hence the loop over b.
 * cuBLAS is column-major: a row-major (R,K) matrix with row stride ld is a column-major (K,R)
 * matrix with leading dimension ld; each call below is written in those views. */

/* One warp per query row (b, h, t) of att: scores already scaled by the GEMM become
 * probabilities over the keys s <= t that are real; everything else in the row is 0, and a
 * padding query's whole row is 0. */
__global__ void masked_softmax_kernel(float *att, const int *mask, int B, int NH, int T)
{
    size_t rows = (size_t)B * NH * T;
    size_t row = (size_t)blockIdx.x * (blockDim.x / PW_WARP) + threadIdx.x / PW_WARP;
    int lane = threadIdx.x % PW_WARP;
    if (row >= rows) return;
    int t = (int)(row % T);
    int b = (int)(row / ((size_t)NH * T));
    const int *m = mask ? mask + (size_t)b * T : NULL;
    float *a = att + row * T;
    if (m && !m[t]) {
        for (int s = lane; s < T; s += PW_WARP) a[s] = 0.0f;
        return;
    }
    float mx = -INFINITY;
    for (int s = lane; s <= t; s += PW_WARP)
        if (!m || m[s]) mx = fmaxf(mx, a[s]);
    mx = pw_warp_max(mx); /* finite: key t is the real query itself */
    float z = 0.0f;
    for (int s = lane; s <= t; s += PW_WARP)
        if (!m || m[s]) z += expf(a[s] - mx);
    float inv = 1.0f / pw_warp_sum(z); /* z >= 1: the max term is exp(0) */
    for (int s = lane; s < T; s += PW_WARP)
        a[s] = (s <= t && (!m || m[s])) ? expf(a[s] - mx) * inv : 0.0f;
}

/* dS = scale P (dP - rowsum(P dP)) in place over dP, restricted to the entries the forward
 * kept (s <= t, real key, real query); the rest is written 0 so the GEMMs may read whole rows */
__global__ void softmax_backward_kernel(float *dp, const float *att, const int *mask, int b, int NH,
                                        int T, float scale)
{
    size_t rows = (size_t)NH * T; /* the heads of sequence b */
    size_t row = (size_t)blockIdx.x * (blockDim.x / PW_WARP) + threadIdx.x / PW_WARP;
    int lane = threadIdx.x % PW_WARP;
    if (row >= rows) return;
    int t = (int)(row % T);
    const int *m = mask ? mask + (size_t)b * T : NULL;
    float *d = dp + row * T;
    const float *p = att + ((size_t)b * NH * T + row) * T;
    if (m && !m[t]) {
        for (int s = lane; s < T; s += PW_WARP) d[s] = 0.0f;
        return;
    }
    float dot = 0.0f;
    for (int s = lane; s <= t; s += PW_WARP)
        if (!m || m[s]) dot += p[s] * d[s];
    dot = pw_warp_sum(dot);
    for (int s = lane; s < T; s += PW_WARP)
        d[s] = (s <= t && (!m || m[s])) ? scale * p[s] * (d[s] - dot) : 0.0f;
}

#define ATT_WARPS 8 /* rows per block of the two softmax kernels */

/* what the forward and the backward both derive from the shape, and their GEMM setup */
typedef struct AttDims {
    int hs, C3;
    long long TT;
    float scale;
    cublasHandle_t handle;
    cublasComputeType_t compute;
} AttDims;

static AttDims att_dims(int T, int C, int NH, cudaStream_t stream)
{
    AttDims d;
    d.hs = C / NH;
    d.C3 = 3 * C;
    d.TT = (long long)T * T;
    d.scale = 1.0f / sqrtf((float)d.hs);
    d.handle = pw_cuda_cublas(stream);
    d.compute = pw_cuda_f32_compute();
    return d;
}

extern "C" void pw_attention_forward_cuda(float *out, float *att, const float *qkv, const int *mask,
                                          int B, int T, int C, int NH, cudaStream_t stream)
{
    if (B <= 0 || T <= 0) return;
    AttDims d = att_dims(T, C, NH, stream);
    int hs = d.hs, C3 = d.C3;
    long long TT = d.TT;
    float zero = 0.0f, one = 1.0f;

    /* att[b,h](T,T) = scale q k^T: column-major att^T(T,T) = k^T^T(T,hs) . q^T(hs,T), with
     * k^T and q^T the (hs,T) views of k and q */
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (size_t)b * T * C3, *k = q + C;
        PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            d.handle, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &d.scale, k, CUDA_R_32F, C3, hs, q,
            CUDA_R_32F, C3, hs, &zero, att + (size_t)b * NH * TT, CUDA_R_32F, T, TT, NH, d.compute,
            CUBLAS_GEMM_DEFAULT));
    }

    size_t rows = (size_t)B * NH * T;
    masked_softmax_kernel<<<(unsigned int)((rows + ATT_WARPS - 1) / ATT_WARPS), ATT_WARPS * PW_WARP,
                            0, stream>>>(att, mask, B, NH, T);
    PW_CUDA_CHECK(cudaGetLastError());

    /* out[b,:,h](T,hs) = P v: column-major out^T(hs,T) = v^T(hs,T) . P^T(T,T), and the
     * row-major P is the column-major P^T. A padding query's P row is 0, so its output is 0. */
    for (int b = 0; b < B; b++) {
        const float *v = qkv + (size_t)b * T * C3 + 2 * C;
        PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            d.handle, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &one, v, CUDA_R_32F, C3, hs,
            att + (size_t)b * NH * TT, CUDA_R_32F, T, TT, &zero, out + (size_t)b * T * C,
            CUDA_R_32F, C, hs, NH, d.compute, CUBLAS_GEMM_DEFAULT));
    }
}

extern "C" void pw_attention_backward_cuda(float *dqkv, const float *dout, const float *qkv,
                                           const float *att, const int *mask, int B, int T, int C,
                                           int NH, cudaStream_t stream)
{
    if (B <= 0 || T <= 0) return;
    AttDims d = att_dims(T, C, NH, stream);
    int hs = d.hs, C3 = d.C3;
    long long TT = d.TT;
    float zero = 0.0f, one = 1.0f;

    /* dP then dS for the NH heads of one sequence at a time (NH*T*T floats, 48 MB at the
     * GPT-2 124M shape with T = 1024), reused in stream order for the next sequence */
    float *dp = (float *)pw_cuda_scratch(sizeof(float) * (size_t)NH * TT, stream);
    size_t rows = (size_t)NH * T;
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (size_t)b * T * C3, *k = q + C, *v = q + 2 * C;
        float *dq = dqkv + (size_t)b * T * C3, *dk = dq + C, *dv = dq + 2 * C;
        const float *dO = dout + (size_t)b * T * C;
        const float *P = att + (size_t)b * NH * TT;

        /* dP(T,T) = dout v^T: column-major dP^T = v^T^T(T,hs) . dout^T(hs,T) */
        PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            d.handle, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &one, v, CUDA_R_32F, C3, hs, dO,
            CUDA_R_32F, C, hs, &zero, dp, CUDA_R_32F, T, TT, NH, d.compute, CUBLAS_GEMM_DEFAULT));

        softmax_backward_kernel<<<(unsigned int)((rows + ATT_WARPS - 1) / ATT_WARPS),
                                  ATT_WARPS * PW_WARP, 0, stream>>>(dp, att, mask, b, NH, T,
                                                                    d.scale);
        PW_CUDA_CHECK(cudaGetLastError());

        /* dq(T,hs) += dS k: column-major dq^T(hs,T) += k^T(hs,T) . dS^T(T,T) */
        PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            d.handle, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &one, k, CUDA_R_32F, C3, hs, dp,
            CUDA_R_32F, T, TT, &one, dq, CUDA_R_32F, C3, hs, NH, d.compute, CUBLAS_GEMM_DEFAULT));
        /* dk(T,hs) += dS^T q: column-major dk^T(hs,T) += q^T(hs,T) . dS(T,T), dS being the
         * transpose of the column-major view of the row-major dS */
        PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            d.handle, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, &one, q, CUDA_R_32F, C3, hs, dp,
            CUDA_R_32F, T, TT, &one, dk, CUDA_R_32F, C3, hs, NH, d.compute, CUBLAS_GEMM_DEFAULT));
        /* dv(T,hs) += P^T dout: column-major dv^T(hs,T) += dout^T(hs,T) . P(T,T) */
        PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            d.handle, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, &one, dO, CUDA_R_32F, C, hs, P,
            CUDA_R_32F, T, TT, &one, dv, CUDA_R_32F, C3, hs, NH, d.compute, CUBLAS_GEMM_DEFAULT));
    }
    pw_cuda_scratch_free(dp, stream);
}

/* Grouped-query attention: query head h = kv G + j (G = NH / NKV) reads key/value head kv. For
 * one sequence and one j, the NKV heads kv G + j are G hs apart in q (and G T T apart in att),
 * while their key and value heads are hs apart: one strided-batched GEMM of NKV, and a loop over
 * j. With G = 1 these are the multi-head calls above. The softmax kernels are shared as is. */
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

extern "C" void pw_attention_gqa_forward_cuda(float *out, float *att, const float *qkv,
                                              const int *mask, int B, int T, int NH, int NKV,
                                              int hs, cudaStream_t stream)
{
    if (B <= 0 || T <= 0) return;
    GqaDims d = gqa_dims(T, NH, NKV, hs, stream);
    int G = d.G, W = d.W, C = d.C;
    long long TT = d.TT;
    float zero = 0.0f, one = 1.0f;

    /* scores, as pw_attention_forward_cuda: column-major att^T = k^T^T . q^T per head */
    for (int b = 0; b < B; b++)
        for (int j = 0; j < G; j++) {
            const float *q = qkv + (size_t)b * T * W + (size_t)j * hs;
            const float *k = qkv + (size_t)b * T * W + (size_t)NH * hs;
            PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                d.handle, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &d.scale, k, CUDA_R_32F, W, hs, q,
                CUDA_R_32F, W, (long long)G * hs, &zero, att + ((size_t)b * NH + j) * TT,
                CUDA_R_32F, T, G * TT, NKV, d.compute, CUBLAS_GEMM_DEFAULT));
        }

    size_t rows = (size_t)B * NH * T;
    masked_softmax_kernel<<<(unsigned int)((rows + ATT_WARPS - 1) / ATT_WARPS), ATT_WARPS * PW_WARP,
                            0, stream>>>(att, mask, B, NH, T);
    PW_CUDA_CHECK(cudaGetLastError());

    /* out^T(hs,T) = v^T(hs,T) . P^T(T,T) per head */
    for (int b = 0; b < B; b++)
        for (int j = 0; j < G; j++) {
            const float *v = qkv + (size_t)b * T * W + (size_t)(NH + NKV) * hs;
            PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                d.handle, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &one, v, CUDA_R_32F, W, hs,
                att + ((size_t)b * NH + j) * TT, CUDA_R_32F, T, G * TT, &zero,
                out + (size_t)b * T * C + (size_t)j * hs, CUDA_R_32F, C, (long long)G * hs, NKV,
                d.compute, CUBLAS_GEMM_DEFAULT));
        }
}

extern "C" void pw_attention_gqa_backward_cuda(float *dqkv, const float *dout, const float *qkv,
                                               const float *att, const int *mask, int B, int T,
                                               int NH, int NKV, int hs, cudaStream_t stream)
{
    if (B <= 0 || T <= 0) return;
    GqaDims d = gqa_dims(T, NH, NKV, hs, stream);
    int G = d.G, W = d.W, C = d.C;
    long long TT = d.TT, Ghs = (long long)G * hs, GTT = G * TT;
    float zero = 0.0f, one = 1.0f;

    float *dp = (float *)pw_cuda_scratch(sizeof(float) * (size_t)NH * TT, stream);
    size_t rows = (size_t)NH * T;
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (size_t)b * T * W, *k = q + (size_t)NH * hs;
        const float *v = q + (size_t)(NH + NKV) * hs;
        float *dq = dqkv + (size_t)b * T * W, *dk = dq + (size_t)NH * hs;
        float *dv = dq + (size_t)(NH + NKV) * hs;
        const float *dO = dout + (size_t)b * T * C;
        const float *P = att + (size_t)b * NH * TT;

        /* dP^T = v^T^T . dout^T per head */
        for (int j = 0; j < G; j++)
            PW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                d.handle, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &one, v, CUDA_R_32F, W, hs,
                dO + (size_t)j * hs, CUDA_R_32F, C, Ghs, &zero, dp + (size_t)j * TT, CUDA_R_32F,
                T, GTT, NKV, d.compute, CUBLAS_GEMM_DEFAULT));

        softmax_backward_kernel<<<(unsigned int)((rows + ATT_WARPS - 1) / ATT_WARPS),
                                  ATT_WARPS * PW_WARP, 0, stream>>>(dp, att, mask, b, NH, T,
                                                                    d.scale);
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
    pw_cuda_scratch_free(dp, stream);
}
