/* test_race_emu.c: the shared-memory race check of emu_race.h finds the races it should and no
 * others, on small kernels whose every race is counted by hand below. Built with -DEMU_RACE and
 * -fsanitize=thread (tests/cuda/meson.build), not fatal here (emu_race_fatal = 0): each case
 * compares the bytes found racing, by kind, with the count worked out from the emulator's fixed
 * order (the threads of a block run in turn, each until it waits at a barrier or returns; the
 * last to arrive at a barrier goes on at once), and each kernel's fixed form finds none.
 * Counting bytes, not accesses, keeps the figures independent of how the compiler groups loads.
 * Needs no GPU. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "emu_test.h"

#include "pw_test.h"

#define NT 64 /* threads of the one-block kernels */

typedef struct Args {
    float *out;
    const float *in;
    int mode;
    float *g;     /* global memory (the heap: the program's own data is not checked as such) */
    int *counter; /* a global counter, at zero */
} Args;

/* Each thread writes its slot, then reads its neighbour's: without a barrier between them
 * (mode 0) threads 0 to 62 read a slot not yet written (UNINIT: 63 x 4 bytes), thread t >= 1
 * writes a slot thread t - 1 has read (WAR: 63 x 4) and thread 63 reads slot 0, which thread 0
 * wrote (RAW: 4); mode 1 has the barrier. */
__global__ void k_neighbour(float *out, int sync)
{
    __shared__ float s[NT];
    int t = threadIdx.x;
    s[t] = (float)t;
    if (sync) __syncthreads();
    out[t] = s[(t + 1) % NT];
}

/* The same in dynamic shared memory */
__global__ void k_neighbour_dyn(float *out, int sync)
{
    PW_DYN_SMEM(float, s);
    int t = threadIdx.x;
    s[t] = (float)t;
    if (sync) __syncthreads();
    out[t] = s[(t + 1) % NT];
}

/* Each thread reads the slot `off` past its own in dynamic shared memory of NT floats: at off =
 * 1 thread 63 reads the 4 bytes past the end (PAST), at off = -1 thread 0 the 4 before it;
 * off = 0 stays inside */
__global__ void k_past(float *out, int off)
{
    PW_DYN_SMEM(float, s);
    int t = threadIdx.x;
    s[t] = (float)t;
    __syncthreads();
    out[t] = s[t + off];
}

/* A slot written by the block before but not by this one: block 1 reads what block 0 left
 * (mode 0: 64 x 4 bytes; the emulator's one copy of __shared__ would hand it block 0's values,
 * the GPU anything); mode 1 has every block write its slots. */
__global__ void k_stale(float *out, int every_block)
{
    __shared__ float s[NT];
    int t = threadIdx.x;
    if (blockIdx.x == 0 || every_block) s[t] = (float)t;
    __syncthreads();
    out[t] = s[(t + 1) % NT];
}

/* One buffer filled twice, read between: without a barrier after the reads (mode 0) the second
 * fill races with the first one's readers. At the first barrier the last thread (63) arrives
 * and goes on: it reads slot 0 and refills slot 63, then waits; then threads 0 to 62 in turn,
 * each reading slot t + 1 and refilling slot t, which thread t - 1 (or, for 0, thread 63) read
 * in this interval: 63 WAR; thread 62 reads slot 63, which thread 63 refilled: 1 RAW. */
__global__ void k_refill(float *out, int sync)
{
    __shared__ float s[NT];
    int t = threadIdx.x;
    float acc = 0.0f;
    for (int i = 0; i < 2; i++) {
        s[t] = (float)(100 * i + t);
        __syncthreads();
        acc += s[(t + 1) % NT];
        if (sync) __syncthreads();
    }
    out[t] = acc;
}

/* Every thread reads slot 0, then thread 0 writes it. After the barrier thread 63 (the last to
 * arrive) reads first, then thread 0 reads and writes: a write after several readers (WAR, 4
 * bytes); threads 1 to 62 then read what thread 0 wrote (RAW, 62 x 4). Each thread reading and
 * then writing its own slot is no race. */
__global__ void k_many_readers(float *out, int unused)
{
    __shared__ float s[NT + 1];
    int t = threadIdx.x;
    (void)unused;
    if (t == 0) s[0] = 1.0f;
    __syncthreads();
    s[t + 1] = (float)t;
    out[t] = s[0] + s[t + 1];
    s[t + 1] = out[t];
    if (t == 0) s[0] = 2.0f;
}

