/* trace_check.c: assertions on a trace.path file (docs/trace.md) and on the progress line, for
 * tests/roles/test_trace.sh. Usage:
 *   trace_check file TRACE RANKS FIRST STEPS [METRICS]
 *       Chrome trace format; every span ends after it starts, carries its step, and the steps
 *       are exactly FIRST..FIRST+STEPS-1; spans of one rank never overlap unless nested; every
 *       message sent is received with the same bytes; every track is named. With METRICS (a
 *       metrics.jsonl), the bytes of the traced sends between ranks are comm/bytes_sent.
 *   trace_check kind TRACE STEP KIND         prints "N BYTES": sends of KIND at STEP between ranks
 *   trace_check progress LOG METRICS         the progress lines of LOG agree with METRICS */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...)                                                                            \
    do {                                                                                     \
        fprintf(stderr, "trace_check: " __VA_ARGS__);                                        \
        fputc('\n', stderr);                                                                 \
        exit(1);                                                                             \
    } while (0)

#define MAX_STEPS 10000
#define TOL_US 0.01 /* ts and dur are printed from doubles: their sum may round by far less */

typedef struct Span {
    double t0, t1;
    int pid, tid;
    long long step;
    const char *name, *cat;
    const json_t *args;
} Span;

static json_t *load(const char *path)
{
    json_error_t e;
    json_t *root = json_load_file(path, 0, &e);
    if (!root) FAIL("%s:%d: not JSON: %s", path, e.line, e.text);
    return root;
}

static const char *str(const json_t *o, const char *key, int i)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (!s) FAIL("event %d: '%s' is not a string", i, key);
    return s;
}

static long long integer(const json_t *o, const char *key, int i)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) FAIL("event %d: '%s' is not an integer", i, key);
    return json_integer_value(v);
}

static double number(const json_t *o, const char *key, int i)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        FAIL("event %d: '%s' is not a finite number", i, key);
    return json_number_value(v);
}

static int in_list(const char *s, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(s, list[i])) return 1;
    return 0;
}

/* Start ascending, then the longer first: a parent comes before what it holds. */
static int by_start(const void *a, const void *b)
{
    const Span *x = a, *y = b;
    if (x->pid != y->pid) return x->pid - y->pid;
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    return (y->t1 > x->t1) - (y->t1 < x->t1);
}

/* Spans of one rank: each one ends before the next starts, or holds it entirely. */
static void check_nesting(Span *s, int n)
{
    qsort(s, (size_t)n, sizeof *s, by_start);
    Span **stack = malloc((size_t)(n + 1) * sizeof *stack);
    int depth = 0;
    for (int i = 0; i < n; i++) {
        if (i && s[i].pid != s[i - 1].pid) depth = 0;
        while (depth && stack[depth - 1]->t1 <= s[i].t0 + TOL_US) depth--;
        if (depth && s[i].t1 > stack[depth - 1]->t1 + TOL_US)
            FAIL("rank %d: '%s' [%.3f, %.3f] us overlaps '%s' [%.3f, %.3f] us without nesting",
                 s[i].pid, s[i].name, s[i].t0, s[i].t1, stack[depth - 1]->name,
                 stack[depth - 1]->t0, stack[depth - 1]->t1);
        stack[depth++] = &s[i];
    }
    free(stack);
}

/* A message as both sides see it: (from, to, kind, step, bytes). */
typedef struct Msg {
    long long from, to, step, bytes;
    const char *kind;
} Msg;

static int by_msg(const void *a, const void *b)
{
    const Msg *x = a, *y = b;
    if (x->from != y->from) return x->from < y->from ? -1 : 1;
    if (x->to != y->to) return x->to < y->to ? -1 : 1;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    int k = strcmp(x->kind, y->kind);
    if (k) return k;
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

static void check_messages(const Span *s, int n)
{
    Msg *snd = calloc((size_t)n + 1, sizeof *snd), *rcv = calloc((size_t)n + 1, sizeof *rcv);
    int ns = 0, nr = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(s[i].cat, "message")) continue;
        int recv = !strcmp(str(s[i].args, "dir", i), "recv");
        long long peer = integer(s[i].args, "peer", i);
        Msg m = {recv ? peer : s[i].pid, recv ? s[i].pid : peer, s[i].step,
                 integer(s[i].args, "bytes", i), str(s[i].args, "kind", i)};
        if (strcmp(m.kind, s[i].name)) FAIL("message '%s' has kind '%s'", s[i].name, m.kind);
        if (recv) rcv[nr++] = m;
        else snd[ns++] = m;
    }
    qsort(snd, (size_t)ns, sizeof *snd, by_msg);
    qsort(rcv, (size_t)nr, sizeof *rcv, by_msg);
    for (int i = 0; i < ns || i < nr; i++) {
        const Msg *a = i < ns ? &snd[i] : NULL, *b = i < nr ? &rcv[i] : NULL;
        if (!a || !b || by_msg(a, b)) { /* the lesser of the two has no partner */
            int sent = a && (!b || by_msg(a, b) < 0);
            const Msg *m = sent ? a : b;
            FAIL("message '%s' step %lld from rank %lld to rank %lld (%lld bytes) was %s", m->kind,
                 m->step, m->from, m->to, m->bytes,
                 sent ? "sent, and never received with those bytes"
                      : "received, and never sent with those bytes");
        }
    }
    printf("%d messages, each sent and received with the same bytes\n", ns);
    free(snd);
    free(rcv);
}

