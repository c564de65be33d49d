/* emu_race.h: a race check of shared and global memory for kernels run under emu.h, built when
 * the test is compiled with -DEMU_RACE and the compiler's thread-sanitizer instrumentation
 * (-fsanitize=thread), but linked without its runtime: the instrumentation calls
 * __tsan_read4(p), __tsan_write16(p), ... before each load and store, and this file defines
 * those functions. Why our own and not the sanitizer's runtime: that runtime knows host threads,
 * and the emulated CUDA threads are coroutines of one host thread, whose ordering is the block's
 * barriers, not locks; what a GPU race check (compute-sanitizer's racecheck) reports is the
 * hazard between two threads of a block on a shared byte with no barrier between them, and that
 * is what is checked here, on every byte, at every run.
 *
 * The rules. A block's life is cut into intervals by its barriers (__syncthreads; a thread that
 * returns leaves them, as on the hardware, and what it did counts as done before the others'
 * next barrier, where racecheck on a GPU may be stricter). A shared byte is
 *   read after write  (RAW) when a thread reads it after another wrote it in the same interval,
 *   write after read  (WAR) when a thread writes it after another read it in the same interval,
 *   write after write (WAW) when a thread writes it after another wrote it in the same interval;
 * a thread's own accesses never race with each other. An asynchronous copy (cp_async.cuh) writes
 * its bytes when it is issued, as far as the threads that touched them before are concerned, and
 * again when the thread's wait retires it (pw_cp_wait_all: every committed group;
 * pw_cp_wait_but_one: all but the newest; a copy not yet committed is retired by neither, as
 * cp.async.wait_group does); in between its bytes are in flight, and any access to them, the
 * copying thread's own included, is a race (COPY). A thread that returns with copies not retired
 * is reported too (UNWAITED). Two more checks come with the shadow: a read of a byte the block
 * has not written (UNINIT: the emulator's one copy of a __shared__ variable would hand it what
 * the block before left, the GPU anything), and an access within EMU_GUARD bytes before or past
 * the launch's dynamic shared memory (PAST; an overrun of a __shared__ variable into the next is
 * not seen). Atomic operations are not recorded as accesses.
 *
 * The warpgroup products (emu_wgmma.h) read shared memory from their issue to the wait that
 * retires them: their reads are the issuing thread's, at both, and in between a write by any
 * thread to a byte one of them reads is a race (WG_INFLIGHT), whatever barriers lie between.
 * They read through the async proxy: a byte a thread wrote (a store, or a copy retired) is
 * theirs only after that thread's pw_wg_proxy_fence (WG_PROXY where the writer has not fenced
 * since the write).
 *
 * Global memory (any address a kernel thread touches that is neither shared memory, nor a
 * thread's stack, nor the program's own data) is checked too, for one launch at a time, on the
 * bytes the launch writes. Within a block, the rules above (RAW, WAW between two threads in one
 * interval). Across blocks, which no barrier orders: two blocks writing one byte (G_WAW); a
 * plain load of a byte another block wrote (G_PLAIN: its SM's L1 may hold a stale copy; such a
 * read goes through L2, __ldcg); and such a load before the writer block fenced the byte
 * (G_UNFENCED: a __threadfence after the write) or by a thread that has not fenced since its
 * block's latest atomic operation (G_UNACQUIRED: the counter that says the writers are done,
 * then the fence that orders the reads after it): the protocol the few-row kernel's last block
 * follows (skinny_kernels.cuh), which no GPU tool checks (compute-sanitizer's racecheck looks at
 * shared memory only). The blocks run one after another (here the last first: emu.h), so a
 * read is checked against the writes of the blocks run before it; a block that reads what a
 * block run later writes is not seen (no read of global memory is recorded).
 *
 * Each race found is counted (once an access, and again by its racing bytes) and the first few
 * are printed with the block, the two threads, the interval, and the code addresses of the two
 * accesses (relative to the executable, for `addr2line -f -i -e <test>`). emu_launch_smem ends the
 * run with exit 1 after a launch that raced, unless emu_race_fatal was set to 0 (the race check's
 * own test counts what it finds). Shared memory is the `__shared__` variables (emu.h puts them in
 * the section emu_smem, whose bounds the linker gives) and a launch's dynamic shared memory. */
