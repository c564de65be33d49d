/* report_placements.c: `ppo_world report placements`: the placement sweep's table (steps/s, busy
 * and waiting seconds per role, bytes per step, peak memory) and its plots (throughput, Gantt). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_file.h"
#include "pw_metrics.h"
#include "pw_plan.h"
#include "pw_report.h"
#include "pw_role.h"
#include "report_internal.h"

typedef struct Run {
    const char *name, *dir;
    int steps;               /* metrics lines averaged */
    double step_s;           /* mean time/step */
    double busy[PW_ROLE_COUNT], wait[PW_ROLE_COUNT]; /* NaN: the role is absent */
    double bytes;            /* mean comm/bytes_sent, NaN when not logged */
    double peak[PW_ROLE_COUNT]; /* max memory/<role>/peak_mb, NaN when not logged */
} Run;

/* The mean of key over rows first.., NaN when no row has it; -1 when a value is not a number. */
static int mean_of(const Rows *rows, int first, const char *key, int take_max, double *out,
                   const char *path, PwErr *err)
{
    double sum = 0, best = -INFINITY;
    int n = 0;
    for (int i = first; i < rows->n; i++) {
        double v;
        int got = pw_metric_get(json_object_get(rows->row[i], key), &v);
        if (got < 0) return pw_errf(err, "%s:%d: %s is not a number", path, i + 1, key);
        if (got == 0) continue;
        sum += v;
        if (v > best) best = v;
        n++;
    }
    *out = n ? (take_max ? best : sum / n) : NAN;
    return 0;
}

static int read_run(Run *r, PwErr *err)
{
    char path[4096];
    pw_report_join(path, sizeof path, r->dir, "metrics.jsonl");
    Rows rows;
    if (pw_report_read_jsonl(path, &rows, err)) return -1;
    /* step 0 pays for first touches (and async samples two batches there), as in the planner */
    int first = rows.n > 1 ? 1 : 0, rc = 0;
    r->steps = rows.n - first;
    if (r->steps < 1) rc = pw_errf(err, "%s: no step", path);
    if (!rc) rc = mean_of(&rows, first, "time/step", 0, &r->step_s, path, err);
    if (!rc && !(r->step_s > 0)) rc = pw_errf(err, "%s: no positive time/step", path);
    if (!rc) rc = mean_of(&rows, first, "comm/bytes_sent", 0, &r->bytes, path, err);
    for (int role = 0; role < PW_ROLE_COUNT && !rc; role++) {
        char key[80];
        const char *rn = pw_role_name((PwRole)role);
        r->busy[role] = NAN;
        for (int ph = 0; ph < PW_PLAN_PHASES && !rc; ph++) {
            double v;
            snprintf(key, sizeof key, "time/%s/%s", rn, pw_plan_phase_names[ph]);
            rc = mean_of(&rows, first, key, 0, &v, path, err);
            if (!rc && !isnan(v)) r->busy[role] = (isnan(r->busy[role]) ? 0 : r->busy[role]) + v;
        }
        snprintf(key, sizeof key, "time/%s/idle", rn);
        if (!rc) rc = mean_of(&rows, first, key, 0, &r->wait[role], path, err);
        snprintf(key, sizeof key, "memory/%s/peak_mb", rn);
        if (!rc) rc = mean_of(&rows, first, key, 1, &r->peak[role], path, err);
    }
    pw_report_rows_free(&rows);
    return rc;
}

/* A value of the table: "-" for what the run did not log or a role it did not have. */
static void cell(FILE *f, const char *sep, const char *fmt, double v)
{
    fputs(sep, f);
    if (isnan(v))
        fputs("-", f);
    else
        fprintf(f, fmt, v);
}

