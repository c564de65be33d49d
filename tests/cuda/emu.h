/* emu.h: runs CUDA kernels written in the C subset of CUDA (the kernel headers of
 * src/kernels/cuda) on the host, one coroutine (emu_switch.h) per CUDA thread, so that their logic
 * is tested on machines without a GPU. What it emulates, and all it emulates: blockIdx, threadIdx,
 * blockDim and gridDim (x, y, z); __shared__ memory (a function-local static: the blocks of a
 * launch run one after another, so one copy serves them all); __syncthreads (a barrier of the
 * block's threads that have not returned, as the hardware counts them); __shfl_xor_sync of a
 * float or a double over a whole warp (each lane posts its value, the warp meets, each reads
 * its partner's, the warp meets again) and __any_sync the same way; atomicMin and atomicMax
 * of an int, atomicAdd of a float or an int; __threadfence and __ldcg; __float_as_uint and
 * __uint_as_float; uint4, float4, make_uint4 and make_float4; dynamic shared memory
 * (PW_DYN_SMEM); __align__;
 * __syncthreads_or; the tensor-core product and shared loads of src/kernels/cuda/mma.cuh
 * (pw_mma_bf16 and pw_ldsm_x4 / _t, each from its table, and pw_bf16x2); the asynchronous
 * copies of src/kernels/cuda/cp_async.cuh (done at once); the warpgroup products of
 * src/kernels/cuda/wgmma.cuh (emu_wgmma.h); pdl.cuh's pw_pdl_enter (nothing: one launch after
 * another); and a launch over a grid. No other
 * intrinsics, no streams: a kernel that needs them is not for this harness.
 *
 * It is slow (every barrier switches through every thread of the block), so the shapes run
 * under it are small; it checks what a kernel computes, never how fast. The threads run one at a
 * time, in a fixed order, so a race the barriers do not order cannot change what it computes;
 * built with -DEMU_RACE and -fsanitize=thread, it checks every access to shared memory for such
 * races between the threads of a block instead (emu_race.h), whatever the order, and global
 * memory's between threads and between the blocks of a launch.
 *
 * Include it before the kernel source, in one translation unit. */
#ifndef PW_TEST_CUDA_EMU_H
#define PW_TEST_CUDA_EMU_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_switch.h"
#include "pw_bf16.h"

typedef struct EmuDim3 {
    unsigned int x, y, z;
} EmuDim3;

/* what the running thread sees; the scheduler sets them before it switches to a thread */
static EmuDim3 threadIdx, blockIdx, blockDim, gridDim;
static unsigned int emu_tid; /* the running thread's rank in its block */

#define __global__
#define __device__
#define __forceinline__ inline
#ifdef EMU_RACE /* emu_race.h: shared variables in a section of their own, for their bounds */
#define __shared__ static __attribute__((section("emu_smem")))
#else
#define __shared__ static
#endif
#define __align__(n) _Alignas(n)
#define __launch_bounds__(...)
#define PW_UNROLL
#define PW_UNROLL_BY(n)
/* dynamic shared memory: the bytes emu_launch_smem was given */
#define PW_DYN_SMEM(type, name) type *name = (type *)emu_dyn_smem

/* CUDA's 16-byte vector of unsigned ints (read through a cast pointer: build with
 * -fno-strict-aliasing) */
typedef struct uint4 {
    _Alignas(16) unsigned int x;
    unsigned int y, z, w;
} uint4;

static inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w)
{
    uint4 v = {x, y, z, w};
    return v;
}

/* CUDA's 16-byte vector of floats, and its maker */
typedef struct float4 {
    _Alignas(16) float x;
    float y, z, w;
} float4;

static inline float4 make_float4(float x, float y, float z, float w)
{
    float4 v = {x, y, z, w};
    return v;
}

#define EMU_MAX_WARPS 32        /* 1024 threads a block */
#define EMU_STACK (64u << 10)   /* bytes of stack an emulated thread */

/* The threads of a block are coroutines on one host thread, switched only where a CUDA thread
 * could have to wait for others (a barrier) or when one returns: cheap switches, and the same
 * interleaving on every run. */
typedef struct EmuThread {
    EmuCtx ctx;
    int done;
} EmuThread;

static EmuCtx emu_sched;
static EmuThread *emu_threads;
static void (*emu_body)(void *);
static void *emu_dyn_smem;
static size_t emu_dyn_bytes; /* its size */
static void *emu_arg;

static inline void emu_yield(void) { emu_ctx_switch(&emu_threads[emu_tid].ctx, &emu_sched); }

/* A barrier over `alive` threads, where a thread that returns from the kernel leaves it (so
 * the others are not kept waiting for it, as on the GPU). */
