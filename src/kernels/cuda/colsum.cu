/* colsum.cu: a deterministic column sum, dst[c] += sum_i src[i, c], for the dbias of the
 * matmuls: row chunks summed into partials in parallel, then the partials in a fixed order. */
#include <cuda_bf16.h>

#include "common.cuh"

__device__ __forceinline__ float pw_load_f(const float *p) { return *p; }
__device__ __forceinline__ float pw_load_f(const __nv_bfloat16 *p) { return __bfloat162float(*p); }

/* grid (ceil(C/256), nchunks): thread c of chunk y sums rows [y*rows, (y+1)*rows); a warp reads 32
 * consecutive columns of one row, so every load is coalesced. */
template <typename T>
__global__ void colsum_partial_kernel(float *partial, const T *src, int N, int C, int ld, int rows)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    int r0 = blockIdx.y * rows;
    int r1 = r0 + rows < N ? r0 + rows : N;
    float s = 0.0f;
    for (int i = r0; i < r1; i++) s += pw_load_f(src + (size_t)i * ld + c);
    partial[(size_t)blockIdx.y * C + c] = s;
}

/* one thread per column adds the nchunks partials in chunk order */
__global__ void colsum_finish_kernel(float *dst, const float *partial, int nchunks, int C)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0.0f;
    for (int y = 0; y < nchunks; y++) s += partial[(size_t)y * C + c];
    dst[c] += s;
}

template <typename T>
static void colsum_add(float *dst, const T *src, int N, int C, int ld, cudaStream_t stream)
{
    if (N <= 0 || C <= 0) return;
    /* grid.y is at most 65535: very tall inputs get longer chunks */
    int rows = PW_COLSUM_ROWS;
    if ((N + rows - 1) / rows > 65535) rows = (N + 65534) / 65535;
    int nchunks = (N + rows - 1) / rows;
    float *partial = (float *)pw_cuda_scratch(sizeof(float) * (size_t)nchunks * C, stream);
    dim3 grid((C + 255) / 256, nchunks);
    colsum_partial_kernel<T><<<grid, 256, 0, stream>>>(partial, src, N, C, ld, rows);
    PW_CUDA_CHECK(cudaGetLastError());
    colsum_finish_kernel<<<(C + 255) / 256, 256, 0, stream>>>(dst, partial, nchunks, C);
    PW_CUDA_CHECK(cudaGetLastError());
    pw_cuda_scratch_free(partial, stream);
}

void pw_colsum_add_f32(float *dst, const float *src, int N, int C, int ld, cudaStream_t stream)
{
    colsum_add<float>(dst, src, N, C, ld, stream);
}

void pw_colsum_add_bf16(float *dst, const void *src, int N, int C, int ld, cudaStream_t stream)
{
    colsum_add<__nv_bfloat16>(dst, (const __nv_bfloat16 *)src, N, C, ld, stream);
}