/* Whether span i lies in its rank's "step" span of its step: the metrics count what a step
 * does, not the evaluation or checkpoint between steps. */
static int in_step(const Span *s, int n, int i)
{
    for (int j = 0; j < n; j++)
        if (s[j].pid == s[i].pid && s[j].step == s[i].step && !strcmp(s[j].name, "step") &&
            !strcmp(s[j].cat, "phase"))
            return s[i].t0 >= s[j].t0 - TOL_US && s[i].t1 <= s[j].t1 + TOL_US;
    return 0;
}

/* Sends between ranks (reports aside, as comm/bytes_sent counts them) of one step. */
static long long remote_bytes(const Span *s, int n, long long step, const char *kind, int *count)
{
    long long b = 0;
    *count = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(s[i].cat, "message") || s[i].step != step || !in_step(s, n, i)) continue;
        const json_t *a = s[i].args;
        if (strcmp(str(a, "dir", i), "send") || integer(a, "peer", i) == s[i].pid) continue;
        if (kind ? strcmp(s[i].name, kind) : !strcmp(s[i].name, "report")) continue;
        b += integer(a, "bytes", i);
        (*count)++;
    }
    return b;
}

/* Bytes of one step's collectives, summed over ranks (comm/bytes_collective). */
static long long collective_bytes(const Span *s, int n, long long step, int *count)
{
    long long b = 0;
    *count = 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(s[i].cat, "collective") && s[i].step == step && in_step(s, n, i)) {
            b += integer(s[i].args, "bytes", i);
            (*count)++;
        }
    return b;
}

/* Every rank of a role calls the same collectives: per (step, role, name, bytes), each rank
 * that has the role's track has as many as the others. */
static int by_coll(const void *a, const void *b)
{
    const Msg *x = a, *y = b;
    int k = strcmp(x->kind, y->kind);
    if (k) return k;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
    return (x->to > y->to) - (x->to < y->to); /* to: the role's track */
}

static void check_collectives(const Span *s, int n, const char *named, int ranks)
{
    Msg *c = calloc((size_t)n + 1, sizeof *c);
    int nc = 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(s[i].cat, "collective"))
            c[nc++] = (Msg){s[i].pid, s[i].tid, s[i].step, integer(s[i].args, "bytes", i),
                            s[i].name};
    qsort(c, (size_t)nc, sizeof *c, by_coll);
    int *per = calloc((size_t)ranks, sizeof *per);
    for (int i = 0; i < nc;) {
        int j = i;
        memset(per, 0, (size_t)ranks * sizeof *per);
        while (j < nc && !by_coll(&c[i], &c[j])) per[c[j++].from]++;
        for (int p = 0; p < ranks; p++)
            if (named[p * 8 + c[i].to] && per[p] != per[c[i].from])
                FAIL("collective '%s' of track %lld at step %lld (%lld bytes): rank %d called it "
                     "%d times, rank %lld %d", c[i].kind, c[i].to, c[i].step, c[i].bytes, p,
                     per[p], c[i].from, per[c[i].from]);
        i = j;
    }
    printf("%d collective calls, the same on every rank of their role\n", nc);
    free(per);
    free(c);
}