/* Asynchronous copies: thread t copies in[4t .. 4t+3] to its slot of 16 bytes, and reads its
 * neighbour's slot. Modes (counts for the 64 threads):
 *   0: commit, wait, barrier, read: no race.
 *   1: commit, no wait, barrier, read: each thread reads a slot in flight (COPY, 64 x 4 bytes)
 *      and returns with its copy not waited for (64 x 16 bytes).
 *   2: commit, wait, no barrier: as k_neighbour without its barrier, a copy being the write
 *      (UNINIT 63 x 4; WAR where the copy is issued over the 4 bytes thread t - 1 read of it:
 *      63 x 4; RAW 4).
 *   3: no commit, wait, barrier: the wait leaves an uncommitted copy in flight (COPY 64 x 4,
 *      and 64 x 16 not waited for).
 *   4: two groups (slots a, then b), wait for all but the newest, barrier, read the neighbour's
 *      a: no race; then wait for all.
 *   5: as 4, then read the neighbour's b before the last wait: b is in flight (COPY) for all
 *      but thread 62, which reads slot 63 after thread 63 (first after the barrier) waited for
 *      it without a barrier since (RAW): COPY 63 x 4, RAW 4. */
__global__ void k_copy(float *out, const float *in, int mode)
{
    __shared__ __align__(16) float a[NT * 4], b[NT * 4];
    int t = threadIdx.x, n = (t + 1) % NT;
    pw_cp_async16(pw_smem(a + 4 * t), in + 4 * t, 16);
    if (mode >= 4) {
        pw_cp_commit();
        pw_cp_async16(pw_smem(b + 4 * t), in + 4 * (NT + t), 16);
    }
    if (mode != 3) pw_cp_commit();
    if (mode == 4 || mode == 5) {
        pw_cp_wait_but_one();
    } else if (mode != 1) {
        pw_cp_wait_all();
    }
    if (mode != 2) __syncthreads();
    float v = a[4 * n];
    if (mode == 5) v += b[4 * n];
    if (mode >= 4) pw_cp_wait_all();
    out[t] = v;
}

/* A warp's rows through ldmatrix (pw_ldsm_x4): lane l writes row l (8 bfloat16), then the warp
 * reads the four 8 x 8 matrices. Without a barrier between (mode 0), lane l = 4g + c reads
 * columns 2c, 2c + 1 of rows g, 8 + g, 16 + g, 24 + g: 16 bytes, all written by other lanes but
 * for lanes 0, 10, 21 and 31 (rows 0, 10, 21, 31 are among their own: 4 bytes each): RAW
 * 28 x 16 + 4 x 12 = 496 bytes. */
__global__ void k_ldsm(float *out, int sync)
{
    __shared__ __align__(16) uint16_t rows[32][8];
    int l = threadIdx.x;
    for (int j = 0; j < 8; j++) rows[l][j] = pw_bf16_from_f32((float)(l * 8 + j));
    if (sync) __syncthreads();
    uint32_t r[4];
    pw_ldsm_x4(r, rows[l]);
    out[l] = (float)(r[0] + r[1] + r[2] + r[3]);
}

/* Global memory. Each thread writes its float, then reads its neighbour's: without a barrier
 * thread 63 reads what thread 0 wrote in the same interval (RAW: 4 bytes; a global byte not yet
 * written is not tracked, so the other reads find nothing); mode 1 has the barrier. */
__global__ void k_global_neighbour(float *g, int sync)
{
    int t = threadIdx.x;
    g[t] = (float)t;
    if (sync) __syncthreads();
    g[NT + t] = g[(t + 1) % NT];
}

/* Two blocks write the same floats (mode 0: block 1's 32 x 4 bytes race), or each its own */
__global__ void k_overlap(float *g, int own)
{
    g[(own ? 32 * blockIdx.x : 0) + threadIdx.x] = (float)blockIdx.x;
}

/* The last of two blocks sums both blocks' parts, as the few-row kernel's tiles do: each block
 * writes its 32 floats, fences, counts itself; the last fences again and reads both parts
 * through L2. Mode 0 as written: no race. Mode 1 without the writers' fence, 2 without the
 * reader's, 3 with plain loads: each time block 1 reads block 0's 32 x 4 bytes wrongly. */
