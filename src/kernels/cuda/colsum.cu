/* colsum.cu: a deterministic column sum, dst[c] += sum_i src[i, c], for the dbias of the
 * matmuls: row chunks summed into partials in parallel, then the partials in a fixed order. */
#include "common.cuh"
#include "colsum_kernels.cuh"

/* bf16: src holds bfloat16 bits (uint16_t), else float */
static void colsum_add(float *dst, const void *src, int bf16, int N, int C, int ld,
                       cudaStream_t stream)
{
    if (N <= 0 || C <= 0) return;
    int rows = pw_colsum_chunk_rows(N), nchunks = (N + rows - 1) / rows;
    unsigned cblocks = (unsigned)((C + PW_COLSUM_THREADS - 1) / PW_COLSUM_THREADS);
    float *partial = (float *)pw_cuda_scratch(sizeof(float) * (size_t)nchunks * C, stream);
    dim3 grid(cblocks, nchunks);
    colsum_partial_kernel<<<grid, PW_COLSUM_THREADS, 0, stream>>>(partial, src, bf16, N, C, ld,
                                                                  rows);
    PW_CUDA_CHECK(cudaGetLastError());
    colsum_finish_kernel<<<cblocks, PW_COLSUM_THREADS, 0, stream>>>(dst, partial, nchunks, C);
    PW_CUDA_CHECK(cudaGetLastError());
    pw_cuda_scratch_free(partial, stream);
}

void pw_colsum_add_f32(float *dst, const float *src, int N, int C, int ld, cudaStream_t stream)
{
    colsum_add(dst, src, 0, N, C, ld, stream);
}

void pw_colsum_add_bf16(float *dst, const void *src, int N, int C, int ld, cudaStream_t stream)
{
    colsum_add(dst, src, 1, N, C, ld, stream);
}
