/* cp_async.cuh: copies from global to shared memory that do not hold the thread up (cp.async,
 * compute capability 8.0 and up), the way the tensor-core attention (flash_tc_kernels.cuh)
 * loads its next tile while it computes on the current one; tests/cuda/emu.h defines the same
 * functions on the host (there the copy is done at once, which is one of the orders the
 * hardware may take).
 *
 * pw_cp_async16(dst, src, bytes): 16 bytes from src (global, 16-byte aligned) into dst (a
 * shared address, pw_smem_t, 16-byte aligned), of which the first `bytes` (16 or 0) are read
 * and the rest filled with zeros: 0 reads nothing, which is how a row past the end or a column
 * past the head becomes zeros without a branch around the copy. dst is made once by
 * pw_smem(p) from a pointer into shared memory and then moved by plain integer arithmetic (a
 * pointer converted at each copy cost a special-register read and three integer instructions,
 * sm_90 SASS); on the host, emu.h's pw_smem_t is the pointer itself.
 * pw_cp_async4(dst, src, bytes): 4 bytes (4 or 0) to a pointer into shared memory.
 * pw_cp_commit(): the copies this thread issued since the last commit form a group.
 * pw_cp_wait_all() / pw_cp_wait_but_one(): wait until every group of this thread, or all but
 * the newest, has landed; what a thread copied is then visible to itself, and to the block
 * after a __syncthreads. */
#ifndef PW_CUDA_CP_ASYNC_CUH
#define PW_CUDA_CP_ASYNC_CUH

typedef uint32_t pw_smem_t;

static __device__ __forceinline__ pw_smem_t pw_smem(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

static __device__ __forceinline__ void pw_cp_async16(pw_smem_t dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(bytes)
                 : "memory");
}

static __device__ __forceinline__ void pw_cp_async4(void *dst, const void *src, int bytes)
{
    uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(d), "l"(src), "r"(bytes)
                 : "memory");
}

static __device__ __forceinline__ void pw_cp_commit(void)
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}

static __device__ __forceinline__ void pw_cp_wait_all(void)
{
    asm volatile("cp.async.wait_group 0;" ::: "memory");
}

static __device__ __forceinline__ void pw_cp_wait_but_one(void)
{
    asm volatile("cp.async.wait_group 1;" ::: "memory");
}

#endif