#ifndef PW_TEST_CUDA_EMU_RACE_H
#define PW_TEST_CUDA_EMU_RACE_H

/* the hooks and what they call are not themselves instrumented (nor inlined into code that is) */
#define EMU_UNCHECKED __attribute__((no_sanitize_thread, unused))

/* p, or the end of the run when an allocation of the check's own failed */
static EMU_UNCHECKED void *emu_race_got(void *p, const char *what)
{
    if (!p) {
        fprintf(stderr, "emu race: out of memory for %s\n", what);
        exit(1);
    }
    return p;
}

enum {
    EMU_RAW,
    EMU_WAR,
    EMU_WAW,
    EMU_COPY,
    EMU_UNWAITED,
    EMU_UNINIT,
    EMU_PAST,
    EMU_G_WAW,
    EMU_G_PLAIN,
    EMU_G_UNFENCED,
    EMU_G_UNACQUIRED,
    EMU_WG_INFLIGHT,
    EMU_WG_PROXY,
    EMU_RACE_KINDS
};
static const char *const emu_race_names[EMU_RACE_KINDS] = {
    "read after write", "write after read", "write after write", "access to a copy in flight",
    "return with copies not waited for", "read of a byte the block has not written",
    "access past the dynamic shared memory", "two blocks writing one global byte",
    "plain load of another block's global write (read it through __ldcg)",
    "another block's global write read before that block fenced it",
    "another block's global write read with no fence since this block's atomic",
    "write to a byte a warpgroup product in flight reads",
    "warpgroup product's read of a byte its writer has not proxy-fenced"};

static unsigned long emu_races[EMU_RACE_KINDS];      /* racing accesses, by kind, since a reset */
static unsigned long emu_race_bytes[EMU_RACE_KINDS]; /* and their racing bytes */
static int emu_race_fatal = 1;                       /* exit after a launch that raced */
static int emu_race_shown;                           /* reports printed since a reset */

/* One shared byte's history: the interval (block serial << 32 | barrier generation) and thread
 * of its last write, with the writer's count of proxy fences then, the interval of its reads and
 * their reader (or EMU_MANY), while an asynchronous copy is in flight to it the block serial it
 * was issued in, and the warpgroup products in flight that read it (wg_reads, counted in block
 * wg_block). */
#define EMU_MANY 0xffffu
#define EMU_NOBODY 0x10000u /* a race with no other thread to name (a copy in flight, ...) */
typedef struct EmuShadow {
    uint64_t w_when, r_when;
    const void *w_pc, *r_pc;
    uint32_t copy_block, w_proxy, wg_block;
    uint16_t writer, reader, wg_reads;
} EmuShadow;

/* the bounds of section emu_smem, and where the program is mapped (the linker's symbols; weak:
 * a test with no __shared__ variable has no such section) */
extern char __start_emu_smem[] __attribute__((weak));
extern char __stop_emu_smem[] __attribute__((weak));
extern char __executable_start[] __attribute__((weak));

#define EMU_GUARD 4096 /* bytes each side of the dynamic shared memory that no access may touch */

static EmuShadow *emu_shadow_static, *emu_shadow_dyn;
static size_t emu_shadow_dyn_n;
static size_t emu_dyn_bytes;
static uint32_t emu_block_serial; /* 1 for the first block run, never 0 */

/* an asynchronous copy not yet retired, in its thread's list */
typedef struct EmuCopy {
    char *dst;
    int bytes;
    unsigned long group;
} EmuCopy;

typedef struct EmuCopies {
    EmuCopy *v;
    int n, cap;
    unsigned long committed; /* groups committed so far: the open group's number */
} EmuCopies;

static EmuCopies *emu_copies;
static unsigned int emu_copies_n;

static EMU_UNCHECKED uint64_t emu_interval(void)
{
    return (uint64_t)emu_block_serial << 32 | (uint32_t)emu_block_bar.gen;
}

/* The shadows of the n bytes at p, consecutive, where all n lie in one of the two shared
 * regions (static __shared__ and dynamic); NULL where they do not (an access across a region's
 * end is then looked up byte by byte). Most accesses are 2 to 16 bytes inside one region: one
 * lookup, not one a byte. */
