/* report.c: `ppo_world report`: read run folders (config.yaml, metrics.jsonl, eval.jsonl) and
 * print the quickstart's table and RESULT line or the ensemble experiment's table.md. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_cli.h"
#include "pw_config.h"
#include "pw_file.h"
#include "pw_metrics.h"
#include "pw_report.h"
#include "report_internal.h"

static const char usage_text[] =
    "usage: ppo_world report quickstart OUT --minutes M --rms RM_DIR ... [--sft-eval DIR]\n"
    "       ppo_world report ensembles [--sft-eval DIR] EXP_DIR OBJECTIVE@SEED=RUN_DIR ...\n"
    "       ppo_world report placements OUT_DIR NAME=RUN_DIR ...\n"
    "  (docs/report.md)\n";

/* ---- files ------------------------------------------------------------------------------ */

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Nothing at all at the name; anything else there (a folder, a FIFO) is refused when it is
 * opened, by what it is. */
int pw_report_missing(const char *path)
{
    struct stat st;
    return lstat(path, &st) != 0 && errno == ENOENT;
}

/* dir/name without doubling a trailing slash of dir (as a shell user may type it) */
void pw_report_join(char *out, size_t size, const char *dir, const char *name)
{
    size_t n = strlen(dir);
    snprintf(out, size, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
}

static int blank(const char *s)
{
    for (; *s; s++)
        if (!strchr(" \t\r\n\f\v", *s)) return 0;
    return 1;
}

void pw_report_rows_free(Rows *r)
{
    for (int i = 0; i < r->n; i++) json_decref(r->row[i]);
    free(r->row);
    r->row = NULL;
    r->n = 0;
}

int pw_report_read_jsonl(const char *path, Rows *out, PwErr *err)
{
    memset(out, 0, sizeof *out);
    if (pw_report_missing(path)) return pw_errf(err, "missing %s", path);
    FILE *f = pw_file_fopen(path, PW_FILE_MAX_JSONL, err);
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    int cap_rows = 0, rc = 0;
    long lineno = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        if (blank(line)) continue;
        json_error_t je;
        json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &je);
        if (!o) {
            rc = pw_errf(err, "%s:%ld: not JSON (%s)", path, lineno, je.text);
            break;
        }
        if (!json_is_object(o)) {
            json_decref(o);
            rc = pw_errf(err, "%s:%ld: not a JSON object", path, lineno);
            break;
        }
        if (out->n == cap_rows) {
            cap_rows = cap_rows ? 2 * cap_rows : 64;
            json_t **grown = realloc(out->row, (size_t)cap_rows * sizeof *grown);
            if (!grown) {
                json_decref(o);
                rc = pw_errf(err, "%s: out of memory", path);
                break;
            }
            out->row = grown;
        }
        out->row[out->n++] = o;
    }
    free(line);
    fclose(f);
    if (rc) pw_report_rows_free(out);
    return rc;
}

/* Non-blank lines of a file (prompts, preference pairs), or -1 if it cannot be read. */
static long count_lines(const char *path)
{
    PwErr err;
    FILE *f = pw_file_fopen(path, PW_FILE_MAX_JSONL, &err);
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    long n = 0;
    while (getline(&line, &cap, f) >= 0)
        if (!blank(line)) n++;
    free(line);
    fclose(f);
    return n;
}

/* A number of a row: 1 and *v when present (a diverged run's "nan", "inf" and "-inf" included,
 * pw_metrics.h), 0 when absent or null, -1 when not a number. */
static int get_num(json_t *row, const char *key, double *v)
{
    return pw_metric_get(json_object_get(row, key), v);
}

static int need_num(json_t *row, const char *key, double *v, const char *path, int i, PwErr *err)
{
    int got = get_num(row, key, v);
    if (got == 1) return 0;
    return pw_errf(err, "%s: evaluation %d: %s %s", path, i + 1, key,
                   got == 0 ? "missing" : "is not a number");
}

/* ---- one run ---------------------------------------------------------------------------- */

