/* emu_race.h: a shared-memory race check for kernels run under emu.h, built when the test is
 * compiled with -DEMU_RACE and the compiler's thread-sanitizer instrumentation
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
 * not seen). Atomic operations are not recorded. Global memory is not checked: the blocks of a
 * launch run one after another here.
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

enum { EMU_RAW, EMU_WAR, EMU_WAW, EMU_COPY, EMU_UNWAITED, EMU_UNINIT, EMU_PAST, EMU_RACE_KINDS };
static const char *const emu_race_names[EMU_RACE_KINDS] = {
    "read after write", "write after read", "write after write", "access to a copy in flight",
    "return with copies not waited for", "read of a byte the block has not written",
    "access past the dynamic shared memory"};

static unsigned long emu_races[EMU_RACE_KINDS];      /* racing accesses, by kind, since a reset */
static unsigned long emu_race_bytes[EMU_RACE_KINDS]; /* and their racing bytes */
static int emu_race_fatal = 1;                       /* exit after a launch that raced */
static int emu_race_shown;                           /* reports printed since a reset */

/* One shared byte's history: the interval (block serial << 32 | barrier generation) and thread
 * of its last write, the interval of its reads and their reader (or EMU_MANY), and, while an
 * asynchronous copy is in flight to it, the block serial it was issued in. */