static EMU_UNCHECKED EmuShadow *emu_shadow_span(const char *p, size_t n)
{
    if (__start_emu_smem && p >= __start_emu_smem && p + n <= __stop_emu_smem) {
        if (!emu_shadow_static)
            emu_shadow_static = emu_race_got(
                calloc((size_t)(__stop_emu_smem - __start_emu_smem), sizeof(EmuShadow)),
                "the shadow");
        return &emu_shadow_static[p - __start_emu_smem];
    }
    const char *d = (const char *)emu_dyn_smem;
    if (d && p >= d && p + n <= d + emu_dyn_bytes) return &emu_shadow_dyn[p - d];
    return NULL;
}

/* the shadow of byte p of shared memory, or NULL for any other address */
static EMU_UNCHECKED EmuShadow *emu_shadow_of(const char *p) { return emu_shadow_span(p, 1); }

/* Global memory, for one launch: the last write of each byte written in it (a page of them
 * for each 4 KiB touched, in a table by page address; freed when the launch ends), and what
 * orders one block's writes before another's reads: each block's count of __threadfence and of
 * atomic operations, and each thread's count of its block's atomics at its latest fence. */
typedef struct EmuGlobal {
    uint32_t block;  /* the writer's linear block index + 1 (0: not written in this launch) */
    uint32_t fences; /* the writer block's fences before the write */
    uint32_t when;   /* the writer block's barrier generation at the write */
    uint16_t writer; /* the writer thread */
} EmuGlobal;
#define EMU_PAGE 4096
typedef struct EmuPage {
    uintptr_t page; /* address / EMU_PAGE; 0: a free slot */
    EmuGlobal *e;
} EmuPage;
static EmuPage *emu_pages;
static size_t emu_pages_cap, emu_pages_n;
static uint32_t *emu_block_fences, *emu_block_atomics, *emu_thread_acq;
static uint32_t *emu_proxy; /* each thread's count of pw_wg_proxy_fence in the block */
static uint32_t emu_block_now;  /* the running block's linear index */
static int emu_in_thread;       /* a kernel thread runs (not the scheduler or the test) */
static const char *emu_stacks;  /* the threads' stacks: their local arrays are not global */
static size_t emu_stacks_bytes;
extern char _end[] __attribute__((weak)); /* the end of the program's data (ld) */

static EMU_UNCHECKED size_t emu_page_slot(uintptr_t page)
{
    return (size_t)((page * 0x9e3779b97f4a7c15ull) >> 20) & (emu_pages_cap - 1);
}

/* the entries of byte p's page; made when `make`, else NULL where nothing was written */
static EMU_UNCHECKED EmuGlobal *emu_page_of(const char *p, int make)
{
    uintptr_t page = (uintptr_t)p / EMU_PAGE;
    if (emu_pages_cap) {
        for (size_t i = emu_page_slot(page);; i = (i + 1) & (emu_pages_cap - 1)) {
            if (emu_pages[i].page == page) return emu_pages[i].e;
            if (!emu_pages[i].page) break;
        }
    }
    if (!make) return NULL;
    if (2 * (emu_pages_n + 1) > emu_pages_cap) { /* grow to keep the table half empty */
        size_t old = emu_pages_cap;
        EmuPage *was = emu_pages;
        emu_pages_cap = old ? 2 * old : 1024;
        emu_pages = emu_race_got(calloc(emu_pages_cap, sizeof(EmuPage)), "global memory's shadow");
        for (size_t j = 0; j < old; j++) {
            if (!was[j].page) continue;
            size_t i = emu_page_slot(was[j].page);
            while (emu_pages[i].page) i = (i + 1) & (emu_pages_cap - 1);
            emu_pages[i] = was[j];
        }
        free(was);
    }
    size_t i = emu_page_slot(page);
    while (emu_pages[i].page) i = (i + 1) & (emu_pages_cap - 1);
    emu_pages[i].page = page;
    emu_pages[i].e = emu_race_got(calloc(EMU_PAGE, sizeof(EmuGlobal)), "global memory's shadow");
    emu_pages_n++;
    return emu_pages[i].e;
}

/* whether p is global memory as far as the check goes: touched by a kernel thread, and neither
 * shared memory, nor a thread's stack, nor the program's own data (the emulator's boards) */
static EMU_UNCHECKED int emu_is_global(const char *p)
{
    if (!emu_in_thread) return 0;
    if (p >= emu_stacks && p < emu_stacks + emu_stacks_bytes) return 0;
    if (__executable_start && _end && p >= __executable_start && p < _end) return 0;
    return 1;
}

