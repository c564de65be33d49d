/* emu.h: runs CUDA kernels written in the C subset of CUDA (src/kernels/cuda/flash.cuh) on the
 * host, one POSIX thread per CUDA thread, so that their logic is tested on machines without a
 * GPU. What it emulates, and all it emulates: blockIdx, threadIdx, blockDim and gridDim (x, y,
 * z); __shared__ memory (a function-local static: the blocks of a launch run one after another,
 * so one copy serves them all); __syncthreads (a barrier of the block's threads that have not
 * returned, as the hardware counts them); and a launch over a grid. No warp intrinsics, no
 * atomics, no streams: a kernel that needs them is not for this harness.
 *
 * It is slow by design (a barrier wakes every thread of the block), so the shapes run under it
 * are small; it checks what a kernel computes, never how fast.
 *
 * Include it before the kernel source, in one translation unit. */
#ifndef PW_TEST_CUDA_EMU_H
#define PW_TEST_CUDA_EMU_H

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct EmuDim3 {
    unsigned int x, y, z;
} EmuDim3;

static _Thread_local EmuDim3 threadIdx, blockIdx;
static EmuDim3 blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(n)
#define PW_UNROLL

/* A barrier over `alive` threads, where a thread that returns from the kernel leaves it (so
 * the others are not kept waiting for it, as on the GPU). */
typedef struct EmuBarrier {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int alive, arrived;
    unsigned long gen;
} EmuBarrier;

static void emu_barrier_release(EmuBarrier *b)
{
    b->arrived = 0;
    b->gen++;
    pthread_cond_broadcast(&b->cv);
}

static void emu_barrier_wait(EmuBarrier *b)
{
    pthread_mutex_lock(&b->mu);
    unsigned long gen = b->gen;
    if (++b->arrived >= b->alive)
        emu_barrier_release(b);
    else
        while (gen == b->gen) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

static void emu_barrier_leave(EmuBarrier *b)
{
    pthread_mutex_lock(&b->mu);
    b->alive--;
    if (b->arrived > 0 && b->arrived >= b->alive) emu_barrier_release(b);
    pthread_mutex_unlock(&b->mu);
}

static EmuBarrier emu_block_bar = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};
static EmuBarrier emu_launch_bar = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};

static void __syncthreads(void) { emu_barrier_wait(&emu_block_bar); }

typedef struct EmuLaunch {
    void (*body)(void *);
    void *arg;
    unsigned int tid;
} EmuLaunch;

static void *emu_thread(void *p)
{
    EmuLaunch *l = p;
    unsigned int tid = l->tid, bx = blockDim.x, by = blockDim.y;
    threadIdx = (EmuDim3){tid % bx, tid / bx % by, tid / (bx * by)};
    unsigned long nblocks = (unsigned long)gridDim.x * gridDim.y * gridDim.z;
    for (unsigned long i = 0; i < nblocks; i++) {
        blockIdx = (EmuDim3){(unsigned int)(i % gridDim.x), (unsigned int)(i / gridDim.x % gridDim.y),
                             (unsigned int)(i / ((unsigned long)gridDim.x * gridDim.y))};
        l->body(l->arg);
        emu_barrier_leave(&emu_block_bar);
        /* every thread is done with block i: one of them readies the barrier for block i + 1 */
        emu_barrier_wait(&emu_launch_bar);
        if (tid == 0) emu_block_bar.alive = (int)(blockDim.x * blockDim.y * blockDim.z);
        emu_barrier_wait(&emu_launch_bar);
    }
    return NULL;
}

/* Run `body(arg)` (a call of the kernel with its arguments) as a grid of blocks; returns when
 * every block has run. */
static void emu_launch(EmuDim3 grid, EmuDim3 block, void (*body)(void *), void *arg)
{
    unsigned int n = block.x * block.y * block.z;
    gridDim = grid;
    blockDim = block;
    emu_block_bar.alive = emu_launch_bar.alive = (int)n;
    pthread_t *th = malloc(sizeof(pthread_t) * n);
    EmuLaunch *ls = malloc(sizeof(EmuLaunch) * n);
    if (!th || !ls) {
        fprintf(stderr, "emu_launch: out of memory for %u threads\n", n);
        exit(1);
    }
    for (unsigned int i = 0; i < n; i++) {
        ls[i] = (EmuLaunch){body, arg, i};
        if (pthread_create(&th[i], NULL, emu_thread, &ls[i])) {
            fprintf(stderr, "emu_launch: cannot start thread %u of %u\n", i, n);
            exit(1);
        }
    }
    for (unsigned int i = 0; i < n; i++) pthread_join(th[i], NULL);
    free(th);
    free(ls);
}

#endif