static void write_table(FILE *f, const Run *runs, int n, int md)
{
    const char *sep = md ? " | " : "\t";
    fprintf(f, "%splacement%ssteps%ssteps_per_s%sstep_s", md ? "| " : "", sep, sep, sep);
    for (int role = 0; role < PW_ROLE_COUNT; role++)
        fprintf(f, "%s%s_busy_s%s%s_wait_s", sep, pw_role_name((PwRole)role), sep,
                pw_role_name((PwRole)role));
    fprintf(f, "%sbytes_per_step", sep);
    for (int role = 0; role < PW_ROLE_COUNT; role++)
        fprintf(f, "%s%s_peak_mb", sep, pw_role_name((PwRole)role));
    fprintf(f, "%s\n", md ? " |" : "");
    if (md) {
        fputs("|", f);
        for (int c = 0; c < 4 + 2 * PW_ROLE_COUNT + 1 + PW_ROLE_COUNT; c++) fputs(" --- |", f);
        fputs("\n", f);
    }
    for (int i = 0; i < n; i++) {
        const Run *r = &runs[i];
        fprintf(f, "%s%s%s%d", md ? "| " : "", r->name, sep, r->steps);
        cell(f, sep, "%.4f", 1 / r->step_s);
        cell(f, sep, "%.4f", r->step_s);
        for (int role = 0; role < PW_ROLE_COUNT; role++) {
            cell(f, sep, "%.4f", r->busy[role]);
            cell(f, sep, "%.4f", isnan(r->busy[role]) ? NAN : r->wait[role]);
        }
        cell(f, sep, "%.0f", r->bytes);
        for (int role = 0; role < PW_ROLE_COUNT; role++) cell(f, sep, "%.1f", r->peak[role]);
        fprintf(f, "%s\n", md ? " |" : "");
    }
}

static int write_file(const char *dir, const char *name, const Run *runs, int n, int md,
                      PwErr *err)
{
    char path[4096];
    pw_report_join(path, sizeof path, dir, name);
    PwFileOut o;
    FILE *f = pw_file_out_open(&o, path, err);
    if (!f) return -1;
    write_table(f, runs, n, md);
    return pw_file_out_close(&o, 0, err); /* a failed write is the stream's error */
}

/* ---- Gantt of one step from a run's Chrome trace (trace.json) ----------------------------- */

/* The step drawn: step 1 when traced (step 0 pays for first touches), else the first traced. */
static long pick_step(json_t *events)
{
    long best = -1;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        json_t *st = json_object_get(json_object_get(e, "args"), "step");
        if (!json_is_integer(st) || strcmp(json_string_value(json_object_get(e, "ph")) ?: "", "X"))
            continue;
        long s = (long)json_integer_value(st);
        if (s == 1) return 1;
        if (best < 0 || s < best) best = s;
    }
    return best;
}

/* One colour per phase, the same in every Gantt view (other names take gnuplot's line types). */
static const char *const phase_colours[][2] = {
    {"generate", "#1f77b4"}, {"evaluate", "#ff7f0e"}, {"advantages", "#9467bd"},
    {"train", "#2ca02c"},    {"weights", "#17becf"},  {"idle", "#c7c7c7"},
    {"eval", "#8c564b"},     {"allreduce", "#d62728"}, {"broadcast", "#e377c2"},
    {"barrier", "#7f7f7f"},
};