__global__ void k_publish(float *g, int *counter, int mode)
{
    __shared__ int last;
    int t = threadIdx.x;
    g[32 * blockIdx.x + t] = (float)(100 * blockIdx.x + t);
    if (mode != 1) __threadfence();
    __syncthreads();
    if (t == 0) last = atomicAdd(counter, 1) == 1;
    __syncthreads();
    if (!last) return;
    if (mode != 2) __threadfence();
    float s = mode == 3 ? g[t] + g[32 + t] : __ldcg(&g[t]) + __ldcg(&g[32 + t]);
    g[64 + t] = s;
}

/* Each block's thread 0 notes its block at the next place: the order the blocks ran in */
__global__ void k_order(float *g, int *counter)
{
    if (threadIdx.x == 0) g[atomicAdd(counter, 1)] = (float)blockIdx.x;
}

/* each launch's body: the kernel called with the arguments it takes from Args */
#define BODY(name, call)                                                                          \
    static void name(void *p)                                                                     \
    {                                                                                             \
        Args *a = p;                                                                              \
        call;                                                                                     \
    }
BODY(body_global_neighbour, k_global_neighbour(a->g, a->mode))
BODY(body_overlap, k_overlap(a->g, a->mode))
BODY(body_publish, k_publish(a->g, a->counter, a->mode))
BODY(body_neighbour, k_neighbour(a->out, a->mode))
BODY(body_neighbour_dyn, k_neighbour_dyn(a->out, a->mode))
BODY(body_past, k_past(a->out, a->mode))
BODY(body_stale, k_stale(a->out, a->mode))
BODY(body_refill, k_refill(a->out, a->mode))
BODY(body_many, k_many_readers(a->out, a->mode))
BODY(body_copy, k_copy(a->out, a->in, a->mode))
BODY(body_ldsm, k_ldsm(a->out, a->mode))
BODY(body_order, k_order(a->g, a->counter))

/* run one launch of `blocks` blocks and compare the racing bytes by kind with want[kind]
 * (emu_race.h's kinds, in their order) */
static void expect_grid(const char *what, void (*body)(void *), unsigned blocks, unsigned threads,
                        size_t smem, int mode, const unsigned long want[EMU_RACE_KINDS])
{
    static float out[NT], in[8 * NT];
    for (int i = 0; i < 8 * NT; i++) in[i] = (float)i;
    float *g = calloc(4 * NT, sizeof(float));
    int *counter = calloc(1, sizeof(int));
    Args a = {out, in, mode, g, counter};
    emu_race_reset();
    emu_launch_smem(d1(blocks), d1(threads), smem, body, &a);
    printf("  %-44s", what);
    for (int k = 0; k < EMU_RACE_KINDS; k++) printf(" %lu", emu_race_bytes[k]);
    printf("  (bytes: RAW WAR WAW COPY UNWAITED UNINIT PAST, global: WAW PLAIN UNFENCED "
           "UNACQUIRED, products: WG_INFLIGHT WG_PROXY)\n");
    for (int k = 0; k < EMU_RACE_KINDS; k++)
        CHECK(emu_race_bytes[k] == want[k], "%s: %lu bytes %s, want %lu", what,
              emu_race_bytes[k], emu_race_names[k], want[k]);
    free(g);
    free(counter);
}

static void expect(const char *what, void (*body)(void *), unsigned threads, size_t smem, int mode,
                   const unsigned long want[EMU_RACE_KINDS])
{
    expect_grid(what, body, 1, threads, smem, mode, want);
}

