/* emu_wgmma.h: the warpgroup products of src/kernels/cuda/wgmma.cuh on the host, for emu.h
 * (which includes this at its end). Each of the 128 threads of a warpgroup posts its
 * descriptors (and its A registers in the _rs forms), the warpgroup meets, each thread takes
 * the operand elements its own 32 accumulators need as the descriptors lay them out in shared
 * memory (wgmma.cuh's formulas, the swizzle of wg_tile.cuh on the address bits), and the
 * warpgroup meets again; the thread's products are computed in double and rounded once into d.
 * A layout put wrong in the kernel (a chunk not swizzled, a descriptor moved by the wrong step, a
 * fragment in the wrong register) gives a wrong product here as on the GPU; whether these
 * formulas are the GPU's is what tests/cuda/test_cuda_wgmma.c checks there, on the probe kernel
 * that test_wgmma_emu.c runs here.
 *
 * Shared addresses in a descriptor are offsets into the launch's dynamic shared memory (its
 * base 1024-byte aligned, as a kernel aligns its tiles on the GPU): the operands must live
 * there. Stops the run on what the hardware would not do as meant: threads of one warpgroup
 * giving different descriptors, a swizzle other than 128 bytes, a base offset, an operand
 * outside the dynamic shared memory, a product in a partial warpgroup.
 *
 * The asynchrony, each moment taken at its worst. On the GPU a product runs after its issue: it
 * reads its shared operands and A registers, and writes its accumulators, at times of the
 * hardware's choosing before the wait that retires its batch (pw_wg_wait(n): every batch
 * committed before the newest n; pw_wg_commit closes a batch). Here:
 *  - the accumulators become a marked NaN (EMU_WG_POISON) at the issue and get the product at
 *    the retiring wait: code that reads them before it computes with NaN, and a write to them in
 *    between is found at the wait (EMU_WG_ACC);
 *  - the operands are read at the issue and again at the wait: a shared byte or an A register
 *    changed in between is found there (EMU_WG_OPERAND, EMU_WG_AREG; the issue's values are
 *    the ones used);
 *  - a product issued with no pw_wg_fence since the thread's last wait, or since it began, is
 *    found (EMU_WG_FENCE): stricter than the PTX rule, which wants the fence only where the
 *    threads touched the registers since, and what the kernels here do anyway;
 *  - a thread that returns with products not retired is found (EMU_WG_UNWAITED).
 * Products in flight into the same accumulators chain (each adds to the one before), as the
 * hardware orders them. Each finding is counted (emu_wg_found) and the first few printed; the
 * launch ends the run after any, unless emu_wg_fatal was set to 0 (test_wgmma_emu.c counts them).
 * In the race-checked build (emu_race.h) a product's reads are the issuing thread's, at the
 * issue and again at the wait; a write by any thread to a byte a product in flight reads is a
 * race (EMU_WG_INFLIGHT), and so is a product's read of a byte whose writer has not run
 * pw_wg_proxy_fence since writing it (EMU_WG_PROXY: the products read shared memory through the
 * async proxy, which sees the threads' writes only after that fence). */
#ifndef PW_TEST_CUDA_EMU_WGMMA_H
#define PW_TEST_CUDA_EMU_WGMMA_H

#include "wg_tile.cuh"

static inline uint64_t pw_wg_desc(pw_smem_t addr, uint32_t lbo, uint32_t sbo)
{
    uintptr_t off = addr - (uintptr_t)emu_dyn_smem;
    if (addr < (uintptr_t)emu_dyn_smem || off >= emu_dyn_bytes) {
        fprintf(stderr, "emu: wgmma descriptor of %#lx: not in the dynamic shared memory\n",
                (unsigned long)addr);
        exit(1);
    }
    return pw_wg_pack((uint32_t)off, lbo, sbo);
}

enum { EMU_WG_K, EMU_WG_MN };

/* the byte offset in dynamic shared memory of the bfloat16 at (mn, k) of a 16-deep slice that
 * descriptor d lays out (major: EMU_WG_*) */