typedef struct Run {
    PwReportPoint *pts;
    int npts;
    PwReportStep *steps;
    int nsteps;
} Run;

static void run_free(Run *r)
{
    free(r->pts);
    free(r->steps);
    memset(r, 0, sizeof *r);
}

int pw_report_run_config(const char *run, PwConfig *cfg, PwErr *err)
{
    char path[4096];
    pw_report_join(path, sizeof path, run, "config.yaml");
    if (pw_report_missing(path)) return pw_errf(err, "missing %s", path);
    if (pw_config_defaults(cfg)) return pw_errf(err, "out of memory");
    if (pw_config_load_file(cfg, path, err)) {
        pw_config_free(cfg);
        return -1;
    }
    return 0;
}

/* Responses per evaluation: eval.num_prompts of the run's own config.yaml, or fewer when the
 * prompt file (a path as the run saw it, so relative to where the run was started) is shorter. */
static int eval_size(const char *run, long *n, PwErr *err)
{
    PwConfig cfg;
    if (pw_report_run_config(run, &cfg, err)) return -1;
    *n = (long)cfg.eval.num_prompts;
    const char *src = cfg.data.eval_prompts[0] ? cfg.data.eval_prompts : cfg.data.prompts;
    if (is_file(src)) {
        long lines = count_lines(src);
        if (lines >= 0 && lines < *n) *n = lines;
    }
    pw_config_free(&cfg);
    return 0;
}

/* Standard error of one evaluation's mean gold score over n responses. With the spread of the
 * per-response scores in eval.jsonl it is std / sqrt(n); otherwise only the mean is known and,
 * gold lying in [0, 1] (so E[g^2] <= E[g]), the variance is at most m (1 - m): that bound can
 * only overstate the error. */
static double gold_se(json_t *row, double gold, long n, int *measured)
{
    double sd;
    if (get_num(row, "eval/gold_scores_std", &sd) == 1 || get_num(row, "eval/gold_std", &sd) == 1) {
        *measured = 1;
        return sd / sqrt((double)n);
    }
    *measured = 0;
    double m = gold < 0.0 ? 0.0 : gold > 1.0 ? 1.0 : gold;
    return sqrt(m * (1.0 - m) / (double)n);
}

/* objective/kl of the batch sampled right after `step`'s update: the policy an evaluation
 * after that step sees (the step's own batch when the run ends there). A step logged twice
 * (a resumed run) counts by its last line. */
static double kl_at(const Run *r, long step)
{
    for (long s = step + 1; s >= step; s--) {
        for (int i = r->nsteps - 1; i >= 0; i--) {
            if (r->steps[i].step != s) continue;
            if (r->steps[i].has_kl) return r->steps[i].kl;
            break;
        }
    }
    return NAN;
}

static int load_steps(const char *run, Run *r, PwErr *err)
{
    char path[4096];
    pw_report_join(path, sizeof path, run, "metrics.jsonl");
    Rows rows;
    if (pw_report_read_jsonl(path, &rows, err)) return -1;
    r->steps = calloc(rows.n ? (size_t)rows.n : 1, sizeof *r->steps);
    if (!r->steps) {
        pw_report_rows_free(&rows);
        return pw_errf(err, "out of memory");
    }
    for (int i = 0; i < rows.n; i++) {
        PwReportStep *s = &r->steps[i];
        double v;
        if (get_num(rows.row[i], "step", &v) != 1) {
            pw_report_rows_free(&rows);
            return pw_errf(err, "%s: line %d of the steps has no step", path, i + 1);
        }
        s->step = (long)v;
        s->scores = s->kl = s->rlhf_reward = NAN;
        get_num(rows.row[i], "objective/scores", &s->scores);
        s->has_kl = get_num(rows.row[i], "objective/kl", &s->kl) == 1;
        get_num(rows.row[i], "objective/rlhf_reward", &s->rlhf_reward);
    }
    r->nsteps = rows.n;
    pw_report_rows_free(&rows);
    return 0;
}

/* One point per evaluation of RUN (and its training steps): step, proxy score, gold score,
 * its standard error, KL, mean response length. */