int main(void)
{
    emu_race_fatal = 0;
    static const unsigned long none[EMU_RACE_KINDS] = {0};
    const unsigned long neighbour[EMU_RACE_KINDS] = {4, 63 * 4, 0, 0, 0, 63 * 4};
    expect("neighbour, no barrier", body_neighbour, NT, 0, 0, neighbour);
    expect("neighbour, barrier", body_neighbour, NT, 0, 1, none);
    expect("neighbour in dynamic smem, no barrier", body_neighbour_dyn, NT, NT * 4, 0, neighbour);
    expect("neighbour in dynamic smem, barrier", body_neighbour_dyn, NT, NT * 4, 1, none);
    const unsigned long past[EMU_RACE_KINDS] = {0, 0, 0, 0, 0, 0, 4};
    expect("a slot past the dynamic shared memory", body_past, NT, NT * 4, 1, past);
    expect("a slot before the dynamic shared memory", body_past, NT, NT * 4, -1, past);
    expect("slots inside the dynamic shared memory", body_past, NT, NT * 4, 0, none);
    const unsigned long stale[EMU_RACE_KINDS] = {0, 0, 0, 0, 0, NT * 4};
    expect_grid("a slot only the block before wrote", body_stale, 2, NT, 0, 0, stale);
    expect_grid("a slot every block writes", body_stale, 2, NT, 0, 1, none);
    const unsigned long refill[EMU_RACE_KINDS] = {4, 63 * 4, 0, 0, 0};
    expect("refill, no barrier after the reads", body_refill, NT, 0, 0, refill);
    expect("refill, barrier after the reads", body_refill, NT, 0, 1, none);
    const unsigned long many[EMU_RACE_KINDS] = {62 * 4, 4, 0, 0, 0};
    expect("a write after many readers", body_many, NT, 0, 0, many);

    expect("copy, wait, barrier", body_copy, NT, 0, 0, none);
    const unsigned long unwaited[EMU_RACE_KINDS] = {0, 0, 0, NT * 4, NT * 16};
    expect("copy, no wait, barrier", body_copy, NT, 0, 1, unwaited);
    const unsigned long no_bar[EMU_RACE_KINDS] = {4, 63 * 4, 0, 0, 0, 63 * 4};
    expect("copy, wait, no barrier", body_copy, NT, 0, 2, no_bar);
    expect("copy not committed, wait, barrier", body_copy, NT, 0, 3, unwaited);
    expect("two groups, wait but one, read the first", body_copy, NT, 0, 4, none);
    const unsigned long newest[EMU_RACE_KINDS] = {4, 0, 0, 63 * 4, 0};
    expect("two groups, wait but one, read the newest", body_copy, NT, 0, 5, newest);

    const unsigned long ldsm[EMU_RACE_KINDS] = {28 * 16 + 4 * 12, 0, 0, 0, 0};
    expect("ldmatrix of rows lanes wrote, no barrier", body_ldsm, 32, 0, 0, ldsm);
    expect("ldmatrix of rows lanes wrote, barrier", body_ldsm, 32, 0, 1, none);

    const unsigned long gneighbour[EMU_RACE_KINDS] = {4};
    expect("global: neighbour, no barrier", body_global_neighbour, NT, 0, 0, gneighbour);
    expect("global: neighbour, barrier", body_global_neighbour, NT, 0, 1, none);
    const unsigned long overlap[EMU_RACE_KINDS] = {[EMU_G_WAW] = 32 * 4};
    expect_grid("global: two blocks, one output", body_overlap, 2, 32, 0, 0, overlap);
    expect_grid("global: two blocks, each its own", body_overlap, 2, 32, 0, 1, none);
    expect_grid("global: the last block sums the parts", body_publish, 2, 32, 0, 0, none);
    const unsigned long unfenced[EMU_RACE_KINDS] = {[EMU_G_UNFENCED] = 32 * 4};
    expect_grid("global: no fence after the parts", body_publish, 2, 32, 0, 1, unfenced);
    const unsigned long unacquired[EMU_RACE_KINDS] = {[EMU_G_UNACQUIRED] = 32 * 4};
    expect_grid("global: no fence after the count", body_publish, 2, 32, 0, 2, unacquired);
    const unsigned long plain[EMU_RACE_KINDS] = {[EMU_G_PLAIN] = 32 * 4};
    expect_grid("global: parts read with plain loads", body_publish, 2, 32, 0, 3, plain);

    /* the race-checked build runs a launch's blocks last first (emu.h), the plain one first
     * first: between the two, each kernel's results are checked in both orders */
    float *g = calloc(4, sizeof(float));
    int *counter = calloc(1, sizeof(int));
    Args a = {NULL, NULL, 0, g, counter};
    emu_launch(d1(4), d1(32), body_order, &a);
    printf("  blocks ran in the order %g %g %g %g\n", (double)g[0], (double)g[1], (double)g[2],
           (double)g[3]);
    CHECK(g[0] == 3 && g[1] == 2 && g[2] == 1 && g[3] == 0, "blocks ran %g %g %g %g, not last "
          "first", (double)g[0], (double)g[1], (double)g[2], (double)g[3]);
    free(g);
    free(counter);
    return pw_test_done("test_race_emu");
}
