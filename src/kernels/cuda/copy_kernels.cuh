/* copy_kernels.cuh: many copies within the device (or zero fills) in one launch: the kernel
 * table's copy_batch entry (copy.cu). A weights payload is a dozen to a few dozen tensors,
 * each a cudaMemcpyAsync of its own: on an H100, GPT-2's payload (328 MB) and Qwen2.5-0.5B's
 * (about 1 GB) took 1.06 times one copy of the same bytes plus about 50 us (the line through
 * the two), which at GPT-2's size held the transfer to 0.78 of the copy. One launch pays that
 * fixed cost once.
 *
 * The pieces are cut into tiles of PW_COPY_TILE words, a block a tile, so that a block never
 * spans two pieces and the grid is the sum of the pieces' tiles; a piece moves 16 bytes a word
 * where its addresses and length allow, else 4, else 1. Every word is loaded before any is
 * stored (a store the compiler cannot prove apart from the next load waits for it).
 *
 * Written in the C subset of CUDA, so that tests/cuda/test_kernels_emu.c compiles this very
 * file on the host and runs it, plan and kernel, under tests/cuda/emu.h. */
#ifndef PW_COPY_KERNELS_CUH
#define PW_COPY_KERNELS_CUH

#include <stddef.h>
#include <stdint.h>

#define PW_COPY_SEGS 32 /* pieces a launch: the arguments go by value, about 1 KB */
#define PW_COPY_THREADS 256
#define PW_COPY_UNROLL 4 /* words a thread */
#define PW_COPY_TILE (PW_COPY_THREADS * PW_COPY_UNROLL)

typedef struct PwCopyLaunch {
    int n;
    char *dst[PW_COPY_SEGS];
    const char *src[PW_COPY_SEGS]; /* NULL: zeros */
    size_t words[PW_COPY_SEGS];
    int shift[PW_COPY_SEGS];              /* log2 of the piece's word: 4, 2 or 0 */
    unsigned int tile0[PW_COPY_SEGS + 1]; /* each piece's first tile; tile0[n]: the grid */
} PwCopyLaunch;

/* Pieces from index *next on (empty ones skipped) into a (zeroed first), up to PW_COPY_SEGS;
 * *next is left at the first piece not taken. Returns the launch's blocks (0: nothing left). */
static unsigned int pw_copy_plan(PwCopyLaunch *a, void *const *dst, const void *const *src,
                                 const size_t *bytes, int n, int *next)
{
    a->n = 0;
    a->tile0[0] = 0;
    unsigned int tiles = 0;
    int i = *next;
    for (; i < n && a->n < PW_COPY_SEGS; i++) {
        if (!bytes[i]) continue;
        uintptr_t bits = (uintptr_t)dst[i] | (uintptr_t)src[i] | (uintptr_t)bytes[i];
        int sh = bits % 16 == 0 ? 4 : bits % 4 == 0 ? 2 : 0;
        int k = a->n++;
        a->dst[k] = (char *)dst[i];
        a->src[k] = (const char *)src[i];
        a->shift[k] = sh;
        a->words[k] = bytes[i] >> sh;
        tiles += (unsigned int)((a->words[k] + PW_COPY_TILE - 1) / PW_COPY_TILE);
        a->tile0[k + 1] = tiles;
    }
    *next = i;
    return tiles;
}

/* tile blockIdx.x of piece s: words w0 + k PW_COPY_THREADS, T the word's type */
#define PW_COPY_TILE_OF(T, zero)                                                            \
    {                                                                                       \
        T *d = (T *)a.dst[s];                                                               \
        const T *x = (const T *)a.src[s];                                                   \
        T v[PW_COPY_UNROLL];                                                                \
        PW_UNROLL                                                                           \
        for (int k = 0; k < PW_COPY_UNROLL; k++) {                                          \
            size_t w = w0 + (size_t)k * PW_COPY_THREADS;                                    \
            v[k] = w < nw && x ? x[w] : (zero);                                             \
        }                                                                                   \
        PW_UNROLL                                                                           \
        for (int k = 0; k < PW_COPY_UNROLL; k++) {                                          \
            size_t w = w0 + (size_t)k * PW_COPY_THREADS;                                    \
            if (w < nw) d[w] = v[k];                                                        \
        }                                                                                   \
    }

__global__ void copy_batch_kernel(PwCopyLaunch a)
{
    unsigned int t = blockIdx.x;
    int s = 0;
    while (s + 1 < a.n && a.tile0[s + 1] <= t) s++;
    size_t w0 = (size_t)(t - a.tile0[s]) * PW_COPY_TILE + threadIdx.x, nw = a.words[s];
    if (a.shift[s] == 4) PW_COPY_TILE_OF(uint4, make_uint4(0u, 0u, 0u, 0u))
    else if (a.shift[s] == 2) PW_COPY_TILE_OF(unsigned int, 0u)
    else PW_COPY_TILE_OF(unsigned char, (unsigned char)0)
}
#undef PW_COPY_TILE_OF

#endif