int pw_report_gantt(const char *out, const char *name, const char *dir, PwErr *err)
{
    char path[4096];
    pw_report_join(path, sizeof path, dir, "trace.json");
    if (pw_report_missing(path)) return 1;
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) return pw_errf(err, "%s:%d: not JSON (%s)", path, je.line, je.text);
    json_t *events = json_object_get(root, "traceEvents");
    if (!json_is_array(events)) {
        json_decref(root);
        return pw_errf(err, "%s: no traceEvents array", path);
    }
    long step = pick_step(events);
    /* tracks: one per (pid, tid), named "rank P role" from the thread_name metadata */
    enum { MAXT = 256, MAXN = 64 };
    long tp[MAXT], tt[MAXT];
    char tname[MAXT][64];
    int nt = 0;
    char names[MAXN][64];
    int nn = 0;
    double t0 = INFINITY;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        json_t *st = json_object_get(json_object_get(e, "args"), "step");
        if (ph && !strcmp(ph, "X") && json_is_integer(st) && json_integer_value(st) == step) {
            double ts = json_number_value(json_object_get(e, "ts"));
            if (ts < t0) t0 = ts;
        }
    }
    /* What a step's Gantt shows: the phases of each role and the collectives (on the roles'
     * tracks) and the waits (`idle`, on the comm track). Left out: the `step` span, which covers
     * its whole track, and the messages, whose receives share the interval of the wait they
     * completed in (docs/trace.md): drawn, they hide the waits and add nothing to read. */
    typedef struct { double a, b; int k, c; } Bar;
    size_t nbar = 0, capbar = 0;
    Bar *bars = NULL;
    int bad = 0;
    json_array_foreach(events, i, e)
    {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        json_t *args = json_object_get(e, "args");
        json_t *st = json_object_get(args, "step");
        long pid = (long)json_integer_value(json_object_get(e, "pid"));
        long tid = (long)json_integer_value(json_object_get(e, "tid"));
        const char *ename = json_string_value(json_object_get(e, "name"));
        int meta_thread = ph && !strcmp(ph, "M") && ename && !strcmp(ename, "thread_name");
        if (!ph || (!meta_thread && strcmp(ph, "X"))) continue; /* process_name etc.: no track */
        int k;
        for (k = 0; k < nt && !(tp[k] == pid && tt[k] == tid); k++) {}
        if (k == nt && nt < MAXT) {
            tp[nt] = pid, tt[nt] = tid;
            snprintf(tname[nt], sizeof tname[nt], "rank %ld/%ld", pid, tid);
            nt++;
        }
        if (k == nt) continue;
        if (meta_thread) {
            const char *tn = json_string_value(json_object_get(args, "name"));
            if (tn) snprintf(tname[k], sizeof tname[k], "rank %ld %s", pid, tn);
            continue;
        }
        if (!json_is_integer(st) || json_integer_value(st) != step) continue;
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if ((cat && !strcmp(cat, "message")) || (ename && !strcmp(ename, "step"))) continue;
        json_t *ts = json_object_get(e, "ts"), *dur = json_object_get(e, "dur");
        if (!json_is_number(ts) || !json_is_number(dur) || !ename) {
            bad = 1;
            break;
        }
        int c;
        for (c = 0; c < nn && strcmp(names[c], ename); c++) {}
        if (c == nn && nn < MAXN) snprintf(names[nn++], sizeof names[0], "%s", ename);
        if (nbar == capbar) {
            capbar = capbar ? 2 * capbar : 256;
            Bar *nb = realloc(bars, capbar * sizeof *nb);
            if (!nb) {
                bad = 2;
                break;
            }
            bars = nb;
        }
        double a = (json_number_value(ts) - t0) / 1000.0;
        bars[nbar++] = (Bar){a, a + json_number_value(dur) / 1000.0, k, c};
    }
    json_decref(root);
    if (bad) {
        free(bars);
        return bad == 2 ? pw_errf(err, "out of memory")
                        : pw_errf(err, "%s/trace.json: a complete event without ts, dur or name", dir);
    }
    /* rows: the tracks with something drawn, in the order the trace names them */
    int row[MAXT], nrow = 0;
    for (int k = 0; k < nt; k++) row[k] = -1;
    for (size_t b = 0; b < nbar; b++) row[bars[b].k] = 0;
    char rname[MAXT][64];
    for (int k = 0; k < nt; k++)
        if (row[k] == 0) {
            memcpy(rname[nrow], tname[k], sizeof rname[0]);
            row[k] = nrow++;
        }
    snprintf(path, sizeof path, "%s/gantt_%s.dat", out, name);
    PwFileOut o;
    FILE *f = pw_file_out_open(&o, path, err);
    if (!f) {
        free(bars);
        return -1;
    }
    fprintf(f, "# start_ms end_ms track color  (step %ld of %s)\n", step, dir);
    for (size_t b = 0; b < nbar; b++)
        fprintf(f, "%.4f %.4f %d %d\n", bars[b].a, bars[b].b, row[bars[b].k], bars[b].c);
    free(bars);
    if (pw_file_out_close(&o, 0, err)) return -1;
    nt = nrow;
    memcpy(tname, rname, sizeof rname);
    /* the script: one bar per event, a track per rank and role, a colour per phase name */
    char script[16384];
    int len = snprintf(script, sizeof script,
                       "set termoption noenhanced\nset output 'gantt_%s.png'\nset title 'one step (%ld) of %s'\n"
                       "set xlabel 'ms from the step start'\nset yrange [-0.5:%d.5]\n"
                       "set style fill solid 0.8 border -1\nset key outside right\nset ytics (",
                       name, step, name, nt - 1);
    for (int k = 0; k < nt && len < (int)sizeof script - 200; k++)
        len += snprintf(script + len, sizeof script - (size_t)len, "%s\"%s\" %d", k ? ", " : "",
                        tname[k], k);
    len += snprintf(script + len, sizeof script - (size_t)len, ")\nplot ");
    for (int c = 0; c < nn && len < (int)sizeof script - 300; c++) {
        char colour[32];
        snprintf(colour, sizeof colour, "%d", c + 1);
        for (size_t j = 0; j < PW_ARRAY_LEN(phase_colours); j++)
            if (!strcmp(phase_colours[j][0], names[c]))
                snprintf(colour, sizeof colour, "rgb '%s'", phase_colours[j][1]);
        len += snprintf(script + len, sizeof script - (size_t)len,
                        "%s'gantt_%s.dat' using (($1+$2)/2):($4==%d?$3:1/0):(($2-$1)/2):(0.35) "
                        "with boxxyerror lc %s title '%s'",
                        c ? ", " : "", name, c, colour, names[c]);
    }
    if (!nn) len += snprintf(script + len, sizeof script - (size_t)len, "NaN notitle");
    snprintf(script + len, sizeof script - (size_t)len, "\n");
    char gp[300];
    snprintf(gp, sizeof gp, "gantt_%s.gp", name);
    pw_report_gnuplot(out, gp, script);
    return 0;
}

