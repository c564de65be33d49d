/* colsum.cu: a deterministic column sum, dst[c] += sum_i src[i, c], for the dbias of the
 * matmuls: row chunks summed into partials in parallel, then the partials in a fixed order;
 * bfloat16 rows 8 columns a thread where pw_cuda_set_colsum_vec is on and they are aligned
 * (the same bits). */
#include <stdint.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "colsum_kernels.cuh"

static unsigned long vec_calls; /* the bfloat16 sums the 8-column kernel took */

extern "C" unsigned long pw_cuda_colsum_vec_calls(void)
{
    return __atomic_load_n(&vec_calls, __ATOMIC_RELAXED);
}

/* bf16: src holds bfloat16 bits (uint16_t), else float */
static void colsum_add(float *dst, const void *src, int bf16, int N, int C, int ld,
                       cudaStream_t stream)
{
    if (N <= 0 || C <= 0) return;
    int rows = pw_colsum_chunk_rows(N), nchunks = (N + rows - 1) / rows;
    unsigned cblocks = (unsigned)((C + PW_COLSUM_THREADS - 1) / PW_COLSUM_THREADS);
    float *partial = (float *)pw_cuda_scratch(sizeof(float) * (size_t)nchunks * C, stream);
    if (bf16 && pw_cuda_get_colsum_vec() && C % 8 == 0 && ld % 8 == 0 &&
        (uintptr_t)src % 16 == 0) {
        dim3 grid(pw_colsum_vec_grid_x(C), nchunks);
        colsum_partial_bf16_vec_kernel<<<grid, pw_colsum_vec_threads(C), 0, stream>>>(
            partial, (const uint16_t *)src, N, C, ld, rows);
        __atomic_fetch_add(&vec_calls, 1ul, __ATOMIC_RELAXED);
    } else {
        dim3 grid(cblocks, nchunks);
        colsum_partial_kernel<<<grid, PW_COLSUM_THREADS, 0, stream>>>(partial, src, bf16, N, C,
                                                                      ld, rows);
    }
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