static int load_run(const char *run, Run *r, PwErr *err)
{
    memset(r, 0, sizeof *r);
    char path[4096];
    pw_report_join(path, sizeof path, run, "eval.jsonl");
    Rows ev;
    if (pw_report_read_jsonl(path, &ev, err)) return -1;
    long n = 0;
    if (load_steps(run, r, err) || eval_size(run, &n, err)) goto fail;
    r->pts = calloc(ev.n ? (size_t)ev.n : 1, sizeof *r->pts);
    if (!r->pts) {
        pw_errf(err, "out of memory");
        goto fail;
    }
    for (int i = 0; i < ev.n; i++) {
        json_t *row = ev.row[i];
        PwReportPoint *p = &r->pts[i];
        double v = 0, episode = 1;
        if (get_num(row, "eval/gold_scores", &p->gold) != 1) {
            pw_errf(err, "%s/eval.jsonl: no eval/gold_scores (is model.gold set?)", run);
            goto fail;
        }
        if (need_num(row, "step", &v, path, i, err) || need_num(row, "eval/scores", &p->proxy, path, i, err))
            goto fail;
        p->step = (long)v;
        get_num(row, "episode", &episode);
        p->initial = (long)episode == 0;
        p->se = gold_se(row, p->gold, n, &p->se_measured);
        p->len = NAN;
        get_num(row, "eval/sequence_lengths", &p->len);
        /* The evaluation's own KL to the reference, on its responses; runs written before
         * eval.jsonl carried it fall back to the next training batch's objective/kl. */
        p->kl = NAN;
        if (get_num(row, "eval/kl", &p->kl) != 1) p->kl = NAN;
        p->n = n;
        r->npts++;
    }
    for (int i = 0; i < r->npts; i++)
        if (isnan(r->pts[i].kl)) r->pts[i].kl = r->pts[i].initial ? 0.0 : kl_at(r, r->pts[i].step);
    pw_report_rows_free(&ev);
    if (r->npts == 0) {
        run_free(r);
        return pw_errf(err, "%s/eval.jsonl: no evaluation", run);
    }
    return 0;
fail:
    pw_report_rows_free(&ev);
    run_free(r);
    return -1;
}

/* The first evaluation of RUN as the start (KL 0) of a curve. */
static int load_start(const char *run, PwReportPoint *p, PwErr *err)
{
    Run r;
    if (load_run(run, &r, err)) return -1;
    *p = r.pts[0];
    p->kl = 0.0;
    p->is_start = 1;
    run_free(&r);
    return 0;
}

/* ---- text ------------------------------------------------------------------------------- */

/* A number with nd decimals, "n/a" for a missing (NaN) value; rotating buffers so that one
 * printf can hold several. */
static const char *fmt(double x, int nd)
{
    static char buf[16][64];
    static int next;
    char *b = buf[next++ % 16];
    if (isnan(x))
        snprintf(b, 64, "n/a");
    else
        snprintf(b, 64, "%.*f", nd, x);
    return b;
}

static int bad_usage(const char *msg, const char *arg)
{
    fprintf(stderr, "ppo_world report: ");
    fprintf(stderr, msg, arg);
    fprintf(stderr, "\n%s", usage_text);
    return 2;
}

static int fail(const PwErr *err)
{
    fprintf(stderr, "ppo_world report: %s\n", err->msg);
    return 1;
}

/* ---- quickstart ------------------------------------------------------------------------- */

typedef struct QuickArgs {
    const char *out, *sft_eval;
    double minutes;
    int have_minutes;
    const char **rms;
    int nrms;
} QuickArgs;