/* whether p is in the guard bytes around the dynamic shared memory */
static EMU_UNCHECKED int emu_in_guard(const char *p)
{
    const char *d = (const char *)emu_dyn_smem;
    return d && ((p >= d - EMU_GUARD && p < d) ||
                 (p >= d + emu_dyn_bytes && p < d + emu_dyn_bytes + EMU_GUARD));
}

/* print the first few races: a kind, a byte, the two threads and their code */
static EMU_UNCHECKED void emu_race_report(int kind, const char *p, unsigned int other,
                                          const void *pc, const void *other_pc)
{
    if (emu_race_shown++ >= 8) return;
    const char *d = (const char *)emu_dyn_smem;
    uintptr_t base = (uintptr_t)__executable_start;
    fprintf(stderr, "emu race: %s ", emu_race_names[kind]);
    if (__start_emu_smem && p >= __start_emu_smem && p < __stop_emu_smem)
        fprintf(stderr, "at byte %ld of __shared__", (long)(p - __start_emu_smem));
    else if (d && (emu_in_guard(p) || (p >= d && p < d + emu_dyn_bytes)))
        fprintf(stderr, "at byte %ld of dynamic shared memory", (long)(p - d));
    else
        fprintf(stderr, "at global address %p", (const void *)p);
    fprintf(stderr, ", block (%u,%u,%u), thread %u, interval %lu", blockIdx.x, blockIdx.y,
            blockIdx.z, emu_tid, emu_block_bar.gen);
    if (pc) fprintf(stderr, "; code 0x%lx", (unsigned long)((uintptr_t)pc - base));
    if (other < EMU_MANY) {
        fprintf(stderr, ", against thread %u", other);
        if (other_pc)
            fprintf(stderr, " at code 0x%lx", (unsigned long)((uintptr_t)other_pc - base));
    } else if (other == EMU_MANY) {
        fprintf(stderr, ", against several readers");
    }
    fprintf(stderr, "\n");
}

static EMU_UNCHECKED void emu_race_count(int kind, int *first, const char *p, unsigned int other,
                                         const void *pc, const void *other_pc)
{
    emu_race_bytes[kind]++;
    if (*first >= 0) return;
    *first = kind;
    emu_races[kind]++;
    emu_race_report(kind, p, other, pc, other_pc);
}

/* an access of n bytes of global memory at b by the running thread (`coherent`: a load through
 * L2, __ldcg): within its block the rules of shared memory; across blocks of the launch, a byte
 * another block wrote may be read only through L2, after that block fenced it and after a fence
 * of this thread since its block's latest atomic (the counter that says the writer is done) */
static EMU_UNCHECKED void emu_race_global(const char *b, size_t n, int write, int coherent,
                                          const void *pc)
{
    if (!emu_is_global(b)) return;
    const uint32_t me_block = emu_block_now + 1, gen = (uint32_t)emu_block_bar.gen;
    const uint32_t atomics = emu_block_atomics[emu_block_now];
    const uint16_t me = (uint16_t)emu_tid;
    EmuGlobal *page = NULL;
    uintptr_t pg = 0;
    int first = -1;
    for (size_t i = 0; i < n; i++) {
        const char *q = b + i;
        if (i == 0 || (uintptr_t)q / EMU_PAGE != pg) {
            pg = (uintptr_t)q / EMU_PAGE;
            page = emu_page_of(q, write);
        }
        if (!page) continue; /* a read of bytes no thread of the launch wrote */
        EmuGlobal *g = &page[(uintptr_t)q % EMU_PAGE];
        if (g->block && g->block != me_block) {
            if (write)
                emu_race_count(EMU_G_WAW, &first, q, EMU_NOBODY, pc, NULL);
            else if (!coherent)
                emu_race_count(EMU_G_PLAIN, &first, q, EMU_NOBODY, pc, NULL);
            else if (emu_block_fences[g->block - 1] <= g->fences)
                emu_race_count(EMU_G_UNFENCED, &first, q, EMU_NOBODY, pc, NULL);
            else if (!atomics || emu_thread_acq[me] != atomics)
                emu_race_count(EMU_G_UNACQUIRED, &first, q, EMU_NOBODY, pc, NULL);
        } else if (g->block == me_block && g->when == gen && g->writer != me) {
            emu_race_count(write ? EMU_WAW : EMU_RAW, &first, q, g->writer, pc, NULL);
        }
        if (write) *g = (EmuGlobal){me_block, emu_block_fences[emu_block_now], gen, me};
    }
}