static EMU_HW inline uint32_t emu_wg_offset(uint64_t d, int major, int mn, int k)
{
    uint32_t start = (uint32_t)(d & 0x3fffu) << 4, lbo = (uint32_t)(d >> 16 & 0x3fffu) << 4;
    uint32_t sbo = (uint32_t)(d >> 32 & 0x3fffu) << 4, off;
    if (major == EMU_WG_K)
        off = start + (uint32_t)(mn % 8) * 128 + (uint32_t)(mn / 8) * sbo + 2u * (uint32_t)k;
    else
        off = start + 2u * (uint32_t)(mn % 64) + (uint32_t)(mn / 64) * lbo +
              (uint32_t)(k % 8) * 128 + (uint32_t)(k / 8) * sbo;
    off = pw_wg_swizzle(off);
    if ((size_t)off + 2 > emu_dyn_bytes) {
        fprintf(stderr, "emu: wgmma operand at %u: past the %zu bytes of dynamic shared memory\n",
                off, emu_dyn_bytes);
        exit(1);
    }
    return off;
}

/* the bfloat16 at (mn, k), as a float */
static EMU_HW inline float emu_wg_elem(uint64_t d, int major, int mn, int k)
{
    const char *p = (const char *)emu_dyn_smem + emu_wg_offset(d, major, mn, k);
    return pw_bf16_to_f32(*(const uint16_t *)p);
}

/* the same read by a product of the running thread, at its issue (+1) or its wait (-1): the
 * race check's read, and its count of the products in flight that read the byte */
static EMU_HW inline float emu_wg_read(uint64_t d, int major, int mn, int k, int at,
                                       const void *pc)
{
    const char *p = (const char *)emu_dyn_smem + emu_wg_offset(d, major, mn, k);
    emu_race_wg_read(p, at, pc);
    (void)at, (void)pc;
    return pw_bf16_to_f32(*(const uint16_t *)p);
}

/* what the threads post for their warpgroup's product */
typedef struct EmuWgPost {
    uint64_t da, db;
    uint32_t a[4];
    int acc;
} EmuWgPost;

static EmuWgPost emu_wg_post[EMU_MAX_WARPS * 32];

/* one product a thread has in flight: what it reads (its two rows of A and sixteen columns of
 * B, 16 deep, as read at the issue), where it writes */
typedef struct EmuWgOp {
    float *d;              /* the accumulators */
    const uint32_t *areg;  /* the A registers (the _rs forms), to see them unchanged */
    uint32_t a_at[4];      /* their values at the issue */
    uint64_t da, db;
    int from_regs, b_major, acc;
    int chained;           /* after another in flight into d: its input is that one's result */
    unsigned long group;   /* the batch: the thread's commits before the issue */
    const void *pc;
    float a[2][16], b[16][16], din[32];
} EmuWgOp;

#define EMU_WG_SLOTS 16 /* products a thread may have in flight (the emulator's bound) */
typedef struct EmuWgThread {
    EmuWgOp op[EMU_WG_SLOTS];
    int n;                   /* in flight */
    unsigned long committed; /* batches closed */
    int fenced;              /* a pw_wg_fence since the last wait */
} EmuWgThread;

static EmuWgThread *emu_wg_threads;
static unsigned int emu_wg_threads_n;

enum { EMU_WG_FENCE, EMU_WG_ACC, EMU_WG_AREG, EMU_WG_OPERAND, EMU_WG_UNWAITED, EMU_WG_KINDS };
static const char *const emu_wg_names[EMU_WG_KINDS] = {
    "a product issued with no wgmma fence since the thread's last wait",
    "accumulators written while their product was in flight",
    "A registers changed while their product was in flight",
    "a shared operand changed while its product was in flight",
    "a thread returned with products not waited for"};
static unsigned long emu_wg_found[EMU_WG_KINDS]; /* since a reset */
static int emu_wg_fatal = 1;                      /* exit after a launch that found any */
static int emu_wg_shown;

#define EMU_WG_POISON 0x7fc0deadu /* a quiet NaN marking accumulators in flight */

static EMU_HW void emu_wg_fault(int kind)
{
    emu_wg_found[kind]++;
    if (emu_wg_shown++ < 8)
        fprintf(stderr, "emu wgmma: %s: block (%u,%u,%u), thread %u\n", emu_wg_names[kind],
                blockIdx.x, blockIdx.y, blockIdx.z, emu_tid);
}

static EMU_HW inline void emu_wg_reset(void)
{
    memset(emu_wg_found, 0, sizeof emu_wg_found);
    emu_wg_shown = 0;
}

/* emu.h's calls: a block begins (n threads), a thread returns, a launch ends */
static EMU_HW void emu_wg_block(unsigned int n)
{
    if (n > emu_wg_threads_n) {
        free(emu_wg_threads);
        emu_wg_threads = calloc(n, sizeof(EmuWgThread));
        if (!emu_wg_threads) {
            fprintf(stderr, "emu: out of memory for the warpgroup products of %u threads\n", n);
            exit(1);
        }
        emu_wg_threads_n = n;
    }
    for (unsigned int t = 0; t < n; t++) {
        emu_wg_threads[t].n = 0;
        emu_wg_threads[t].committed = 0;
        emu_wg_threads[t].fenced = 0;
    }
}

