/* trace.c: the per-rank timeline (trace.path): spans recorded into a fixed-size array per rank,
 * then gathered by world rank 0 and written as one Chrome trace event file (docs/trace.md). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_file.h"
#include "pw_trace.h"

/* One span as it travels to rank 0: plain bytes between processes of one build, so names are
 * copied in (a pointer means nothing in another process). */
typedef struct TraceEv {
    double t0, t1;            /* pw_now() seconds, this rank's clock */
    int64_t step;
    uint64_t bytes;
    int32_t tid, cat, peer, dir; /* dir: 0 send, 1 receive, -1 not a message */
    int32_t role, peer_role;     /* messages: this side's role and the other side's */
    char name[24];
} TraceEv;

struct PwTrace {
    char *path;
    int64_t first, steps, step;
    double origin; /* pw_now() after the opening barrier: time 0 of the file */
    TraceEv *ev;
    int n;
    uint64_t dropped;
};

enum { TRACE_TAG = 32000 }; /* above every message tag (pw_msg_tag), below MPI's 32767 floor */

static const char *const cat_names[] = {"phase", "message", "collective"};

int pw_trace_check_path(const char *key, const char *path, PwErr *err)
{
    size_t n = strlen(path);
    if (!n || path[n - 1] == '/')
        return pw_errf(err, "%s: '%s': expected a file name (the trace file to write)", key, path);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return pw_errf(err, "%s: '%s' is a folder; expected a file name", key, path);
    char *dir = strdup(path);
    if (!dir) return pw_errf(err, "%s: out of memory", key);
    char *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    int rc = 0;
    if (stat(dir, &st) != 0)
        rc = pw_errf(err, "%s: '%s': folder '%s' does not exist (%s)", key, path, dir,
                     strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        rc = pw_errf(err, "%s: '%s': '%s' is not a folder", key, path, dir);
    else if (access(dir, W_OK) != 0)
        rc = pw_errf(err, "%s: '%s': folder '%s' is not writable", key, path, dir);
    free(dir);
    return rc;
}

void pw_trace_open(PwWorld *w, const char *path, int64_t first, int64_t steps)
{
    PwTrace *t = calloc(1, sizeof *t);
    if (!t || !(t->path = strdup(path)) ||
        !(t->ev = malloc(PW_TRACE_MAX_EVENTS * sizeof *t->ev)))
        pw_comm_fatal(__FILE__, __LINE__, "out of memory for the trace");
    t->first = first;
    t->steps = steps;
    t->step = first;
    PW_MPI_CHECK(MPI_Barrier(w->comm));
    t->origin = pw_now();
    w->trace = t;
}

void pw_trace_set_step(PwWorld *w, int64_t step)
{
    if (w->trace) w->trace->step = step;
}

static TraceEv *add(PwTrace *t, int64_t step)
{
    if (step < t->first || step >= t->first + t->steps) return NULL;
    if (t->n == PW_TRACE_MAX_EVENTS) {
        t->dropped++;
        return NULL;
    }
    TraceEv *e = &t->ev[t->n++];
    memset(e, 0, sizeof *e);
    e->step = step;
    e->dir = -1;
    e->peer = e->role = e->peer_role = -1;
    return e;
}

static void set_times(TraceEv *e, int tid, PwTraceCat cat, const char *name, double t0, double t1)
{
    e->t0 = t0;
    e->t1 = t1 > t0 ? t1 : t0;
    e->tid = tid;
    e->cat = (int32_t)cat;
    snprintf(e->name, sizeof e->name, "%s", name);
}

void pw_trace_span(PwWorld *w, int tid, PwTraceCat cat, const char *name, double t0, double t1)
{
    TraceEv *e = w->trace ? add(w->trace, w->trace->step) : NULL;
    if (e) set_times(e, tid, cat, name, t0, t1);
}

void pw_trace_message(PwWorld *w, const PwMsgHeader *h, int recv, int peer, double t0, double t1)
{
    TraceEv *e = w->trace ? add(w->trace, h->step) : NULL;
    if (!e) return;
    set_times(e, PW_TRACE_COMM, PW_TRACE_MESSAGE, pw_msg_kind_name((PwMsgKind)h->kind), t0, t1);
    e->bytes = h->nbytes;
    e->peer = peer;
    e->dir = recv ? 1 : 0;
    e->role = recv ? h->dst_role : h->src_role;
    e->peer_role = recv ? h->src_role : h->dst_role;
}

void pw_trace_collective(PwWorld *w, PwRole r, const char *name, uint64_t bytes, double t0,
                         double t1)
{
    TraceEv *e = w->trace ? add(w->trace, w->trace->step) : NULL;
    if (!e) return;
    set_times(e, (int)r, PW_TRACE_COLLECTIVE, name, t0, t1);
    e->bytes = bytes;
    e->role = (int32_t)r;
}

/* ---------------------------------------------------------------------------------------------
 * The file */

static json_t *meta(const char *what, int pid, int tid, json_t *args)
{
    return json_pack("{s:s, s:s, s:i, s:i, s:o}", "ph", "M", "name", what, "pid", pid, "tid", tid,
                     "args", args);
}

static void add_metadata(json_t *evs, const PwWorld *w, int rank)
{
    char name[32];
    snprintf(name, sizeof name, "rank %d", rank);
    json_array_append_new(evs, meta("process_name", rank, 0, json_pack("{s:s}", "name", name)));
    json_array_append_new(evs, meta("process_sort_index", rank, 0,
                                    json_pack("{s:i}", "sort_index", rank)));
    for (int r = 0; r < PW_ROLE_COUNT; r++)
        for (int i = 0; i < w->map.role[r].nranks; i++) {
            if (w->map.role[r].ranks[i] != rank) continue;
            json_array_append_new(evs, meta("thread_name", rank, r,
                                            json_pack("{s:s}", "name", pw_role_name((PwRole)r))));
            json_array_append_new(evs, meta("thread_sort_index", rank, r,
                                            json_pack("{s:i}", "sort_index", r)));
        }
    json_array_append_new(evs, meta("thread_name", rank, PW_TRACE_COMM,
                                    json_pack("{s:s}", "name", "comm")));
    json_array_append_new(evs, meta("thread_sort_index", rank, PW_TRACE_COMM,
                                    json_pack("{s:i}", "sort_index", PW_TRACE_COMM)));
}

/* A rank's spans, its clock moved to its own origin: ts and dur in microseconds. */
static void add_events(json_t *evs, int rank, const TraceEv *ev, int n, double origin)
{
    for (int i = 0; i < n; i++) {
        const TraceEv *e = &ev[i];
        json_t *args = json_pack("{s:I}", "step", (json_int_t)e->step);
        if (e->cat != PW_TRACE_PHASE)
            json_object_set_new(args, "bytes", json_integer((json_int_t)e->bytes));
        if (e->role >= 0)
            json_object_set_new(args, "role", json_string(pw_role_name((PwRole)e->role)));
        if (e->dir >= 0) {
            json_object_set_new(args, "kind", json_string(e->name));
            json_object_set_new(args, "peer", json_integer(e->peer));
            json_object_set_new(args, "peer_role",
                                json_string(pw_role_name((PwRole)e->peer_role)));
            json_object_set_new(args, "dir", json_string(e->dir ? "recv" : "send"));
        }
        json_array_append_new(evs, json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name",
                                             e->name, "cat", cat_names[e->cat], "ph", "X", "ts",
                                             (e->t0 - origin) * 1e6, "dur", (e->t1 - e->t0) * 1e6,
                                             "pid", rank, "tid", e->tid, "args", args));
    }
}