typedef struct EmuBarrier {
    int alive, arrived;
    unsigned long gen;
} EmuBarrier;

static EmuBarrier emu_block_bar, emu_warp_bar[EMU_MAX_WARPS];
static EmuBarrier emu_wg_bar[EMU_MAX_WARPS / 4]; /* warpgroups of 4 warps (emu_wgmma.h) */

static inline void emu_barrier_wait(EmuBarrier *b)
{
    unsigned long gen = b->gen;
    if (++b->arrived >= b->alive) {
        b->arrived = 0;
        b->gen++;
        return;
    }
    while (gen == b->gen) emu_yield();
}

static inline void emu_barrier_leave(EmuBarrier *b)
{
    b->alive--;
    if (b->arrived > 0 && b->arrived >= b->alive) {
        b->arrived = 0;
        b->gen++;
    }
}

static inline void __syncthreads(void) { emu_barrier_wait(&emu_block_bar); }

/* src/kernels/cuda/pdl.cuh's entry: the launches here run one after another, each kernel's
 * predecessor done before it starts, as that entry makes them on the GPU */
static inline void pw_pdl_enter(void) {}

#ifdef EMU_RACE
#include "emu_race.h"
/* what the hardware or the emulator does, not the kernel's own loads and stores, is not checked
 * as those: atomic operations, asynchronous copies (checked as such), a thread's bookkeeping */
#define EMU_HW EMU_UNCHECKED
#else
#define EMU_HW
/* without the race check, its hooks are nothing and dynamic shared memory has no guard bytes */
#define emu_race_copy(dst, bytes, pc) ((void)0)
#define emu_race_commit() ((void)0)
#define emu_race_wait(keep, pc) ((void)0)
#define emu_race_atomic() ((void)0)
#define emu_race_fence() ((void)0)
#define emu_race_ldcg(p, bytes, pc) ((void)0)
#define emu_race_thread_end() ((void)0)
#define emu_race_launch(n, smem, blocks, stacks, stacks_bytes) ((void)0)
#define emu_race_block(n, index) ((void)0)
#define emu_race_in_thread(in) ((void)0)
#define emu_race_launch_end() ((void)0)
#define emu_race_end() ((void)0)
#define emu_race_wg_read(p, at, pc) ((void)0)
#define emu_race_proxy_fence() ((void)0)
/* 1024-byte aligned, as the warpgroup products' tiles need (emu_wgmma.h) */
static inline void *emu_race_dyn_alloc(size_t smem)
{
    return aligned_alloc(1024, smem ? (smem + 1023) / 1024 * 1024 : 1024);
}
static inline void emu_race_dyn_free(void *p) { free(p); }
#endif

/* the threads of warp w in a block of n: 32, or fewer in a last partial warp */
static inline int emu_warp_size(unsigned int w, unsigned int n)
{
    unsigned int left = n - w * 32;
    return (int)(left < 32 ? left : 32);
}

/* Each lane's value through a per-warp board: post, meet, read the partner's, meet (so that
 * the board is free for the next exchange). Doubles carry floats exactly. */
static double emu_board[EMU_MAX_WARPS][32];

static inline double emu_shfl_xor(double v, int lane_mask)
{
    unsigned int w = emu_tid / 32, lane = emu_tid % 32, from = lane ^ (unsigned int)lane_mask;
    emu_board[w][lane] = v;
    emu_barrier_wait(&emu_warp_bar[w]);
    if ((int)from >= emu_warp_size(w, blockDim.x * blockDim.y * blockDim.z)) {
        fprintf(stderr, "emu: __shfl_xor_sync reads lane %u of a partial warp\n", from);
        exit(1);
    }
    double r = emu_board[w][from];
    emu_barrier_wait(&emu_warp_bar[w]);
    return r;
}

static inline float emu_shfl_xor_f(unsigned int mask, float v, int o)
{
    (void)mask;
    return (float)emu_shfl_xor(v, o);
}

static inline double emu_shfl_xor_d(unsigned int mask, double v, int o)
{
    (void)mask;
    return emu_shfl_xor(v, o);
}

#define __shfl_xor_sync(mask, v, o)                                                              \
    _Generic((v), float: emu_shfl_xor_f, double: emu_shfl_xor_d)(mask, v, o)

/* __any_sync over a whole warp: each lane posts its predicate on the board, the warp meets,
 * each reads every lane's, the warp meets again */
