/* profile.c: the profiled kernel table (pw_ops_profile.h): each entry of the wrapped table run
 * between two marks, summed by device, entry and shape; the report at exit. The entries' own
 * wrappers are in profile_entries.c. Written here because the GPU machines' runtimes do not all
 * let Nsight read their counters, and its replay takes minutes where the events take seconds. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pw_ops_profile.h"
#include "profile_internal.h"

enum { PENDING_MAX = 4096 }; /* spans a GPU table holds before it waits to read them */

typedef struct Pending {
    size_t row;
    void *from, *to;
} Pending;

/* A profiled table: the PwOps its users see first, then its marks. */
typedef struct Prof {
    PwOps ops;
    char key[32]; /* its lines' device: the table's name, "/" and its label if it has one */
    void **spare; /* marks read and free for reuse */
    size_t nspare, spare_cap;
    Pending *pend;
    size_t npend;
    struct Prof *next; /* the live tables, for pw_ops_profile_rows */
} Prof;

/* The lines of the process. One lock: the heartbeat's thread never calls a table, but a
 * program may run models from threads of its own. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static PwOpsProfileRow *rows;
static size_t nrows, rows_cap;
static size_t *index_of; /* open addressing: row + 1, 0 empty; 2 x rows_cap slots */
static Prof *live;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static size_t key_hash(const char *dev, const char *op, const char *shape)
{
    size_t h = 1469598103934665603ull;
    for (const char *s = dev; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ (size_t)(uintptr_t)op) * 1099511628211ull;
    for (const char *s = shape; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* the row of (dev, op, shape), made on first use; (size_t)-1 out of memory. Lock held. */
static size_t row_of(const char *dev, const char *op, const char *shape)
{
    if (nrows == rows_cap) {
        size_t cap = rows_cap ? 2 * rows_cap : 256;
        PwOpsProfileRow *r = realloc(rows, cap * sizeof *r);
        size_t *ix = calloc(2 * cap, sizeof *ix);
        if (!r || !ix) {
            free(ix);
            if (r) rows = r;
            return (size_t)-1;
        }
        rows = r;
        rows_cap = cap;
        free(index_of);
        index_of = ix;
        for (size_t i = 0; i < nrows; i++) {
            size_t s = key_hash(rows[i].device, rows[i].op, rows[i].shape) % (2 * cap);
            while (index_of[s]) s = (s + 1) % (2 * cap);
            index_of[s] = i + 1;
        }
    }
    size_t s = key_hash(dev, op, shape) % (2 * rows_cap);
    for (; index_of[s]; s = (s + 1) % (2 * rows_cap)) {
        PwOpsProfileRow *r = &rows[index_of[s] - 1];
        if (r->op == op && !strcmp(r->device, dev) && !strcmp(r->shape, shape))
            return index_of[s] - 1;
    }
    PwOpsProfileRow *r = &rows[nrows];
    memset(r, 0, sizeof *r);
    snprintf(r->device, sizeof r->device, "%s", dev);
    snprintf(r->shape, sizeof r->shape, "%s", shape);
    r->op = op;
    index_of[s] = ++nrows;
    return nrows - 1;
}

static void *take_mark(Prof *p)
{
    const PwOps *in = p->ops.inner;
    return p->nspare ? p->spare[--p->nspare] : in->mark_new(in);
}

static void give_mark(Prof *p, void *m)
{
    if (p->nspare == p->spare_cap) {
        size_t cap = p->spare_cap ? 2 * p->spare_cap : 2 * PENDING_MAX;
        void **s = realloc(p->spare, cap * sizeof *s);
        if (!s) {
            p->ops.inner->mark_free(p->ops.inner, m);
            return;
        }
        p->spare = s;
        p->spare_cap = cap;
    }
    p->spare[p->nspare++] = m;
}

/* Reads every pending span's time (waits until the last is reached). */
static void resolve(Prof *p)
{
    const PwOps *in = p->ops.inner;
    for (size_t i = 0; i < p->npend; i++) {
        Pending *s = &p->pend[i];
        double ms = in->mark_ms(in, s->from, s->to);
        pthread_mutex_lock(&lock);
        if (s->row < nrows) rows[s->row].ms += ms; /* a reset may have taken the row */
        pthread_mutex_unlock(&lock);
        give_mark(p, s->from);
        give_mark(p, s->to);
    }
    p->npend = 0;
}

void pw_prof_resolve(const PwOps *o) { resolve((Prof *)(uintptr_t)o); }

void pw_prof_begin(const PwOps *o, PwProfSpan *s)
{
    Prof *p = (Prof *)(uintptr_t)o;
    s->from = NULL;
    if (o->device != PW_DEVICE_CPU) {
        s->from = take_mark(p);
        o->inner->mark_record(o->inner, s->from);
    }
    s->host0 = now_ms();
}

void pw_prof_end(const PwOps *o, PwProfSpan *s, const char *op, double flops, double bytes,
                 const char *fmt, ...)
{
    Prof *p = (Prof *)(uintptr_t)o;
    void *to = NULL;
    if (s->from) {
        to = take_mark(p);
        o->inner->mark_record(o->inner, to);
    }
    double host = now_ms() - s->host0;
    char shape[72];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(shape, sizeof shape, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&lock);
    size_t r = row_of(p->key, op, shape);
    if (r != (size_t)-1) {
        rows[r].calls++;
        rows[r].host_ms += host;
        rows[r].flops += flops;
        rows[r].bytes += bytes;
        if (!s->from) rows[r].ms += host; /* the CPU's entries are done when they return */
    }
    pthread_mutex_unlock(&lock);
    if (!s->from) return;
    if (r == (size_t)-1) { /* out of host memory: the span is dropped */
        give_mark(p, s->from);
        give_mark(p, to);
        return;
    }
    p->pend[p->npend++] = (Pending){r, s->from, to};
    if (p->npend == PENDING_MAX) resolve(p);
}

static void write_at_exit(void);

const PwOps *pw_ops_profiled(const PwOps *inner, PwErr *err)
{
    Prof *p = calloc(1, sizeof *p);
    Pending *pend = calloc(PENDING_MAX, sizeof *pend);
    if (!p || !pend) {
        free(p);
        free(pend);
        return pw_errf(err, "%s: out of host memory for the profiled table", inner->name), NULL;
    }
    pw_prof_fill(&p->ops, inner);
    snprintf(p->key, sizeof p->key, "%s", inner->name);
    p->pend = pend;
    /* again after a GPU's runtime started: exit runs the last arranged first, before the
     * runtime's own teardown, while the events can still be read */
    if (inner->device != PW_DEVICE_CPU && pw_ops_profile_wanted()) atexit(write_at_exit);
    pthread_mutex_lock(&lock);
    p->next = live;
    live = p;
    pthread_mutex_unlock(&lock);
    return &p->ops;
}

void pw_ops_profile_label(const PwOps *o, const char *label)
{
    if (!o || !o->inner) return; /* not profiled */
    Prof *p = (Prof *)(uintptr_t)o;
    pthread_mutex_lock(&lock);
    snprintf(p->key, sizeof p->key, "%s/%.15s", o->name, label ? label : "");
    pthread_mutex_unlock(&lock);
}

void pw_prof_release(const PwOps *o)
{
    Prof *p = (Prof *)(uintptr_t)o;
    resolve(p);
    for (size_t i = 0; i < p->nspare; i++) o->inner->mark_free(o->inner, p->spare[i]);
    pthread_mutex_lock(&lock);
    for (Prof **q = &live; *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            break;
        }
    pthread_mutex_unlock(&lock);
    free(p->spare);
    free(p->pend);
    free(p);
}

static int by_time(const void *a, const void *b)
{
    const PwOpsProfileRow *x = a, *y = b;
    return x->ms < y->ms ? 1 : x->ms > y->ms ? -1 : strcmp(x->op, y->op);
}

PwOpsProfileRow *pw_ops_profile_rows(size_t *n)
{
    for (Prof *p = live; p; p = p->next) resolve(p);
    pthread_mutex_lock(&lock);
    PwOpsProfileRow *out = nrows ? malloc(nrows * sizeof *out) : NULL;
    *n = out ? nrows : 0;
    if (out) memcpy(out, rows, nrows * sizeof *out);
    pthread_mutex_unlock(&lock);
    if (out) qsort(out, *n, sizeof *out, by_time);
    return out;
}

void pw_ops_profile_reset(void)
{
    for (Prof *p = live; p; p = p->next) resolve(p);
    pthread_mutex_lock(&lock);
    nrows = 0;
    if (index_of) memset(index_of, 0, 2 * rows_cap * sizeof *index_of);
    pthread_mutex_unlock(&lock);
}

/* The lines of one table: "by entry" merges each entry's shapes first. */
static void write_lines(FILE *f, const PwOpsProfileRow *r, size_t n, double total, int shapes)
{
    fprintf(f, "%7s %10s %8s %11s %11s %8s %8s  %-16s %s\n", "share", "ms", "calls", "us/call",
            "host us", "TFLOP/s", "GB/s", "device", shapes ? "entry and shape" : "entry");
    for (size_t i = 0; i < n; i++) {
        char tf[16] = "", gb[16] = "";
        double t = r[i].ms * 1e-3, tfs = t > 0 ? r[i].flops / t / 1e12 : 0.0;
        double gbs = t > 0 ? r[i].bytes / t / 1e9 : 0.0;
        if (tfs > 0) snprintf(tf, sizeof tf, tfs < 10 ? "%.3f" : "%.1f", tfs);
        if (gbs > 0) snprintf(gb, sizeof gb, gbs < 10 ? "%.3f" : "%.1f", gbs);
        fprintf(f, "%6.2f%% %10.3f %8ld %11.1f %11.1f %8s %8s  %-16s %s%s%s\n",
                total > 0 ? 100.0 * r[i].ms / total : 0.0, r[i].ms, r[i].calls,
                1e3 * r[i].ms / (double)r[i].calls, 1e3 * r[i].host_ms / (double)r[i].calls, tf,
                gb, r[i].device, r[i].op, shapes ? " " : "", shapes ? r[i].shape : "");
    }
}

void pw_ops_profile_write(FILE *f)
{
    size_t n = 0;
    PwOpsProfileRow *r = pw_ops_profile_rows(&n);
    double total = 0.0, host = 0.0;
    long calls = 0;
    for (size_t i = 0; i < n; i++) total += r[i].ms, host += r[i].host_ms, calls += r[i].calls;
    fprintf(f, "ops profile, process %ld: %ld calls, %.3f ms of device time, %.3f ms of host "
               "time in the entries (a GPU's time is between events queued around each call, "
               "graphs off; the CPU's is the entry's own)\n",
            (long)getpid(), calls, total, host);
    /* by entry: the rows merged over their shapes, each (device, op) once */
    PwOpsProfileRow *m = n ? calloc(n, sizeof *m) : NULL;
    size_t nm = 0;
    for (size_t i = 0; m && i < n; i++) {
        size_t j = 0;
        while (j < nm && !(m[j].op == r[i].op && !strcmp(m[j].device, r[i].device))) j++;
        if (j == nm) {
            m[nm] = r[i];
            m[nm++].shape[0] = '\0';
            continue;
        }
        m[j].calls += r[i].calls, m[j].ms += r[i].ms, m[j].host_ms += r[i].host_ms;
        m[j].flops += r[i].flops, m[j].bytes += r[i].bytes;
    }
    if (m) {
        qsort(m, nm, sizeof *m, by_time);
        fprintf(f, "\nby entry\n");
        write_lines(f, m, nm, total, 0);
    }
    fprintf(f, "\nby entry and shape\n");
    write_lines(f, r, n, total, 1);
    free(m);
    free(r);
}

/* where the report goes at exit (PW_OPS_PROFILE_ENV's value) */
static char dest[4096];

static void write_at_exit(void)
{
    static int written;
    if (written++) return;
    if (!strcmp(dest, "-") || !strcmp(dest, "1") || !strcmp(dest, "stderr")) {
        pw_ops_profile_write(stderr);
        return;
    }
    char path[4200];
    size_t k = 0;
    for (const char *s = dest; *s && k + 24 < sizeof path; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            k += (size_t)snprintf(path + k, sizeof path - k, "%ld", (long)getpid());
            s++;
        } else {
            path[k++] = *s;
        }
    }
    path[k] = '\0';
    /* opened without blocking and kept only if it is a regular file: a FIFO at the name would
     * otherwise hold the process at its exit (ENXIO without a reader; refused with one) */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat st;
    FILE *f = NULL;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) f = fdopen(fd, "w");
    if (!f) {
        if (fd >= 0) close(fd);
        fprintf(stderr, "ppo_world: %s=%s: cannot write %s (%s); the profile goes to stderr\n",
                PW_OPS_PROFILE_ENV, dest, path,
                fd < 0 ? strerror(errno) : "not a regular file");
        f = stderr;
    }
    pw_ops_profile_write(f);
    if (f != stderr) fclose(f);
}

int pw_ops_profile_wanted(void)
{
    static int wanted = -1;
    if (wanted >= 0) return wanted;
    const char *v = getenv(PW_OPS_PROFILE_ENV);
    wanted = v && *v && strcmp(v, "0");
    if (wanted) {
        snprintf(dest, sizeof dest, "%s", v);
        atexit(write_at_exit);
    }
    return wanted;
}