static EMU_HW void emu_wg_thread_end(void)
{
    if (emu_wg_threads && emu_tid < emu_wg_threads_n && emu_wg_threads[emu_tid].n)
        emu_wg_fault(EMU_WG_UNWAITED);
}

static EMU_HW void emu_wg_end(void)
{
    unsigned long t = 0;
    for (int k = 0; k < EMU_WG_KINDS; k++) t += emu_wg_found[k];
    if (!t || !emu_wg_fatal) return;
    fprintf(stderr, "emu wgmma:");
    for (int k = 0; k < EMU_WG_KINDS; k++)
        if (emu_wg_found[k]) fprintf(stderr, " %lu %s;", emu_wg_found[k], emu_wg_names[k]);
    fprintf(stderr, "\n");
    exit(1);
}

static EMU_HW inline void pw_wg_fence(void) { emu_wg_threads[emu_tid].fenced = 1; }

static EMU_HW inline void pw_wg_commit(void) { emu_wg_threads[emu_tid].committed++; }

static EMU_HW inline void pw_wg_hold(float d[32]) { (void)d; }

static EMU_HW inline void pw_wg_proxy_fence(void) { emu_race_proxy_fence(); }

static EMU_HW void emu_wg_check_desc(uint64_t d)
{
    if (d >> 62 != 1 || (d >> 49 & 7u) != 0) {
        fprintf(stderr, "emu: wgmma descriptor %#llx: not the 128-byte swizzle at base offset 0\n",
                (unsigned long long)d);
        exit(1);
    }
}

/* the thread's rows of A (r 0, 1: rows 16 w + lane / 4 and 8 below) and columns of B (j: column
 * 8 (j / 2) + 2 (lane % 4) + j % 2), which accumulator v holds: v's row is (v / 2) % 2, its
 * column j = 2 (v / 4) + v % 2 */
static inline int emu_wg_row(int r)
{
    return (int)(16 * (emu_tid % 128 / 32) + emu_tid % 32 / 4) + 8 * r;
}

static inline int emu_wg_col(int j) { return 8 * (j / 2) + 2 * (int)(emu_tid % 4) + j % 2; }

/* A[m][k] of warpgroup g's 16-deep slice, from its threads' posted registers (mma.cuh's A
 * fragment of each warp's 16 rows) */
static EMU_HW inline float emu_wg_reg_A(unsigned int g, int m, int k)
{
    int lane = 4 * (m % 8) + (k % 8) / 2, reg = (m % 16 >= 8) + 2 * (k >= 8);
    return emu_half(emu_wg_post[g * 128 + (m / 16) * 32 + lane].a[reg], k & 1);
}

/* the shared operands an op of the running thread reads (A too where it is not from
 * registers), read at the issue (at +1) or at the wait (-1) */
static EMU_HW void emu_wg_operands(const EmuWgOp *o, float a[2][16], float b[16][16], int at)
{
    for (int r = 0; r < 2 && !o->from_regs; r++)
        for (int k = 0; k < 16; k++)
            a[r][k] = emu_wg_read(o->da, EMU_WG_K, emu_wg_row(r), k, at, o->pc);
    for (int j = 0; j < 16; j++)
        for (int k = 0; k < 16; k++)
            b[j][k] = emu_wg_read(o->db, o->b_major, emu_wg_col(j), k, at, o->pc);
}