static inline int __any_sync(unsigned int mask, int pred)
{
    unsigned int w = emu_tid / 32, lane = emu_tid % 32;
    int n = emu_warp_size(w, blockDim.x * blockDim.y * blockDim.z), any = 0;
    (void)mask;
    emu_board[w][lane] = pred != 0;
    emu_barrier_wait(&emu_warp_bar[w]);
    for (int l = 0; l < n; l++) any |= emu_board[w][l] != 0.0;
    emu_barrier_wait(&emu_warp_bar[w]);
    return any;
}

/* pw_mma_bf16 (mma.cuh): each lane posts its A and B fragments, the warp meets, each lane
 * computes its own four results from everyone's fragments by the PTX table (mma.cuh's
 * comment), in double and then rounded once into d, and the warp meets again. */
static uint32_t emu_mma_a[EMU_MAX_WARPS][32][4], emu_mma_b[EMU_MAX_WARPS][32][2];

static inline float emu_half(uint32_t reg, int hi)
{
    return pw_bf16_to_f32((uint16_t)(hi ? reg >> 16 : reg & 0xffffu));
}

/* A[r][k] and B[k][n] of warp w, from the lanes that hold them */
static inline float emu_mma_A(unsigned int w, int r, int k)
{
    return emu_half(emu_mma_a[w][4 * (r % 8) + (k % 8) / 2][(r >= 8) + 2 * (k >= 8)], k & 1);
}

static inline float emu_mma_B(unsigned int w, int k, int n)
{
    return emu_half(emu_mma_b[w][4 * n + (k % 8) / 2][k >= 8], k & 1);
}

static inline void pw_mma_bf16(float d[4], const uint32_t a[4], const uint32_t b[2])
{
    unsigned int w = emu_tid / 32, lane = emu_tid % 32;
    if (emu_warp_size(w, blockDim.x * blockDim.y * blockDim.z) != 32) {
        fprintf(stderr, "emu: pw_mma_bf16 in a partial warp\n");
        exit(1);
    }
    memcpy(emu_mma_a[w][lane], a, sizeof emu_mma_a[w][lane]);
    memcpy(emu_mma_b[w][lane], b, sizeof emu_mma_b[w][lane]);
    emu_barrier_wait(&emu_warp_bar[w]);
    int g = (int)lane / 4, c = (int)lane % 4;
    for (int i = 0; i < 4; i++) {
        int r = g + 8 * (i >= 2), n = 2 * c + (i & 1);
        double acc = 0.0;
        for (int k = 0; k < 16; k++) acc += (double)emu_mma_A(w, r, k) * emu_mma_B(w, k, n);
        d[i] = (float)(d[i] + acc);
    }
    emu_barrier_wait(&emu_warp_bar[w]);
}

static inline uint32_t pw_bf16x2(float lo, float hi)
{
    return (uint32_t)pw_bf16_from_f32(lo) | (uint32_t)pw_bf16_from_f32(hi) << 16;
}

/* pw_ldsm_x4 and pw_ldsm_x4_t (mma.cuh): each lane posts its row address, the warp meets, each
 * lane gathers its four pairs by the table of mma.cuh's comment from the rows the others gave,
 * and the warp meets again. A row address that is not 16-byte aligned stops the run, as the
 * hardware requires it. */
static const uint16_t *emu_ldsm_row[EMU_MAX_WARPS][32];

static inline void emu_ldsm(uint32_t r[4], const void *p, int trans)
{
    unsigned int w = emu_tid / 32, lane = emu_tid % 32;
    if (emu_warp_size(w, blockDim.x * blockDim.y * blockDim.z) != 32) {
        fprintf(stderr, "emu: ldmatrix in a partial warp\n");
        exit(1);
    }
    if ((uintptr_t)p % 16) {
        fprintf(stderr, "emu: ldmatrix row address %p is not 16-byte aligned\n", p);
        exit(1);
    }
    emu_ldsm_row[w][lane] = (const uint16_t *)p;
    emu_barrier_wait(&emu_warp_bar[w]);
    int g = (int)lane / 4, c = (int)lane % 4;
    for (int i = 0; i < 4; i++) {
        uint32_t lo, hi;
        if (trans) {
            lo = emu_ldsm_row[w][8 * i + 2 * c][g];
            hi = emu_ldsm_row[w][8 * i + 2 * c + 1][g];
        } else {
            lo = emu_ldsm_row[w][8 * i + g][2 * c];
            hi = emu_ldsm_row[w][8 * i + g][2 * c + 1];
        }
        r[i] = lo | hi << 16;
    }
    emu_barrier_wait(&emu_warp_bar[w]);
}

static inline void pw_ldsm_x4(uint32_t r[4], const void *p) { emu_ldsm(r, p, 0); }
static inline void pw_ldsm_x4_t(uint32_t r[4], const void *p) { emu_ldsm(r, p, 1); }