/* The spans of a trace file after the checks of the format; *ranks from otherData. */
static Span *read_spans(json_t *root, int *nout, int *ranks, char **named_out)
{
    if (!json_is_object(root)) FAIL("the file is not a JSON object");
    json_t *evs = json_object_get(root, "traceEvents");
    const char *unit = json_string_value(json_object_get(root, "displayTimeUnit"));
    json_t *other = json_object_get(root, "otherData");
    if (!json_is_array(evs) || !unit || strcmp(unit, "ms") || !json_is_object(other))
        FAIL("expected {\"traceEvents\": [...], \"displayTimeUnit\": \"ms\", "
             "\"otherData\": {...}}");
    *ranks = (int)integer(other, "ranks", -1);
    if (integer(other, "dropped_events", -1) != 0) FAIL("events were dropped");
    size_t n = json_array_size(evs);
    Span *s = calloc(n + 1, sizeof *s);
    int ns = 0;
    /* named[pid * 8 + tid]: 1 for a thread_name event; pnamed[pid]: a process_name */
    char *named = calloc((size_t)*ranks * 8, 1), *pnamed = calloc((size_t)*ranks, 1);
    static const char *const cats[] = {"phase", "message", "collective", NULL};
    static const char *const phases[] = {"generate", "evaluate", "advantages", "train",
                                         "weights",  "idle",     "step",       "eval",
                                         NULL};
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(evs, i);
        const char *ph = str(e, "ph", (int)i);
        long long pid = integer(e, "pid", (int)i), tid = integer(e, "tid", (int)i);
        if (pid < 0 || pid >= *ranks || tid < 0 || tid >= 8)
            FAIL("event %zu: pid %lld tid %lld out of range", i, pid, tid);
        if (!strcmp(ph, "M")) {
            const char *what = str(e, "name", (int)i);
            json_t *args = json_object_get(e, "args");
            const char *name = json_string_value(json_object_get(args, "name"));
            if (!strcmp(what, "thread_name") && name) named[pid * 8 + tid] = 1;
            if (!strcmp(what, "process_name") && name) {
                char want[32];
                snprintf(want, sizeof want, "rank %lld", pid);
                if (strcmp(name, want)) FAIL("process %lld is named '%s'", pid, name);
                pnamed[pid] = 1;
            }
            continue;
        }
        if (strcmp(ph, "X")) FAIL("event %zu: ph '%s', expected X or M", i, ph);
        Span *x = &s[ns++];
        x->pid = (int)pid;
        x->tid = (int)tid;
        x->name = str(e, "name", (int)i);
        x->cat = str(e, "cat", (int)i);
        x->args = json_object_get(e, "args");
        if (!json_is_object(x->args)) FAIL("event %zu: no args", i);
        x->step = integer(x->args, "step", (int)i);
        double ts = number(e, "ts", (int)i), dur = number(e, "dur", (int)i);
        if (ts < 0 || dur < 0)
            FAIL("event %zu ('%s'): ts %g dur %g: a span ends before it starts", i, x->name, ts,
                 dur);
        x->t0 = ts;
        x->t1 = ts + dur;
        if (!in_list(x->cat, cats)) FAIL("event %zu: cat '%s'", i, x->cat);
        if (!strcmp(x->cat, "phase") && !in_list(x->name, phases))
            FAIL("event %zu: phase '%s' is not one of the metrics' phases", i, x->name);
    }
    for (int i = 0; i < ns; i++)
        if (!named[s[i].pid * 8 + s[i].tid] || !pnamed[s[i].pid])
            FAIL("rank %d track %d has spans but no name", s[i].pid, s[i].tid);
    free(pnamed);
    if (named_out) *named_out = named;
    else free(named);
    *nout = ns;
    return s;
}

static json_t *metrics_line(const char *path, long long step)
{
    FILE *f = fopen(path, "r");
    if (!f) FAIL("cannot open %s", path);
    char *line = NULL;
    size_t cap = 0;
    json_t *found = NULL;
    while (!found && getline(&line, &cap, f) >= 0) {
        json_t *o = json_loads(line, 0, NULL);
        if (o && json_integer_value(json_object_get(o, "step")) == step) found = o;
        else json_decref(o);
    }
    free(line);
    fclose(f);
    if (!found) FAIL("%s: no line for step %lld", path, step);
    return found;
}

