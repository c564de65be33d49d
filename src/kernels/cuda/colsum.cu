/* colsum.cu: a deterministic column sum, dst[c] += sum_i src[i, c], for the dbias of the
 * matmuls: row chunks summed into partials in parallel, then the partials in a fixed order. */
#include "common.cuh"
#include "colsum_kernels.cuh"

/* bf16: src holds bfloat16 bits (uint16_t), else float */
static void colsum_add(float *dst, const void *src, int bf16, int N, int C, int ld,
                       cudaStream_t stream)
{
    if (N <= 0 || C <= 0) return;
    /* grid.y is at most 65535: very tall inputs get longer chunks */
    int rows = PW_COLSUM_ROWS;
    if ((N + rows - 1) / rows > 65535) rows = (N + 65534) / 65535;
    int nchunks = (N + rows - 1) / rows;
    float *partial = (float *)pw_cuda_scratch(sizeof(float) * (size_t)nchunks * C, stream);
    dim3 grid((C + 255) / 256, nchunks);
    colsum_partial_kernel<<<grid, 256, 0, stream>>>(partial, src, bf16, N, C, ld, rows);
    PW_CUDA_CHECK(cudaGetLastError());
    colsum_finish_kernel<<<(C + 255) / 256, 256, 0, stream>>>(dst, partial, nchunks, C);
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