/* __ldcg of n bytes at p: a load through L2 (emu.h's __ldcg) */
static EMU_UNCHECKED void emu_race_ldcg(const void *p, size_t n, const void *pc)
{
    emu_race_global((const char *)p, n, 0, 1, pc);
}

/* __threadfence by the running thread, and an atomic operation */
static EMU_UNCHECKED void emu_race_fence(void)
{
    if (!emu_in_thread) return;
    emu_block_fences[emu_block_now]++;
    emu_thread_acq[emu_tid] = emu_block_atomics[emu_block_now];
}

static EMU_UNCHECKED void emu_race_atomic(void)
{
    if (emu_in_thread) emu_block_atomics[emu_block_now]++;
}

/* an access of n bytes at p by the running thread, from code at pc */
static EMU_UNCHECKED void emu_race_access(const void *p, size_t n, int write, const void *pc)
{
    const char *b = (const char *)p;
    if (emu_in_guard(b) || emu_in_guard(b + n - 1)) {
        int first = -1;
        for (size_t i = 0; i < n; i++)
            if (emu_in_guard(b + i)) emu_race_count(EMU_PAST, &first, b + i, EMU_NOBODY, pc, NULL);
        return;
    }
    EmuShadow *span = emu_shadow_span(b, n);
    if (!span && !emu_shadow_of(b) && !emu_shadow_of(b + n - 1)) {
        emu_race_global(b, n, write, 0, pc);
        return;
    }
    uint64_t now = emu_interval();
    uint16_t me = (uint16_t)emu_tid;
    int first = -1;
    for (size_t i = 0; i < n; i++) {
        EmuShadow *s = span ? span + i : emu_shadow_of(b + i);
        if (!s) continue;
        int kind = -1;
        unsigned int other = EMU_NOBODY;
        const void *other_pc = NULL;
        if (s->copy_block == emu_block_serial) {
            kind = EMU_COPY;
        } else if (write && s->wg_block == emu_block_serial && s->wg_reads) {
            kind = EMU_WG_INFLIGHT;
        } else if (!write && (uint32_t)(s->w_when >> 32) != emu_block_serial) {
            kind = EMU_UNINIT;
        } else if (s->w_when == now && s->writer != me) {
            kind = write ? EMU_WAW : EMU_RAW;
            other = s->writer;
            other_pc = s->w_pc;
        } else if (write && s->r_when == now && s->reader != me) {
            kind = EMU_WAR;
            other = s->reader;
            other_pc = s->r_pc;
        }
        if (kind >= 0) emu_race_count(kind, &first, b + i, other, pc, other_pc);
        if (write) {
            s->w_when = now;
            s->writer = me;
            s->w_pc = pc;
            s->w_proxy = emu_proxy ? emu_proxy[me] : 0; /* none outside a launch */
        } else if (s->r_when != now) {
            s->r_when = now;
            s->reader = me;
            s->r_pc = pc;
        } else if (s->reader != me) {
            s->reader = EMU_MANY;
        }
    }
}

/* the instrumentation's entry points */
#define EMU_HOOK(n)                                                                                \
    EMU_UNCHECKED void __tsan_read##n(void *p)                                                    \
    {                                                                                              \
        emu_race_access(p, n, 0, __builtin_return_address(0));                                    \
    }                                                                                              \
    EMU_UNCHECKED void __tsan_write##n(void *p)                                                   \
    {                                                                                              \
        emu_race_access(p, n, 1, __builtin_return_address(0));                                    \
    }                                                                                              \
    EMU_UNCHECKED void __tsan_unaligned_read##n(void *p)                                          \
    {                                                                                              \
        emu_race_access(p, n, 0, __builtin_return_address(0));                                    \
    }                                                                                              \
    EMU_UNCHECKED void __tsan_unaligned_write##n(void *p)                                         \
    {                                                                                              \
        emu_race_access(p, n, 1, __builtin_return_address(0));                                    \
    }