/* __syncthreads_or: each thread posts its predicate, the block meets, each reads the verdict,
 * the block meets again (so that no thread posts the next call's before all have read this
 * one's). The board is stamped with the barrier generation its posts belong to: the first post
 * of a new call clears it. */
static int emu_or_board;
static unsigned long emu_or_gen;

static inline int __syncthreads_or(int pred)
{
    if (emu_or_gen != emu_block_bar.gen) {
        emu_or_gen = emu_block_bar.gen;
        emu_or_board = 0;
    }
    emu_or_board |= pred != 0;
    emu_barrier_wait(&emu_block_bar);
    int r = emu_or_board;
    emu_barrier_wait(&emu_block_bar);
    return r;
}

/* cp_async.cuh's copies, done at once (one of the orders the hardware may take: a kernel whose
 * barriers and waits are right reads the same either way); the alignment the hardware needs is
 * checked, as a misaligned address faults there */
static EMU_HW inline void emu_cp_async(void *dst, const void *src, int bytes, int size)
{
    emu_race_copy(dst, size, __builtin_return_address(0));
    if ((uintptr_t)dst % (unsigned)size || (bytes && (uintptr_t)src % (unsigned)size)) {
        fprintf(stderr, "emu: cp.async of %d bytes at %p <- %p: not aligned\n", size, dst, src);
        exit(1);
    }
    if (bytes != 0 && bytes != size) {
        fprintf(stderr, "emu: cp.async of %d bytes reads %d\n", size, bytes);
        exit(1);
    }
    memset(dst, 0, (size_t)size);
    if (bytes) memcpy(dst, src, (size_t)bytes);
}

typedef uintptr_t pw_smem_t; /* a shared address: here the pointer itself */
static inline pw_smem_t pw_smem(const void *p) { return (uintptr_t)p; }
static inline void pw_cp_async16(pw_smem_t dst, const void *src, int bytes)
{
    emu_cp_async((void *)dst, src, bytes, 16);
}
static inline void pw_cp_async4(void *dst, const void *src, int bytes)
{
    emu_cp_async(dst, src, bytes, 4);
}
static EMU_HW inline void pw_cp_commit(void) { emu_race_commit(); }
static EMU_HW inline void pw_cp_wait_all(void) { emu_race_wait(0, __builtin_return_address(0)); }
static EMU_HW inline void pw_cp_wait_but_one(void)
{
    emu_race_wait(1, __builtin_return_address(0));
}

/* one thread runs at a time and none is switched inside these: they are atomic as written (the
 * race check counts them: an atomic orders global memory between blocks, emu_race.h) */
static EMU_HW inline int atomicMax(int *p, int v)
{
    int old = *p;
    emu_race_atomic();
    if (v > old) *p = v;
    return old;
}

static EMU_HW inline int atomicMin(int *p, int v)
{
    int old = *p;
    emu_race_atomic();
    if (v < old) *p = v;
    return old;
}

static EMU_HW inline float emu_atomic_add_f(float *p, float v)
{
    float old = *p;
    emu_race_atomic();
    *p = old + v;
    return old;
}

static EMU_HW inline int emu_atomic_add_i(int *p, int v)
{
    int old = *p;
    emu_race_atomic();
    *p = old + v;
    return old;
}

#define atomicAdd(p, v) _Generic((p), float *: emu_atomic_add_f, int *: emu_atomic_add_i)(p, v)

/* one thread runs at a time: every store is seen by the next reader without a fence, and a
 * load that bypasses L1 (__ldcg) is a load; the race check counts both (emu_race.h) */
static EMU_HW inline void __threadfence(void) { emu_race_fence(); }
static EMU_HW inline float4 emu_ldcg_f4(const float4 *p)
{
    emu_race_ldcg(p, sizeof *p, __builtin_return_address(0));
    return *p;
}
static EMU_HW inline float emu_ldcg_f(const float *p)
{
    emu_race_ldcg(p, sizeof *p, __builtin_return_address(0));
    return *p;
}
#define __ldcg(p)                                                                                \
    _Generic((p), const float4 *: emu_ldcg_f4, float4 *: emu_ldcg_f4, const float *: emu_ldcg_f, \
             float *: emu_ldcg_f)(p)