static EMU_HW void emu_wg_issue(float d[32], uint64_t da, const uint32_t a[4], uint64_t db,
                                int acc, int from_regs, int b_major, const void *pc)
{
    unsigned int g = emu_tid / 128, t = emu_tid % 128, n = blockDim.x * blockDim.y * blockDim.z;
    if (n < (g + 1) * 128) {
        fprintf(stderr, "emu: wgmma in a partial warpgroup\n");
        exit(1);
    }
    EmuWgThread *th = &emu_wg_threads[emu_tid];
    if (th->n == EMU_WG_SLOTS) {
        fprintf(stderr, "emu: more than %d warpgroup products in flight in a thread\n",
                EMU_WG_SLOTS);
        exit(1);
    }
    if (!th->fenced) emu_wg_fault(EMU_WG_FENCE);
    EmuWgPost *me = &emu_wg_post[emu_tid];
    me->da = da;
    me->db = db;
    me->acc = acc;
    if (a) memcpy(me->a, a, sizeof me->a);
    emu_barrier_wait(&emu_wg_bar[g]);
    const EmuWgPost *first = &emu_wg_post[g * 128];
    if ((!from_regs && me->da != first->da) || me->db != first->db || me->acc != first->acc) {
        fprintf(stderr, "emu: wgmma: thread %u of warpgroup %u gives other operands\n", t, g);
        exit(1);
    }
    if (!from_regs) emu_wg_check_desc(da);
    emu_wg_check_desc(db);
    EmuWgOp *o = &th->op[th->n];
    *o = (EmuWgOp){.d = d, .areg = a, .da = da, .db = db, .from_regs = from_regs,
                   .b_major = b_major, .acc = acc, .group = th->committed, .pc = pc};
    if (a) memcpy(o->a_at, a, sizeof o->a_at);
    for (int r = 0; r < 2 && from_regs; r++)
        for (int k = 0; k < 16; k++) o->a[r][k] = emu_wg_reg_A(g, emu_wg_row(r), k);
    emu_wg_operands(o, o->a, o->b, +1);
    for (int i = 0; i < th->n; i++) o->chained |= th->op[i].d == d;
    if (!o->chained) {
        memcpy(o->din, d, sizeof o->din);
        for (int v = 0; v < 32; v++) memcpy(&d[v], &(uint32_t){EMU_WG_POISON}, sizeof d[v]);
    }
    th->n++;
    emu_barrier_wait(&emu_wg_bar[g]);
}

/* op i of the running thread done: its operands read again (a change since the issue is a
 * fault), its product into the next op in flight on the same accumulators, or into them */
static EMU_HW void emu_wg_retire(EmuWgThread *th, int i)
{
    EmuWgOp *o = &th->op[i];
    float a[2][16], b[16][16];
    if (o->from_regs) memcpy(a, o->a, sizeof a);
    emu_wg_operands(o, a, b, -1);
    if (memcmp(a, o->a, sizeof a) || memcmp(b, o->b, sizeof b)) emu_wg_fault(EMU_WG_OPERAND);
    if (o->from_regs && memcmp(o->areg, o->a_at, sizeof o->a_at)) emu_wg_fault(EMU_WG_AREG);
    float r[32];
    for (int v = 0; v < 32; v++) {
        const float *ar = o->a[(v / 2) % 2], *bc = o->b[2 * (v / 4) + v % 2];
        double s = 0.0;
        for (int k = 0; k < 16; k++) s += (double)ar[k] * bc[k];
        r[v] = (float)((o->acc ? o->din[v] : 0.0) + s);
    }
    for (int j = i + 1; j < th->n; j++) {
        if (th->op[j].d == o->d) { /* the next on these accumulators takes the result */
            memcpy(th->op[j].din, r, sizeof r);
            th->op[j].chained = 0;
            return;
        }
    }
    for (int v = 0; v < 32; v++) {
        uint32_t u;
        memcpy(&u, &o->d[v], sizeof u);
        if (u != EMU_WG_POISON) {
            emu_wg_fault(EMU_WG_ACC);
            break;
        }
    }
    memcpy(o->d, r, sizeof r);
}

/* pw_wg_wait(n): every product of the batches committed before the newest n retires, in the
 * order issued */
static EMU_HW inline void emu_wg_wait(unsigned long keep)
{
    EmuWgThread *th = &emu_wg_threads[emu_tid];
    int kept = 0;
    for (int i = 0; i < th->n; i++) {
        if (th->op[i].group + keep < th->committed) emu_wg_retire(th, i);
        else th->op[kept++] = th->op[i];
    }
    th->n = kept;
    th->fenced = 0;
}
#define pw_wg_wait(n) emu_wg_wait(n)

static EMU_HW inline void pw_wg_ss_k(float d[32], uint64_t da, uint64_t db, int acc)
{
    emu_wg_issue(d, da, NULL, db, acc, 0, EMU_WG_K, __builtin_return_address(0));
}

static EMU_HW inline void pw_wg_rs_k(float d[32], const uint32_t a[4], uint64_t db, int acc)
{
    emu_wg_issue(d, 0, a, db, acc, 1, EMU_WG_K, __builtin_return_address(0));
}

static EMU_HW inline void pw_wg_rs_mn(float d[32], const uint32_t a[4], uint64_t db, int acc)
{
    emu_wg_issue(d, 0, a, db, acc, 1, EMU_WG_MN, __builtin_return_address(0));
}

#endif