static int check_file(int argc, char **argv)
{
    json_t *root = load(argv[2]);
    int want_ranks = atoi(argv[3]), n, ranks;
    long long first = atoll(argv[4]), steps = atoll(argv[5]);
    char *named;
    Span *s = read_spans(root, &n, &ranks, &named);
    if (ranks != want_ranks) FAIL("otherData.ranks %d, expected %d", ranks, want_ranks);
    char seen[MAX_STEPS] = {0};
    int pids[64] = {0};
    for (int i = 0; i < n; i++) {
        if (s[i].step < first || s[i].step >= first + steps)
            FAIL("'%s' of step %lld is outside the traced steps %lld..%lld", s[i].name, s[i].step,
                 first, first + steps - 1);
        seen[s[i].step - first] = 1;
        if (s[i].pid < 64) pids[s[i].pid] = 1;
    }
    for (long long k = 0; k < steps; k++)
        if (!seen[k]) FAIL("no span of step %lld", first + k);
    for (int p = 0; p < ranks && p < 64; p++)
        if (!pids[p]) FAIL("rank %d has no span", p);
    check_messages(s, n);
    check_collectives(s, n, named, ranks);
    free(named);
    if (argc == 7)
        for (long long k = first; k < first + steps; k++) {
            int c;
            long long b = remote_bytes(s, n, k, NULL, &c);
            json_t *m = metrics_line(argv[6], k);
            double sent = json_number_value(json_object_get(m, "comm/bytes_sent"));
            if (sent != (double)b)
                FAIL("step %lld: comm/bytes_sent %.17g, the trace's sends between ranks %lld", k,
                     sent, b);
            printf("step %lld: comm/bytes_sent %lld = the trace's %d sends between ranks\n", k, b,
                   c);
            b = collective_bytes(s, n, k, &c);
            double coll = json_number_value(json_object_get(m, "comm/bytes_collective"));
            if (coll != (double)b)
                FAIL("step %lld: comm/bytes_collective %.17g, the trace's collectives %lld", k,
                     coll, b);
            printf("step %lld: comm/bytes_collective %lld = the trace's %d collective calls\n", k,
                   b, c);
            json_decref(m);
        }
    check_nesting(s, n);
    printf("%d spans of %d ranks, steps %lld..%lld, none overlapping unless nested\n", n, ranks,
           first, first + steps - 1);
    free(s);
    json_decref(root);
    return 0;
}

/* "[ppo  3/10] 1.25 steps/s  ETA 0:06  score -0.5230  kl 0.0412  [0:02]" */
static int check_progress(const char *log, const char *metrics)
{
    FILE *f = fopen(log, "r");
    if (!f) FAIL("cannot open %s", log);
    char *line = NULL;
    size_t cap = 0;
    int lines = 0;
    long long last = 0, total = 0;
    while (getline(&line, &cap, f) >= 0) {
        if (strncmp(line, "[ppo ", 5)) continue;
        long long k, t;
        double rate, score, kl;
        char eta[32], since[32];
        if (sscanf(line, "[ppo %lld/%lld] %lf steps/s ETA %31s score %lf kl %lf [%31[^]]]", &k,
                   &t, &rate, eta, &score, &kl, since) != 7)
            FAIL("not a progress line: %s", line);
        if (k <= last || k > t || !(rate > 0))
            FAIL("step %lld of %lld after %lld, %g steps/s", k, t, last, rate);
        json_t *m = metrics_line(metrics, k - 1);
        double ms = json_number_value(json_object_get(m, "objective/scores"));
        double mk = json_number_value(json_object_get(m, "objective/kl"));
        if (fabs(ms - score) > 5.01e-5 || fabs(mk - kl) > 5.01e-5)
            FAIL("step %lld: score %g kl %g, metrics.jsonl has %g and %g", k, score, kl, ms, mk);
        json_decref(m);
        last = k;
        total = t;
        lines++;
    }
    free(line);
    fclose(f);
    if (!lines || last != total)
        FAIL("%d progress lines, the last for step %lld of %lld", lines, last, total);
    printf("%d progress lines, score and kl as in metrics.jsonl\n", lines);
    return 0;
}

int main(int argc, char **argv)
{
    if ((argc == 6 || argc == 7) && !strcmp(argv[1], "file")) return check_file(argc, argv);
    if (argc == 5 && !strcmp(argv[1], "kind")) {
        json_t *root = load(argv[2]);
        int n, ranks, c;
        Span *s = read_spans(root, &n, &ranks, NULL);
        long long b = remote_bytes(s, n, atoll(argv[3]), argv[4], &c);
        printf("%d %lld\n", c, b);
        free(s);
        json_decref(root);
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "progress")) return check_progress(argv[2], argv[3]);
    fprintf(stderr, "usage: trace_check file TRACE RANKS FIRST STEPS [METRICS] | kind TRACE STEP "
                    "KIND | progress LOG METRICS\n");
    return 2;
}