/* whole or not at all (pw_file.h): a reader never loads half a trace */
static int write_file(const char *path, json_t *root, PwErr *err)
{
    PwFileOut o;
    PwErr e;
    FILE *f = pw_file_out_open(&o, path, &e);
    if (f) {
        int bad = json_dumpf(root, f, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                          JSON_REAL_PRECISION(15)) != 0 || fputc('\n', f) == EOF;
        if (bad) pw_errf(&e, "%s: cannot write: %s", path, strerror(errno ? errno : EIO));
        if (!pw_file_out_close(&o, bad, &e)) return 0;
    }
    return pw_errf(err, "trace.path: %s", e.msg);
}

void pw_trace_free(PwWorld *w)
{
    if (!w->trace) return;
    free(w->trace->ev);
    free(w->trace->path);
    free(w->trace);
    w->trace = NULL;
}

int pw_trace_close(PwWorld *w, PwErr *err)
{
    PwTrace *t = w->trace;
    if (!t) return 0;
    /* Each rank sends its origin too: ranks line up by their own barrier exit, not by clocks
     * that need not agree across hosts. */
    double head[3] = {t->origin, (double)t->n, (double)t->dropped};
    if (w->rank != 0) {
        PW_MPI_CHECK(MPI_Send(head, 3, MPI_DOUBLE, 0, TRACE_TAG, w->comm));
        PW_MPI_CHECK(MPI_Send(t->ev, (int)(t->n * sizeof *t->ev), MPI_BYTE, 0, TRACE_TAG,
                              w->comm));
        pw_trace_free(w);
        return 0;
    }
    json_t *evs = json_array();
    uint64_t dropped = t->dropped;
    TraceEv *buf = malloc(PW_TRACE_MAX_EVENTS * sizeof *buf);
    if (!buf) pw_comm_fatal(__FILE__, __LINE__, "out of memory merging the trace");
    for (int rank = 0; rank < w->size; rank++) {
        add_metadata(evs, w, rank);
        if (rank == 0) {
            add_events(evs, 0, t->ev, t->n, t->origin);
            continue;
        }
        double h[3];
        PW_MPI_CHECK(MPI_Recv(h, 3, MPI_DOUBLE, rank, TRACE_TAG, w->comm, MPI_STATUS_IGNORE));
        int n = (int)h[1];
        PW_MPI_CHECK(MPI_Recv(buf, (int)(n * sizeof *buf), MPI_BYTE, rank, TRACE_TAG, w->comm,
                              MPI_STATUS_IGNORE));
        dropped += (uint64_t)h[2];
        add_events(evs, rank, buf, n, h[0]);
    }
    free(buf);
    json_t *root = json_pack(
        "{s:o, s:s, s:{s:I, s:I, s:i, s:I, s:s}}", "traceEvents", evs, "displayTimeUnit", "ms",
        "otherData", "first_step", (json_int_t)t->first, "steps", (json_int_t)t->steps, "ranks",
        w->size, "dropped_events", (json_int_t)dropped, "clock",
        "microseconds since each rank left the barrier that started the trace");
    int rc = root ? write_file(t->path, root, err) : pw_errf(err, "trace.path: out of memory");
    json_decref(root);
    pw_trace_free(w);
    return rc;
}
