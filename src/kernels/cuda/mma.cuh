/* mma.cuh: the tensor-core product the bfloat16 attention is built from (flash_tc_kernels.cuh),
 * on the GPU; tests/cuda/emu.h defines the same two functions on the host.
 *
 * pw_mma_bf16(d, a, b): d (16 x 8, float32) += A (16 x 16, bfloat16) . B (16 x 8, bfloat16),
 * one warp-wide mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (all 32 lanes must take
 * part). Each lane holds a fragment of each matrix, by the PTX ISA's table ("Matrix Fragments
 * for mma.m16n8k16 with floating point type"); with g = lane / 4 and c = lane % 4:
 *   A: a[0] = A[g][2c, 2c+1], a[1] = A[g+8][2c, 2c+1], a[2] = A[g][2c+8, 2c+9],
 *      a[3] = A[g+8][2c+8, 2c+9]
 *   B: b[0] = B[2c, 2c+1][g], b[1] = B[2c+8, 2c+9][g]
 *   D: d[0], d[1] = D[g][2c, 2c+1]; d[2], d[3] = D[g+8][2c, 2c+1]
 * where a register of two bfloat16 holds the first in its low 16 bits. A D tile's rows are
 * the A rows of the next product: two adjacent 16 x 8 results, rounded and packed, are the
 * 16 x 16 A fragment (the attention keeps its probabilities in registers that way).
 *
 * pw_bf16x2(lo, hi): the two floats rounded to nearest even bfloat16 and packed, lo in the low
 * half (cvt.rn.bf16x2.f32; the same bits as pw_bf16.h for every non-NaN value).
 *
 * pw_ldsm_x4(r, p): four 8 x 8 matrices of bfloat16 from shared memory in one warp-wide
 * ldmatrix.sync.aligned.m8n8.x4.shared.b16 (all 32 lanes must take part): lane 8i + j gives in p
 * the address of row j of matrix i (16 bytes, 16-byte aligned); lane l receives in r[i] the
 * pair of matrix i at row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1, the first in the low half.
 * That is a B fragment of the m16n8k16 product for a B stored as its rows' columns (B[k][n] =
 * X[n][k]: matrices X[n0..n0+7][k0..k0+7] and [k0+8..k0+15]). pw_ldsm_x4_t(r, p): the same with
 * .trans: r[i] holds matrix i's rows 2 (l % 4) and 2 (l % 4) + 1 at column l / 4, a B fragment
 * for a B stored as it is (B[k][n] = X[k][n]). One instruction brings what took four (or eight)
 * 32-bit (or 16-bit) shared loads. */
#ifndef PW_CUDA_MMA_CUH
#define PW_CUDA_MMA_CUH

#include <stdint.h>

#include <cuda_bf16.h>

static __device__ __forceinline__ void pw_mma_bf16(float d[4], const uint32_t a[4],
                                                   const uint32_t b[2])
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

static __device__ __forceinline__ uint32_t pw_bf16x2(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *(uint32_t *)&v;
}

/* volatile: the tile behind p changes between barriers while p does not */
static __device__ __forceinline__ void pw_ldsm_x4(uint32_t r[4], const void *p)
{
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

static __device__ __forceinline__ void pw_ldsm_x4_t(uint32_t r[4], const void *p)
{
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

#endif