static inline uint32_t __float_as_uint(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float __uint_as_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* emu_wgmma.h's bookkeeping of the products in flight (defined there): a block begins, a
 * thread returns, a launch ends */
static EMU_HW void emu_wg_block(unsigned int n);
static EMU_HW void emu_wg_thread_end(void);
static EMU_HW void emu_wg_end(void);

/* a thread's life: the kernel, then out of the block's barriers; then back to the scheduler,
 * for good (the context is made again for the next block) */
static EMU_HW void emu_entry(void)
{
    emu_body(emu_arg);
    emu_race_thread_end();
    emu_wg_thread_end();
    emu_barrier_leave(&emu_block_bar);
    emu_barrier_leave(&emu_warp_bar[emu_tid / 32]);
    emu_barrier_leave(&emu_wg_bar[emu_tid / 128]);
    emu_threads[emu_tid].done = 1;
    emu_ctx_switch(&emu_threads[emu_tid].ctx, &emu_sched);
    abort(); /* a finished thread is never resumed */
}

static inline void emu_set_thread(unsigned int tid)
{
    emu_tid = tid;
    threadIdx = (EmuDim3){tid % blockDim.x, tid / blockDim.x % blockDim.y,
                          tid / (blockDim.x * blockDim.y)};
}

/* Run `body(arg)` (a call of the kernel with its arguments) as a grid of blocks, one block
 * after another (the first first; in the race-checked build the last first, so that between
 * the two builds a kernel's results are checked in both orders), its threads taken in turn
 * until each has returned; smem bytes of dynamic shared memory (PW_DYN_SMEM), poisoned with
 * NaN at each block. */
static inline void emu_launch_smem(EmuDim3 grid, EmuDim3 block, size_t smem,
                                   void (*body)(void *), void *arg)
{
    unsigned int n = block.x * block.y * block.z;
    if (n == 0 || n > 32 * EMU_MAX_WARPS) {
        fprintf(stderr, "emu_launch: %u threads a block (1 to %d)\n", n, 32 * EMU_MAX_WARPS);
        exit(1);
    }
    gridDim = grid;
    blockDim = block;
    emu_body = body;
    emu_arg = arg;
    emu_threads = calloc(n, sizeof(EmuThread));
    char *stacks = malloc((size_t)n * EMU_STACK);
    emu_dyn_smem = emu_race_dyn_alloc(smem);
    emu_dyn_bytes = smem;
    if (!emu_threads || !stacks || !emu_dyn_smem) {
        fprintf(stderr, "emu_launch: out of memory for %u threads\n", n);
        exit(1);
    }
    unsigned long nblocks = (unsigned long)grid.x * grid.y * grid.z;
    emu_race_launch(n, smem, nblocks, (uintptr_t)stacks, (size_t)n * EMU_STACK);
#ifdef EMU_RACE
    for (unsigned long i = nblocks; i-- > 0;) { /* the other order: the plain build runs 0 first */
#else
    for (unsigned long i = 0; i < nblocks; i++) {
#endif
        blockIdx = (EmuDim3){(unsigned int)(i % grid.x), (unsigned int)(i / grid.x % grid.y),
                             (unsigned int)(i / ((unsigned long)grid.x * grid.y))};
        memset(emu_dyn_smem, 0xff, smem);
        emu_race_block(n, i);
        emu_wg_block(n);
        emu_block_bar = (EmuBarrier){(int)n, 0, 0};
        emu_or_gen = (unsigned long)-1; /* no stamp of an earlier block's */
        for (unsigned int w = 0; w * 32 < n; w++)
            emu_warp_bar[w] = (EmuBarrier){emu_warp_size(w, n), 0, 0};
        for (unsigned int g = 0; g * 128 < n; g++)
            emu_wg_bar[g] = (EmuBarrier){(int)(n - g * 128 < 128 ? n - g * 128 : 128), 0, 0};
        for (unsigned int t = 0; t < n; t++) {
            EmuThread *th = &emu_threads[t];
            th->done = 0;
            emu_ctx_make(&th->ctx, stacks + (size_t)t * EMU_STACK, EMU_STACK, emu_entry);
        }
        for (unsigned int left = n; left > 0;) {
            left = 0;
            for (unsigned int t = 0; t < n; t++) {
                if (emu_threads[t].done) continue;
                emu_set_thread(t);
                emu_race_in_thread(1);
                emu_ctx_switch(&emu_sched, &emu_threads[t].ctx);
                emu_race_in_thread(0);
                left += !emu_threads[t].done;
            }
        }
    }
    free(stacks);
    free(emu_threads);
    emu_race_dyn_free(emu_dyn_smem);
    emu_dyn_smem = NULL;
    emu_race_launch_end();
    emu_race_end();
    emu_wg_end();
}

static inline void emu_launch(EmuDim3 grid, EmuDim3 block, void (*body)(void *), void *arg)
{
    emu_launch_smem(grid, block, 0, body, arg);
}

#include "emu_wgmma.h"

#endif
