/* wgmma.cuh: Hopper's warpgroup product (wgmma.mma_async, sm_90a), the form the tensor cores
 * reach their full rate by on an H100, where mma.sync (mma.cuh) does not: four warps (a
 * warpgroup, 128 threads) issue one 64 x 64 x 16 product together, its B operand (and its A, in
 * the _ss form) read straight from shared memory through a descriptor, the product running
 * while the warps go on. tests/cuda/emu_wgmma.h defines the same functions on the host.
 *
 * Only what the kernels here use: bfloat16 operands, float32 accumulators, N = 64, shared tiles
 * in the 128-byte swizzle (the only layout that reads a 64-wide bfloat16 row without bank
 * conflicts). A tile is rows of 64 bfloat16 (128 bytes) stored swizzled: the 16-byte chunk c of
 * row r at byte r * 128 + ((c ^ r % 8) * 16) of a 1024-byte aligned tile (wg_tile.cuh);
 * the hardware applies the same XOR to the address bits (bits 4-6 ^= bits 7-9), which is why a
 * descriptor may start inside a row.
 *
 * The descriptor (pw_wg_desc): bits 0-13 the start address / 16, 16-29 the leading byte offset
 * (LBO) / 16, 32-45 the stride byte offset (SBO) / 16, 62-63 the swizzle (1: 128 bytes). How
 * element (mn, k) of a 16-deep slice is found from the start address s, before the swizzle:
 *  - K-major (a row of the tile is one m or n, k along it; pw_wg_*_k): s + (mn % 8) * 128 +
 *    (mn / 8) * SBO + 2 k. SBO = 1024 for a dense tile; LBO unused. The k-th slice of 16 of a
 *    64-wide row starts 32 k bytes in.
 *  - MN-major (a row is one k, n along it; pw_wg_rs_mn): s + 2 (n % 64) + (n / 64) * LBO +
 *    (k % 8) * 128 + (k / 8) * SBO. SBO = 1024; LBO unused at N = 64. The k-th slice of 16 rows
 *    starts 2048 k bytes in.
 * The accumulators d[32] of thread t (warp w = t / 32 of the warpgroup, lane l): d[v] is
 * D[16 w + l / 4 + 8 ((v / 2) % 2)][8 (v / 4) + 2 (l % 4) + v % 2], each warp's 16 rows as
 * mma.cuh's D fragments of eight 16 x 8 tiles side by side. The A registers of the _rs forms are
 * mma.cuh's A fragment of the warp's 16 rows: a D tile pair rounded is the next product's A.
 *
 * Order (the PTX ISA's rules): pw_wg_fence() before the first product of a batch whose
 * accumulators or A registers the threads touched since the last one; pw_wg_commit() closes a
 * batch; pw_wg_wait(n) waits until at most n batches are in flight (n a constant, 0 or 1):
 * only then may the accumulators be read, or the shared operands rewritten; pw_wg_hold(d) after
 * the wait and before the fence keeps the compiler's reads and writes of d on their side of them.
 * Shared memory written by the threads (stores, cp.async) is seen by the products only after
 * pw_wg_proxy_fence() by the writers and then a barrier.
 *
 * The kernels that use these are compiled for sm_90a only (PW_WGMMA set below); other targets
 * get bodies that trap, and the host takes them only on a device of compute capability 9.0
 * (pw_cuda_wgmma_ok, wgmma.cu). */
#ifndef PW_CUDA_WGMMA_CUH
#define PW_CUDA_WGMMA_CUH

#include <stdint.h>

#include "cp_async.cuh"
#include "wg_tile.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PW_WGMMA 1
#endif

static __device__ __forceinline__ uint64_t pw_wg_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return pw_wg_pack(addr, lbo, sbo);
}

#ifdef PW_WGMMA
static __device__ __forceinline__ void pw_wg_fence(void)
{
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
static __device__ __forceinline__ void pw_wg_commit(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
#define pw_wg_wait(n) asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(n) : "memory")
/* the compiler sees a product's accumulators written when it is issued, not when it is waited
 * for: this pins them (an empty asm that reads and writes each) where it stands, so that no
 * read of them moves above the wait after it is placed, nor a write below the issue before it
 * (ptxas would otherwise serialize the products to stay correct: its warning C7514) */
static __device__ __forceinline__ void pw_wg_hold(float d[32])
{
#pragma unroll
    for (int v = 0; v < 32; v++) asm volatile("" : "+f"(d[v])::"memory");
}
static __device__ __forceinline__ void pw_wg_proxy_fence(void)
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* the 32 accumulators as asm operands %0..%31 */

#define PW_WG_D(d)                                                                               \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),          \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),  \
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),            \
        "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),            \
        "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define PW_WG_DLIST                                                                              \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "     \
    "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"

/* d (64 x 64) = A . B (+ d where acc): A 64 x 16 K-major at descriptor da, B given as its 64
 * rows of 16 (B[k][n] = X[n][k]) K-major at db */
static __device__ __forceinline__ void pw_wg_ss_k(float d[32], uint64_t da, uint64_t db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " PW_WG_DLIST
                 ", %32, %33, p, 1, 1, 0, 0;\n}"
                 : PW_WG_D(d)
                 : "l"(da), "l"(db), "r"(acc));
}

/* the same with A from the threads' registers (a: mma.cuh's A fragment of the warp's rows) */
static __device__ __forceinline__ void pw_wg_rs_k(float d[32], const uint32_t a[4], uint64_t db,
                                                  int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " PW_WG_DLIST
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}"
                 : PW_WG_D(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
}

/* A from registers, B stored as it is (16 rows of k, n along each: B[k][n] = X[k][n]),
 * MN-major at db */
static __device__ __forceinline__ void pw_wg_rs_mn(float d[32], const uint32_t a[4], uint64_t db,
                                                   int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " PW_WG_DLIST
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}"
                 : PW_WG_D(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
}
#else /* another target: the kernels that use these never run there (wgmma.cu) */
static __device__ __forceinline__ void pw_wg_fence(void) { __trap(); }
static __device__ __forceinline__ void pw_wg_commit(void) { __trap(); }
#define pw_wg_wait(n) __trap()
static __device__ __forceinline__ void pw_wg_hold(float d[32]) { __trap(); }
static __device__ __forceinline__ void pw_wg_proxy_fence(void) { __trap(); }
static __device__ __forceinline__ void pw_wg_ss_k(float d[32], uint64_t da, uint64_t db, int acc)
{
    __trap();
}
static __device__ __forceinline__ void pw_wg_rs_k(float d[32], const uint32_t a[4], uint64_t db,
                                                  int acc)
{
    __trap();
}
static __device__ __forceinline__ void pw_wg_rs_mn(float d[32], const uint32_t a[4], uint64_t db,
                                                   int acc)
{
    __trap();
}
#endif /* PW_WGMMA */

#endif