EMU_HOOK(1)
EMU_HOOK(2)
EMU_HOOK(4)
EMU_HOOK(8)
EMU_HOOK(16)
EMU_UNCHECKED void __tsan_read_range(void *p, unsigned long n)
{
    if (n) emu_race_access(p, n, 0, __builtin_return_address(0));
}
EMU_UNCHECKED void __tsan_write_range(void *p, unsigned long n)
{
    if (n) emu_race_access(p, n, 1, __builtin_return_address(0));
}
EMU_UNCHECKED void __tsan_init(void) {}
EMU_UNCHECKED void __tsan_func_entry(void *pc) { (void)pc; }
EMU_UNCHECKED void __tsan_func_exit(void) {}

/* cp_async.cuh's copy of `bytes` to dst by the running thread: a write now, in flight until
 * retired */
static EMU_UNCHECKED void emu_race_copy(void *dst, int bytes, const void *pc)
{
    emu_race_access(dst, (size_t)bytes, 1, pc);
    EmuCopies *c = &emu_copies[emu_tid];
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->v = emu_race_got(realloc(c->v, sizeof(EmuCopy) * (size_t)c->cap),
                            "the copies in flight");
    }
    c->v[c->n++] = (EmuCopy){(char *)dst, bytes, c->committed};
    for (int i = 0; i < bytes; i++) {
        EmuShadow *s = emu_shadow_of((char *)dst + i);
        if (s) s->copy_block = emu_block_serial;
    }
}

static EMU_UNCHECKED void emu_race_commit(void) { emu_copies[emu_tid].committed++; }

/* retire the running thread's copies in groups committed before the newest `keep`: their bytes
 * land, written by this thread in the current interval (whoever touched them in flight has been
 * reported already) */
static EMU_UNCHECKED void emu_race_wait(unsigned long keep, const void *pc)
{
    EmuCopies *c = &emu_copies[emu_tid];
    int kept = 0;
    for (int i = 0; i < c->n; i++) {
        EmuCopy cp = c->v[i];
        if (cp.group + keep < c->committed) {
            for (int j = 0; j < cp.bytes; j++) {
                EmuShadow *s = emu_shadow_of(cp.dst + j);
                if (!s) continue;
                s->copy_block = 0;
                s->w_when = emu_interval();
                s->writer = (uint16_t)emu_tid;
                s->w_pc = pc;
                s->w_proxy = emu_proxy[emu_tid];
            }
        } else {
            c->v[kept++] = cp;
        }
    }
    c->n = kept;
}

/* pw_wg_proxy_fence by the running thread: its writes so far are the async proxy's */
static EMU_UNCHECKED void emu_race_proxy_fence(void) { emu_proxy[emu_tid]++; }

/* a read of the bfloat16 at p by a warpgroup product of the running thread, at its issue (at
 * +1) or at the wait that retires it (-1): a read of the thread's, the writer's proxy fence
 * checked at the issue, and the count of products in flight that read the bytes */
static EMU_UNCHECKED void emu_race_wg_read(const char *p, int at, const void *pc)
{
    emu_race_access(p, 2, 0, pc);
    int first = -1;
    for (int i = 0; i < 2; i++) {
        EmuShadow *s = emu_shadow_of(p + i);
        if (!s) continue;
        if (at > 0 && (uint32_t)(s->w_when >> 32) == emu_block_serial &&
            emu_proxy[s->writer] == s->w_proxy)
            emu_race_count(EMU_WG_PROXY, &first, p + i, s->writer, pc, s->w_pc);
        if (s->wg_block != emu_block_serial) {
            s->wg_block = emu_block_serial;
            s->wg_reads = 0;
        }
        s->wg_reads = (uint16_t)(s->wg_reads + at);
    }
}

/* a launch's dynamic shared memory, with EMU_GUARD bytes each side, and its release */
static EMU_UNCHECKED void *emu_race_dyn_alloc(size_t smem)
{
    /* 1024-byte aligned, as the warpgroup products' tiles need (emu_wgmma.h): EMU_GUARD is */
    char *p = aligned_alloc(EMU_GUARD, smem + 2 * EMU_GUARD);
    return p ? p + EMU_GUARD : NULL;
}

static EMU_UNCHECKED void emu_race_dyn_free(void *p)
{
    if (p) free((char *)p - EMU_GUARD);
}