static int parse_quick(int argc, char **argv, QuickArgs *a)
{
    static const struct option flags[] = {
        {"minutes", required_argument, NULL, 'm'},
        {"sft-eval", required_argument, NULL, 's'},
        {"rms", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    a->sft_eval = "";
    a->rms = calloc((size_t)argc + 1, sizeof *a->rms);
    if (!a->rms) return bad_usage("%s", "out of memory");
    int in_rms = 0; /* --rms takes one or more folders: the operands up to the next flag */
    PwCli cli;
    pw_cli_init(&cli, argc, argv, "h", flags);
    for (int o; (o = pw_cli_next(&cli)) != PW_CLI_END;) {
        if (o != PW_CLI_OPERAND) in_rms = 0;
        switch (o) {
        case 'm': {
            char *end;
            a->minutes = strtod(cli.arg, &end);
            if (end == cli.arg || *end) return bad_usage("--minutes %s: expected a number", cli.arg);
            a->have_minutes = 1;
            break;
        }
        case 's': a->sft_eval = cli.arg; break;
        case 'r':
            a->nrms = 0;
            a->rms[a->nrms++] = cli.arg;
            in_rms = 1;
            break;
        case 'h': fputs(usage_text, stdout); return 1;
        case PW_CLI_OPERAND:
            if (in_rms)
                a->rms[a->nrms++] = cli.arg;
            else if (!a->out)
                a->out = cli.arg;
            else
                return bad_usage("unexpected argument '%s'", cli.arg);
            break;
        default: return bad_usage("%s", cli.msg);
        }
    }
    if (!a->out) return bad_usage("%s", "quickstart: the folder OUT is required");
    if (!a->have_minutes) return bad_usage("%s", "quickstart: --minutes is required");
    if (!a->nrms) return bad_usage("%s", "quickstart: --rms is required");
    return 0;
}

/* The reward models' last held-out accuracy, from each one's metrics.jsonl. */
static int rm_accuracy(const char *rm, double *acc, PwErr *err)
{
    char path[4096];
    pw_report_join(path, sizeof path, rm, "metrics.jsonl");
    Rows rows;
    if (pw_report_read_jsonl(path, &rows, err)) return -1;
    int found = 0;
    for (int i = rows.n - 1; i >= 0 && !found; i--) found = get_num(rows.row[i], "valid/accuracy", acc) == 1;
    pw_report_rows_free(&rows);
    if (!found) return pw_errf(err, "%s/metrics.jsonl: no valid/accuracy", rm);
    return 0;
}

static int quickstart(int argc, char **argv)
{
    QuickArgs a;
    int rc = parse_quick(argc, argv, &a);
    if (rc) {
        free(a.rms);
        return rc == 1 ? 0 : rc;
    }
    PwErr err = {{0}};
    char ppo[4096], path[4096];
    pw_report_join(ppo, sizeof ppo, a.out, "ppo");
    Run run = {0};
    double *accs = calloc((size_t)a.nrms, sizeof *accs);
    rc = 1;
    if (!accs) {
        pw_errf(&err, "out of memory");
        goto done;
    }
    if (load_run(ppo, &run, &err)) goto done;
    PwReportPoint sft;
    if (run.pts[0].initial) {
        sft = run.pts[0];
    } else if (!a.sft_eval[0]) {
        pw_errf(&err, "%s/eval.jsonl has no evaluation of the initial policy; give --sft-eval", ppo);
        goto done;
    } else if (load_start(a.sft_eval, &sft, &err)) {
        goto done;
    }
    const PwReportPoint *fin = &run.pts[run.npts - 1];
    if (run.nsteps == 0) {
        pw_errf(&err, "%s/metrics.jsonl: no PPO step", ppo);
        goto done;
    }
    double train_kl = run.steps[run.nsteps - 1].has_kl ? run.steps[run.nsteps - 1].kl : NAN;
    double acc_sum = 0.0;
    for (int i = 0; i < a.nrms; i++) {
        if (rm_accuracy(a.rms[i], &accs[i], &err)) goto done;
        acc_sum += accs[i];
    }
    double rm_acc = acc_sum / a.nrms;
    pw_report_join(path, sizeof path, a.out, "task/prefs_valid.jsonl");
    long n_pairs = count_lines(path);
    if (n_pairs < 0) {
        pw_errf(&err, "missing %s", path);
        goto done;
    }
    double diff = fin->gold - sft.gold;
    double se = sqrt(sft.se * sft.se + fin->se * fin->se);
    double z = se > 0 ? diff / se : NAN;
    if (pw_report_plot_run(ppo, run.pts, run.npts, run.steps, run.nsteps, &sft, &err)) goto done;

    const char *se_note = fin->se_measured
        ? "standard errors from the per-response spread"
        : "standard errors: upper bound sqrt(m(1-m)/n), eval.jsonl has no per-response spread";
    printf("\n");
    printf("  policy  gold score      proxy score  KL (nats)  response length   (%ld held-out prompts)\n",
           fin->n);
    printf("  SFT     %s +- %s  %11s  %9s  %15s\n", fmt(sft.gold, 3), fmt(sft.se, 3),
           fmt(sft.proxy, 3), fmt(0.0, 2), fmt(sft.len, 1));
    printf("  PPO     %s +- %s  %11s  %9s  %15s\n", fmt(fin->gold, 3), fmt(fin->se, 3),
           fmt(fin->proxy, 3), fmt(fin->kl, 2), fmt(fin->len, 1));
    printf("  gold improvement %+.3f +- %.3f = %.1f standard errors (%s)\n", diff, se, z, se_note);
    printf("  reward models: held-out accuracy");
    for (int i = 0; i < a.nrms; i++) printf(" %s", fmt(accs[i], 3));
    printf(" (mean %s, %ld pairs, chance 0.5)\n", fmt(rm_acc, 3), n_pairs);
    printf("  PPO: %d steps, last training batch KL %s\n", run.nsteps, fmt(train_kl, 2));
    struct stat st; /* the TensorBoard folder of log.tensorboard, when the run wrote one */
    pw_report_join(path, sizeof path, ppo, "tensorboard");
    int tb = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    printf("  files: %s/ (task, sft, rm_seed*, ppo: metrics.jsonl, eval.jsonl, checkpoints, score.png, "
           "kl.png, gold.png%s)\n", a.out, tb ? ", tensorboard/" : "");
    printf("RESULT sft_gold=%.4f ppo_gold=%.4f gold_se=%.4f rm_accuracy=%.4f minutes=%.2f\n",
           sft.gold, fin->gold, se, rm_acc, a.minutes);
    rc = 0;
done:
    if (rc) fail(&err);
    run_free(&run);
    free(accs);
    free(a.rms);
    return rc;
}

/* ---- ensembles -------------------------------------------------------------------------- */

/* A growing string (the table and the plot commands). */
typedef struct Text {
    char *s;
    size_t len, cap;
    int oom;
} Text;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void addf(Text *t, const char *fmt_, ...)
{
    va_list ap;
    va_start(ap, fmt_);
    int n = vsnprintf(NULL, 0, fmt_, ap);
    va_end(ap);
    if (n < 0 || t->oom) return;
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (cap < t->len + (size_t)n + 1) cap *= 2;
        char *grown = realloc(t->s, cap);
        if (!grown) {
            t->oom = 1;
            return;
        }
        t->s = grown;
        t->cap = cap;
    }
    va_start(ap, fmt_);
    vsnprintf(t->s + t->len, t->cap - t->len, fmt_, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* One OBJECTIVE@SEED=RUN_DIR argument. */
typedef struct Named {
    char *objective, *seed; /* seed "" when the name has no '@' */
    const char *dir;
    int is_sft;             /* OBJECTIVE@sft: the SFT policy under that objective (old runs) */
} Named;

static int split_named(const char *arg, Named *nm)
{
    const char *eq = strchr(arg, '=');
    if (!eq) return -1;
    size_t name_len = (size_t)(eq - arg);
    const char *at = memchr(arg, '@', name_len);
    size_t obj_len = at ? (size_t)(at - arg) : name_len;
    nm->objective = strndup(arg, obj_len);
    nm->seed = at ? strndup(at + 1, name_len - obj_len - 1) : strdup("");
    nm->dir = eq + 1;
    nm->is_sft = name_len >= 4 && !strncmp(eq - 4, "@sft", 4);
    return nm->objective && nm->seed ? 0 : -1;
}

/* One objective: its starting point and the summary of its runs' final evaluations. */
typedef struct Objective {
    const char *name;
    int nfinals;
    double gold_sum, gold_min, gold_max, kl_sum;
    /* The SFT policy under this objective: the mean of its runs' initial evaluations (they
     * share the weights and the prompts and differ only by the sampling stream), or an
     * OBJECTIVE@sft run, the form of versions whose eval.jsonl had no initial evaluation. */
    int ninitial, start_measured, have_start, from_initial;
    long start_n;
    double init_proxy, init_gold, init_var, init_len;
    PwReportPoint start;
} Objective;

/* The objective called `name`, added in first-named order when new. */
static Objective *objective_of(Objective *objs, int *nobjs, const char *name)
{
    int c = 0;
    while (c < *nobjs && strcmp(objs[c].name, name)) c++;
    if (c == *nobjs) objs[(*nobjs)++].name = name;
    return &objs[c];
}

static int write_file(const char *path, const char *text, PwErr *err)
{
    return pw_file_write(path, text, strlen(text), err);
}

static int write_curve(const char *path, const PwReportPoint *start, const Run *r, PwErr *err)
{
    PwFileOut o;
    FILE *f = pw_file_out_open(&o, path, err);
    if (!f) return -1;
    fprintf(f, "# kl gold gold_se proxy updates\n");
    int with_start = start && !r->pts[0].initial;
    for (int i = -with_start; i < r->npts; i++) {
        const PwReportPoint *p = i < 0 ? start : &r->pts[i];
        pw_report_dat_values(f, (const double[]){p->kl, p->gold, p->se, p->proxy}, 4);
        fprintf(f, " %ld\n", p->is_start || p->initial ? 0 : p->step + 1);
    }
    return pw_file_out_close(&o, 0, err); /* a failed write is the stream's error */
}

/* [--sft-eval DIR] EXP_DIR NAMED...: argv keeps only the operands, in order; 1 after --help. */
static int parse_ensembles(int *argc, char **argv, const char **sft_eval)
{
    static const struct option flags[] = {
        {"sft-eval", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int n = 0;
    PwCli cli;
    pw_cli_init(&cli, *argc, argv, "h", flags);
    for (int o; (o = pw_cli_next(&cli)) != PW_CLI_END;) {
        switch (o) {
        case 's': *sft_eval = cli.arg; break;
        case 'h': fputs(usage_text, stdout); return 1;
        /* n trails the reading position, so an operand never overwrites one still unread */
        case PW_CLI_OPERAND: argv[1 + n++] = (char *)cli.arg; break;
        default: return bad_usage("%s", cli.msg);
        }
    }
    *argc = n;
    if (n < 2) return bad_usage("%s", "ensembles: EXP_DIR and one or more OBJECTIVE@SEED=RUN_DIR");
    return 0;
}

static int ensembles(int argc, char **argv)
{
    PwErr err = {{0}};
    PwReportPoint sft;
    int have_sft = 0;
    const char *sft_eval = NULL;
    int prc = parse_ensembles(&argc, argv, &sft_eval);
    if (prc) return prc == 1 ? 0 : prc;
    argv++; /* the operands */
    if (sft_eval) {
        if (load_start(sft_eval, &sft, &err)) return fail(&err);
        have_sft = 1;
    }
    const char *exp = argv[0];
    int nn = argc - 1, rc = 1;
    Named *names = calloc((size_t)nn, sizeof *names);
    Run *runs = calloc((size_t)nn, sizeof *runs);
    Objective *objs = calloc((size_t)nn, sizeof *objs);
    Text table = {0}, kl_plots = {0}, step_plots = {0}, script = {0};
    if (!names || !runs || !objs) {
        pw_errf(&err, "out of memory");
        goto done;
    }
    for (int i = 0; i < nn; i++)
        if (split_named(argv[1 + i], &names[i])) {
            rc = bad_usage("'%s': expected OBJECTIVE@SEED=RUN_DIR", argv[1 + i]);
            goto done;
        }

    /* Every run first: an objective's starting point needs all its runs' initial evaluations
     * before its first row is written. */
    int nobjs = 0;
    for (int i = 0; i < nn; i++) {
        Objective *o = objective_of(objs, &nobjs, names[i].objective);
        if (names[i].is_sft) { /* a later OBJECTIVE@sft replaces an earlier one */
            if (load_start(names[i].dir, &o->start, &err)) goto done;
            o->have_start = 1;
            continue;
        }
        if (load_run(names[i].dir, &runs[i], &err)) goto done;
        const PwReportPoint *p0 = &runs[i].pts[0];
        if (!p0->initial) continue;
        o->ninitial++;
        o->init_proxy += p0->proxy;
        o->init_gold += p0->gold;
        o->init_var += p0->se * p0->se;
        o->init_len += p0->len;
        if (o->ninitial == 1) {
            o->start_n = p0->n;
            o->start_measured = p0->se_measured;
        }
    }
    /* The mean of k independent evaluations of one policy: its standard error is
     * sqrt(sum se_i^2) / k. An OBJECTIVE@sft run, when named, wins: it was asked for. */
    for (int c = 0; c < nobjs; c++) {
        Objective *o = &objs[c];
        if (o->have_start || o->ninitial == 0) continue;
        double k = o->ninitial;
        o->start = (PwReportPoint){.step = -1, .initial = 1, .is_start = 1, .proxy = o->init_proxy / k,
                                   .gold = o->init_gold / k, .se = sqrt(o->init_var) / k,
                                   .se_measured = o->start_measured, .kl = 0.0,
                                   .len = o->init_len / k, .n = o->start_n};
        o->have_start = o->from_initial = 1;
    }

    addf(&table, "| objective | seed | steps | final KL | final proxy score | final gold +- SE | "
                 "best gold +- SE (at KL) |\n|---|---|---|---|---|---|---|\n");
    if (have_sft) addf(&table, "| (SFT policy) | | 0 | 0 | | %s +- %s | |\n", fmt(sft.gold, 3), fmt(sft.se, 3));
    for (int c = 0; c < nobjs; c++) {
        const Objective *o = &objs[c];
        if (!o->have_start) continue;
        char seed_col[64] = " ";
        if (o->from_initial) snprintf(seed_col, sizeof seed_col, " mean of %d ", o->ninitial);
        addf(&table, "| %s: SFT policy |%s| 0 | 0 | %s | %s +- %s | |\n", o->name, seed_col,
             fmt(o->start.proxy, 3), fmt(o->start.gold, 3), fmt(o->start.se, 3));
    }

    for (int i = 0; i < nn; i++) {
        const Named *nm = &names[i];
        if (nm->is_sft) continue;
        Objective *o = objective_of(objs, &nobjs, nm->objective);
        int c = (int)(o - objs);
        const Run *r = &runs[i];
        int first_of_objective = o->nfinals == 0;
        char fn[1024], path[4096];
        snprintf(fn, sizeof fn, "%s_%s.dat", nm->objective, nm->seed[0] ? nm->seed : "0");
        pw_report_join(path, sizeof path, exp, fn);
        /* a run with its own initial evaluation starts its curve there; an older one borrows
         * its objective's start, else the --sft-eval run's */
        const PwReportPoint *start = o->have_start ? &o->start : have_sft ? &sft : NULL;
        if (write_curve(path, start, r, &err)) goto done;
        /* one colour per objective and one key entry: its later seeds go untitled */
        char title[600];
        if (first_of_objective)
            snprintf(title, sizeof title, "title '%s'", nm->objective);
        else
            snprintf(title, sizeof title, "notitle");
        addf(&kl_plots, "%s'%s' using 1:2:3 with yerrorlines lw 1.5 lc %d pt %d %s",
             kl_plots.len ? ", \\\n     " : "", fn, c + 1, c + 1, title);
        addf(&step_plots, "%s'%s' using 5:2:3 with yerrorlines lw 1.5 lc %d pt %d %s",
             step_plots.len ? ", \\\n     " : "", fn, c + 1, c + 1, title);

        /* "best" is over the evaluations after updates: the SFT point is not PPO's doing */
        const PwReportPoint *fin = &r->pts[r->npts - 1], *best = NULL;
        for (int k = 0; k < r->npts; k++)
            if (!r->pts[k].initial && (!best || r->pts[k].gold > best->gold)) best = &r->pts[k];
        if (!best) best = fin;
        if (o->nfinals == 0 || fin->gold < o->gold_min) o->gold_min = fin->gold;
        if (o->nfinals == 0 || fin->gold > o->gold_max) o->gold_max = fin->gold;
        o->gold_sum += fin->gold;
        o->kl_sum += fin->kl;
        o->nfinals++;
        addf(&table, "| %s | %s | %d | %s | %s | %s +- %s | %s +- %s (%s) |\n", nm->objective,
             nm->seed, r->nsteps, fmt(fin->kl, 2), fmt(fin->proxy, 3), fmt(fin->gold, 3),
             fmt(fin->se, 3), fmt(best->gold, 3), fmt(best->se, 3), fmt(best->kl, 2));
    }
    addf(&table, "\n| objective | runs | final gold, mean over seeds (min - max) | final KL, mean |\n"
                 "|---|---|---|---|\n");
    for (int c = 0; c < nobjs; c++) {
        const Objective *o = &objs[c];
        if (o->nfinals == 0) continue; /* named by OBJECTIVE@sft only */
        addf(&table, "| %s | %d | %s (%s - %s) | %s |\n", o->name, o->nfinals,
             fmt(o->gold_sum / o->nfinals, 3), fmt(o->gold_min, 3), fmt(o->gold_max, 3),
             fmt(o->kl_sum / o->nfinals, 2));
    }
    if (table.oom || kl_plots.oom || step_plots.oom) {
        pw_errf(&err, "out of memory");
        goto done;
    }
    char path[4096];
    pw_report_join(path, sizeof path, exp, "table.md");
    if (write_file(path, table.s, &err)) goto done;
    fputs(table.s, stdout);
    fflush(stdout);

    static const char common[] = "set grid\nset key top right\nset ylabel 'gold score (held-out prompts)'\n";
    addf(&script, "%sset output 'gold_vs_kl.png'\n"
                  "set title 'Gold score against KL to the SFT policy (lines join evaluations in step order)'\n"
                  "set xlabel 'KL (nats, sum over response tokens)'\nplot %s\n",
         common, kl_plots.s ? kl_plots.s : "");
    if (!script.oom) pw_report_gnuplot(exp, "gold_vs_kl.gp", script.s);
    script.len = 0;
    addf(&script, "%sset output 'gold_vs_step.png'\nset title 'Gold score per PPO step'\n"
                  "set xlabel 'PPO step'\nplot %s\n",
         common, step_plots.s ? step_plots.s : "");
    if (!script.oom) pw_report_gnuplot(exp, "gold_vs_step.gp", script.s);
    rc = 0;
done:
    if (rc == 1) fail(&err);
    for (int i = 0; names && i < nn; i++) {
        free(names[i].objective);
        free(names[i].seed);
        if (runs) run_free(&runs[i]);
    }
    free(names);
    free(runs);
    free(objs);
    free(table.s);
    free(kl_plots.s);
    free(step_plots.s);
    free(script.s);
    return rc;
}

/* ---- entry ------------------------------------------------------------------------------ */

int pw_report_main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "%s", usage_text);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage_text, stdout);
        return 0;
    }
    /* A command's flags are read with the command's name standing as argv[0]. */
    if (!strcmp(argv[1], "quickstart")) return quickstart(argc - 1, argv + 1);
    if (!strcmp(argv[1], "ensembles")) return ensembles(argc - 1, argv + 1);
    if (!strcmp(argv[1], "placements")) return pw_report_placements(argc - 1, argv + 1);
    return bad_usage("unknown command '%s'", argv[1]);
}