#define EMU_MANY 0xffffu
typedef struct EmuShadow {
    uint64_t w_when, r_when;
    const void *w_pc, *r_pc;
    uint32_t copy_block;
    uint16_t writer, reader;
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

/* the shadow of byte p of shared memory, or NULL for any other address */
static EMU_UNCHECKED EmuShadow *emu_shadow_of(const char *p)
{
    if (__start_emu_smem && p >= __start_emu_smem && p < __stop_emu_smem) {
        if (!emu_shadow_static) {
            emu_shadow_static = calloc((size_t)(__stop_emu_smem - __start_emu_smem),
                                       sizeof(EmuShadow));
            if (!emu_shadow_static) {
                fprintf(stderr, "emu race: out of memory for the shadow\n");
                exit(1);
            }
        }
        return &emu_shadow_static[p - __start_emu_smem];
    }
    const char *d = (const char *)emu_dyn_smem;
    if (d && p >= d && p < d + emu_dyn_bytes) return &emu_shadow_dyn[p - d];
    return NULL;
}

/* print the first few races: a kind, a byte, the two threads and their code */
/* whether p is in the guard bytes around the dynamic shared memory */
static EMU_UNCHECKED int emu_in_guard(const char *p)
{
    const char *d = (const char *)emu_dyn_smem;
    return d && ((p >= d - EMU_GUARD && p < d) ||
                 (p >= d + emu_dyn_bytes && p < d + emu_dyn_bytes + EMU_GUARD));
}

static EMU_UNCHECKED void emu_race_report(int kind, const char *p, unsigned int other,
                                          const void *pc, const void *other_pc)
{
    if (emu_race_shown++ >= 8) return;
    const char *region = "__shared__";
    long off = (long)(p - __start_emu_smem);
    if (!(__start_emu_smem && p >= __start_emu_smem && p < __stop_emu_smem)) {
        region = "dynamic shared memory";
        off = (long)(p - (const char *)emu_dyn_smem);
    }
    uintptr_t base = (uintptr_t)__executable_start;
    fprintf(stderr, "emu race: %s at byte %ld of %s, block (%u,%u,%u), thread %u, interval %lu",
            emu_race_names[kind], off, region, blockIdx.x, blockIdx.y, blockIdx.z, emu_tid,
            emu_block_bar.gen);
    if (pc) fprintf(stderr, "; code 0x%lx", (unsigned long)((uintptr_t)pc - base));
    if (other != EMU_MANY && other_pc)
        fprintf(stderr, ", against thread %u at code 0x%lx", other,
                (unsigned long)((uintptr_t)other_pc - base));
    else if (other == EMU_MANY)
        fprintf(stderr, ", against several readers");
    fprintf(stderr, "\n");
}

/* an access of n bytes at p by the running thread, from code at pc */
static EMU_UNCHECKED void emu_race_access(const void *p, size_t n, int write, const void *pc)
{
    const char *b = (const char *)p;
    if (emu_in_guard(b) || emu_in_guard(b + n - 1)) {
        emu_races[EMU_PAST]++;
        for (size_t i = 0; i < n; i++)
            emu_race_bytes[EMU_PAST] += (unsigned long)emu_in_guard(b + i);
        emu_race_report(EMU_PAST, emu_in_guard(b) ? b : b + n - 1, EMU_MANY + 1u, pc, NULL);
        return;
    }
    if (!emu_shadow_of(b) && !emu_shadow_of(b + n - 1)) return;
    uint64_t now = emu_interval();
    uint16_t me = (uint16_t)emu_tid;
    int first = -1;
    for (size_t i = 0; i < n; i++) {
        EmuShadow *s = emu_shadow_of(b + i);
        if (!s) continue;
        int kind = -1;
        unsigned int other = EMU_MANY + 1u;
        const void *other_pc = NULL;
        if (s->copy_block == emu_block_serial) {
            kind = EMU_COPY;
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
        if (kind >= 0) {
            emu_race_bytes[kind]++;
            if (first < 0) {
                first = kind;
                emu_races[kind]++;
                emu_race_report(kind, b + i, other, pc, other_pc);
            }
        }
        if (write) {
            s->w_when = now;
            s->writer = me;
            s->w_pc = pc;
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
        c->v = realloc(c->v, sizeof(EmuCopy) * (size_t)c->cap);
        if (!c->v) {
            fprintf(stderr, "emu race: out of memory for the copies in flight\n");
            exit(1);
        }
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
            }
        } else {
            c->v[kept++] = cp;
        }
    }
    c->n = kept;
}

/* a launch's dynamic shared memory, with EMU_GUARD bytes each side, and its release */
static EMU_UNCHECKED void *emu_race_dyn_alloc(size_t smem)
{
    char *p = malloc(smem + 2 * EMU_GUARD);
    return p ? p + EMU_GUARD : NULL;
}

static EMU_UNCHECKED void emu_race_dyn_free(void *p)
{
    if (p) free((char *)p - EMU_GUARD);
}

/* a launch of n threads a block with `smem` bytes of dynamic shared memory begins */
static EMU_UNCHECKED void emu_race_launch(unsigned int n, size_t smem)
{
    if (smem > emu_shadow_dyn_n) {
        free(emu_shadow_dyn);
        emu_shadow_dyn = calloc(smem, sizeof(EmuShadow));
        emu_shadow_dyn_n = smem;
        if (!emu_shadow_dyn) {
            fprintf(stderr, "emu race: out of memory for the shadow\n");
            exit(1);
        }
    }
    emu_dyn_bytes = smem;
    if (n > emu_copies_n) {
        emu_copies = realloc(emu_copies, sizeof(EmuCopies) * n);
        if (!emu_copies) {
            fprintf(stderr, "emu race: out of memory\n");
            exit(1);
        }
        memset(emu_copies + emu_copies_n, 0, sizeof(EmuCopies) * (n - emu_copies_n));
        emu_copies_n = n;
    }
}

/* a block begins: a new serial, so that nothing an earlier block did counts; no copies */
static EMU_UNCHECKED void emu_race_block(unsigned int n)
{
    emu_block_serial++;
    for (unsigned int t = 0; t < n; t++) {
        emu_copies[t].n = 0;
        emu_copies[t].committed = 0;
    }
}

/* the running thread returns: what it left in flight */
static EMU_UNCHECKED void emu_race_thread_end(void)
{
    EmuCopies *c = &emu_copies[emu_tid];
    if (!c->n) return;
    emu_races[EMU_UNWAITED]++;
    for (int i = 0; i < c->n; i++) emu_race_bytes[EMU_UNWAITED] += (unsigned long)c->v[i].bytes;
    emu_race_report(EMU_UNWAITED, c->v[0].dst, EMU_MANY + 1u, NULL, NULL);
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
    fprintf(stderr, "emu race: %lu race(s) in shared memory:", t);
    for (int k = 0; k < EMU_RACE_KINDS; k++)
        if (emu_races[k]) fprintf(stderr, " %lu %s;", emu_races[k], emu_race_names[k]);
    fprintf(stderr, "\n");
    exit(1);
}

#endif