/* a launch of n threads a block with `smem` bytes of dynamic shared memory, `blocks` blocks and
 * the threads' stacks at `stacks` begins */
static EMU_UNCHECKED void emu_race_launch(unsigned int n, size_t smem, unsigned long blocks,
                                          uintptr_t stacks, size_t stacks_bytes)
{
    emu_stacks = (const char *)stacks;
    emu_stacks_bytes = stacks_bytes;
    emu_block_fences = emu_race_got(calloc(blocks, sizeof(uint32_t)), "the blocks' fences");
    emu_block_atomics = emu_race_got(calloc(blocks, sizeof(uint32_t)), "the blocks' atomics");
    emu_thread_acq = emu_race_got(calloc(n, sizeof(uint32_t)), "the threads' fences");
    emu_proxy = emu_race_got(calloc(n, sizeof(uint32_t)), "the threads' proxy fences");
    if (smem > emu_shadow_dyn_n) {
        free(emu_shadow_dyn);
        emu_shadow_dyn = emu_race_got(calloc(smem, sizeof(EmuShadow)), "the shadow");
        emu_shadow_dyn_n = smem;
    }
    emu_dyn_bytes = smem;
    if (n > emu_copies_n) {
        emu_copies = emu_race_got(realloc(emu_copies, sizeof(EmuCopies) * n), "the copies");
        memset(emu_copies + emu_copies_n, 0, sizeof(EmuCopies) * (n - emu_copies_n));
        emu_copies_n = n;
    }
}

/* block `index` (linear) begins: a new serial, so that nothing an earlier block did in shared
 * memory counts; no copies, no fences */
static EMU_UNCHECKED void emu_race_block(unsigned int n, unsigned long index)
{
    emu_block_serial++;
    emu_block_now = (uint32_t)index;
    for (unsigned int t = 0; t < n; t++) {
        emu_copies[t].n = 0;
        emu_copies[t].committed = 0;
        emu_thread_acq[t] = 0;
        emu_proxy[t] = 0;
    }
}

/* the scheduler switches into a kernel thread (1) and back (0) */
static EMU_UNCHECKED void emu_race_in_thread(int in) { emu_in_thread = in; }

/* a launch ends: its global shadow goes */
static EMU_UNCHECKED void emu_race_launch_end(void)
{
    for (size_t i = 0; i < emu_pages_cap; i++) free(emu_pages[i].e);
    free(emu_pages);
    emu_pages = NULL;
    emu_pages_cap = emu_pages_n = 0;
    free(emu_block_fences);
    free(emu_block_atomics);
    free(emu_thread_acq);
    free(emu_proxy);
    emu_block_fences = emu_block_atomics = emu_thread_acq = emu_proxy = NULL;
    emu_stacks = NULL;
    emu_stacks_bytes = 0;
}

/* the running thread returns: what it left in flight */
static EMU_UNCHECKED void emu_race_thread_end(void)
{
    EmuCopies *c = &emu_copies[emu_tid];
    if (!c->n) return;
    emu_races[EMU_UNWAITED]++;
    for (int i = 0; i < c->n; i++) emu_race_bytes[EMU_UNWAITED] += (unsigned long)c->v[i].bytes;
    emu_race_report(EMU_UNWAITED, c->v[0].dst, EMU_NOBODY, NULL, NULL);
}

static EMU_UNCHECKED unsigned long emu_race_total(void)
{
    unsigned long t = 0;
    for (int k = 0; k < EMU_RACE_KINDS; k++) t += emu_races[k];
    return t;
}

static EMU_UNCHECKED void emu_race_reset(void)
{
    memset(emu_races, 0, sizeof emu_races);
    memset(emu_race_bytes, 0, sizeof emu_race_bytes);
    emu_race_shown = 0;
}

/* a launch ended: stop the run if it raced (unless told not to) */
static EMU_UNCHECKED void emu_race_end(void)
{
    unsigned long t = emu_race_total();
    if (!t || !emu_race_fatal) return;
    fprintf(stderr, "emu race: %lu race(s):", t);
    for (int k = 0; k < EMU_RACE_KINDS; k++)
        if (emu_races[k]) fprintf(stderr, " %lu %s;", emu_races[k], emu_race_names[k]);
    fprintf(stderr, "\n");
    exit(1);
}

#endif