static int plot_throughput(const char *out, const Run *runs, int n, PwErr *err)
{
    char path[4096];
    pw_report_join(path, sizeof path, out, "throughput.dat");
    PwFileOut o;
    FILE *f = pw_file_out_open(&o, path, err);
    if (!f) return -1;
    fprintf(f, "# index placement steps_per_s\n");
    for (int i = 0; i < n; i++) fprintf(f, "%d %s %.6f\n", i, runs[i].name, 1 / runs[i].step_s);
    if (pw_file_out_close(&o, 0, err)) return -1;
    pw_report_gnuplot(out, "throughput.gp",
                      "set termoption noenhanced\nset output 'throughput.png'\nset title 'PPO steps per second by placement'\n"
                      "set ylabel 'steps/s'\nset yrange [0:*]\nset style fill solid 0.7\n"
                      "set boxwidth 0.6\nset xtics rotate by -30\nset grid ytics\n"
                      "plot 'throughput.dat' using 1:3:xtic(2) with boxes notitle\n");
    return 0;
}

int pw_report_placements(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ppo_world report placements OUT_DIR NAME=RUN_DIR ...\n");
        return 2;
    }
    const char *out = argv[1];
    int n = argc - 2;
    Run *runs = calloc((size_t)n, sizeof *runs);
    if (!runs) return 1;
    PwErr err = {{0}};
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        char *eq = strchr(argv[i + 2], '=');
        if (!eq || eq == argv[i + 2] || !eq[1] || strcspn(argv[i + 2], "/ '\"") < (size_t)(eq - argv[i + 2])) {
            fprintf(stderr, "ppo_world report placements: '%s': expected NAME=RUN_DIR (NAME "
                            "without '/', spaces or quotes)\n", argv[i + 2]);
            free(runs);
            return 2;
        }
        *eq = 0;
        runs[i].name = argv[i + 2];
        runs[i].dir = eq + 1;
        rc = read_run(&runs[i], &err);
    }
    if (!rc) rc = write_file(out, "table.tsv", runs, n, 0, &err);
    if (!rc) rc = write_file(out, "table.md", runs, n, 1, &err);
    if (!rc) write_table(stdout, runs, n, 1);
    if (!rc) rc = plot_throughput(out, runs, n, &err);
    for (int i = 0; i < n && !rc; i++) {
        int g = pw_report_gantt(out, runs[i].name, runs[i].dir, &err);
        if (g < 0) rc = -1;
        if (g == 1) fprintf(stderr, "ppo_world report placements: %s has no trace.json: no Gantt\n", runs[i].dir);
    }
    if (rc) fprintf(stderr, "ppo_world report placements: %s\n", err.msg);
    free(runs);
    return rc ? 1 : 0;
}
