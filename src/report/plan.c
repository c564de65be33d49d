/* plan.c: `ppo_world plan`: read a profile run (config.yaml, metrics.jsonl, placement.yaml), turn
 * its phase times into per-sample costs, and predict one placement or rank those of N ranks. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_cli.h"
#include "pw_config.h"
#include "pw_file.h"
#include "pw_metrics.h"
#include "pw_placement.h"
#include "pw_plan.h"
#include "report_internal.h"

static const char usage_text[] =
    "usage: ppo_world plan --profile RUN_DIR --placement P.yaml [--world-size N] [options]\n"
    "       ppo_world plan --profile RUN_DIR --search N [--top K] [options]\n"
    "  options: --profile-placement FILE (default RUN_DIR/placement.yaml, else one rank per\n"
    "           role), --cores C (default: this host's), --bandwidth GB/s (default 2),\n"
    "           --latency-us U (default 20), --wait-load X (default 0), --params P,\n"
    "           --gantt DIR (with --placement: the predicted steps as traces and plots)\n"
    "  (docs/planner.md)\n";

typedef struct PlanArgs {
    const char *profile, *placement, *profile_placement;
    const char *gantt; /* --gantt DIR: the predicted schedule as traces and Gantt plots */
    int world_size, search, top;
    double params; /* 0: from the profile's SFT checkpoint */
    PwPlanHw hw;
} PlanArgs;

/* ---- the profile ------------------------------------------------------------------------ */

/* The ranks of a placement file whose job size is not given: the loader checks a file against
 * a job size, and exactly one size passes (every rank holds a role, none lies outside), so the
 * sizes are tried in turn (up to the planner's limit); the error for size 1 is the one told. */
static int load_placement(const char *path, int world_size, PwPlacement *pl, PwErr *err)
{
    if (world_size) return pw_placement_load(path, world_size, pl, err);
    PwErr first;
    if (!pw_placement_load(path, 1, pl, &first)) return 0;
    for (int n = 2; n <= PW_PLAN_MAX_RANKS; n++) {
        PwErr e;
        if (!pw_placement_load(path, n, pl, &e)) return 0;
    }
    *err = first;
    return -1;
}

/* Parameters of the actor: its checkpoint's size over 4 bytes (float32 safetensors). */
static int sft_params(const PwConfig *cfg, double *params, PwErr *err)
{
    if (!cfg->model.sft || !cfg->model.sft[0])
        return pw_errf(err, "the profile's config.yaml names no model.sft to size the weights "
                            "from; give --params N");
    char path[4096];
    pw_report_join(path, sizeof path, cfg->model.sft, "model.safetensors");
    struct stat st;
    if (stat(path, &st) != 0)
        return pw_errf(err, "cannot size the weights from %s (model.sft of the profile); "
                            "give --params N",
                       path);
    *params = (double)st.st_size / 4.0;
    return 0;
}

static int read_profile(const PlanArgs *a, PwPlanProfile *p, PwErr *err)
{
    memset(p, 0, sizeof *p);
    char path[4096];
    PwConfig cfg;
    if (pw_report_run_config(a->profile, &cfg, err)) return -1;
    p->N = (long)cfg.ppo.num_rollout_samples;
    p->resp = (long)cfg.generation.max_new_tokens;
    p->seq = (long)cfg.data.max_prompt_len + p->resp;
    p->opt_steps = (long)(cfg.ppo.epochs * cfg.ppo.minibatches);
    p->params = a->params;
    int rc = p->params > 0 ? 0 : sft_params(&cfg, &p->params, err);
    pw_config_free(&cfg);
    if (rc) return -1;

    /* how many ranks each role of the profile had: its block is N / ranks rows */
    int nranks[PW_ROLE_COUNT] = {1, 1, 1, 1, 1};
    char plpath[4096];
    const char *pp = a->profile_placement;
    if (!pp) {
        pw_report_join(plpath, sizeof plpath, a->profile, "placement.yaml");
        if (!pw_report_missing(plpath)) pp = plpath;
    }
    if (pp) {
        PwPlacement pl;
        if (load_placement(pp, 0, &pl, err)) return -1;
        for (int r = 0; r < PW_ROLE_COUNT; r++) nranks[r] = pl.map.role[r].nranks;
        pw_placement_free(&pl);
    }

    pw_report_join(path, sizeof path, a->profile, "metrics.jsonl");
    Rows rows;
    if (pw_report_read_jsonl(path, &rows, err)) return -1;
    /* step 0 pays for first touches and, in async mode, samples two batches: left out when
     * there are later steps */
    int first = rows.n > 1 ? 1 : 0;
    double sum[PW_ROLE_COUNT][PW_PLAN_PHASES] = {{0}};
    int seen[PW_ROLE_COUNT] = {0};
    for (int i = first; i < rows.n; i++)
        for (int role = 0; role < PW_ROLE_COUNT; role++)
            for (int ph = 0; ph < PW_PLAN_PHASES; ph++) {
                char key[64];
                snprintf(key, sizeof key, "time/%s/%s", pw_role_name((PwRole)role),
                         pw_plan_phase_names[ph]);
                double v;
                int got = pw_metric_get(json_object_get(rows.row[i], key), &v);
                if (got < 0 || (got == 1 && !(v >= 0 && isfinite(v)))) {
                    pw_errf(err, "%s:%d: %s is not a time in seconds", path, i + 1, key);
                    pw_report_rows_free(&rows);
                    return -1;
                }
                if (got == 1) {
                    sum[role][ph] += v;
                    seen[role] = 1;
                }
            }
    p->steps_used = rows.n - first;
    pw_report_rows_free(&rows);
    if (p->steps_used < 1) return pw_errf(err, "%s has no step", path);
    for (int role = 0; role < PW_ROLE_COUNT; role++) {
        if (seen[role] && !nranks[role])
            return pw_errf(err, "%s times the %s, which the profile's placement %s lacks",
                           path, pw_role_name((PwRole)role), pp);
        for (int ph = 0; ph < PW_PLAN_PHASES; ph++) {
            double mean = sum[role][ph] / p->steps_used;
            if (ph == PW_PLAN_WEIGHTS)
                p->fixed[role] = mean;
            else /* a rank of the role did its block: N / nranks rows */
                p->per_sample[role][ph] = nranks[role] ? mean * nranks[role] / (double)p->N : 0;
        }
    }
    for (int role = 0; role < PW_ROLE_COUNT; role++)
        if (role != PW_ROLE_REFERENCE && role != PW_ROLE_GENERATOR && !seen[role])
            return pw_errf(err, "%s has no time/%s/* keys; expected a PPO run's metrics",
                           path, pw_role_name((PwRole)role));
    p->has_reference = seen[PW_ROLE_REFERENCE];
    return 0;
}

/* ---- one placement ---------------------------------------------------------------------- */

static void print_header(const PlanArgs *a, const PwPlanProfile *p)
{
    printf("profile %s: %d steps averaged, %ld rollouts/step, %.0f parameters\n", a->profile,
           p->steps_used, p->N, p->params);
    printf("machine: %d cores, %.3g GB/s, %.3g us latency, wait load %.3g\n", a->hw.cores,
           a->hw.bandwidth / 1e9, a->hw.latency * 1e6, a->hw.wait_load);
}

/* DIR/predicted_MODE/trace.json, the simulated steps of each mode, and DIR/gantt_predicted_MODE.png
 * of one of them, drawn as a run's trace is (docs/planner.md). */
static int write_gantt(const PlanArgs *a, const PwPlanProfile *p, const PwRoleMap *m, PwErr *err)
{
    if (mkdir(a->gantt, 0755) && errno != EEXIST)
        return pw_errf(err, "--gantt %s: %s", a->gantt, strerror(errno));
    for (int async = 0; async < 2; async++) {
        const char *name = async ? "predicted_async" : "predicted_sync";
        char dir[4096], path[4200];
        pw_report_join(dir, sizeof dir, a->gantt, name);
        if (mkdir(dir, 0755) && errno != EEXIST) return pw_errf(err, "%s: %s", dir, strerror(errno));
        pw_report_join(path, sizeof path, dir, "trace.json");
        PwFileOut o;
        FILE *f = pw_file_out_open(&o, path, err);
        if (!f) return -1;
        int rc = pw_plan_trace(p, m, &a->hw, async, f, err);
        rc = pw_file_out_close(&o, rc != 0, err);
        if (!rc) rc = pw_report_gantt(a->gantt, name, dir, err) < 0 ? -1 : 0;
        if (rc) return -1;
    }
    return 0;
}

static int plan_one(const PlanArgs *a, const PwPlanProfile *p, PwErr *err)
{
    PwPlacement pl;
    if (load_placement(a->placement, a->world_size, &pl, err)) return -1;
    PwPlanResult res;
    int rc = pw_plan_predict(p, &pl.map, &a->hw, &res, err);
    if (!rc) {
        print_header(a, p);
        printf("placement %s: %d ranks\n\nrank  roles  busy_s\n", a->placement, res.nranks);
        for (int r = 0; r < res.nranks; r++) {
            char roles[128];
            pw_plan_rank_roles(&pl.map, r, roles, sizeof roles);
            printf("%d  %s  %.4f\n", r, roles, res.busy_s[r]);
        }
        printf("\nmode  step_s  steps_per_s\n");
        printf("sync  %.4f  %.4f\nasync  %.4f  %.4f\n", res.step_s[0], 1 / res.step_s[0],
               res.step_s[1], 1 / res.step_s[1]);
        printf("RESULT sync_steps_per_s=%.4f async_steps_per_s=%.4f\n", 1 / res.step_s[0],
               1 / res.step_s[1]);
        if (a->gantt) rc = write_gantt(a, p, &pl.map, err);
    }
    pw_placement_free(&pl);
    return rc;
}

/* ---- the search ------------------------------------------------------------------------- */

/* The placements searched: the roles split into groups (a set partition: the roles of a group
 * share their ranks), each group on k >= 1 ranks of its own (data parallel when k > 1), the
 * counts adding up to N; the generator may also be left out (the actor samples). Ranks whose
 * roles differ only by order are one placement, so the groups are unordered: partitions are
 * enumerated as restricted growth strings and ranks are given to groups in order. */
typedef struct Cand {
    char desc[160];
    double step_s[2];
} Cand;

typedef struct Search {
    const PlanArgs *a;
    const PwPlanProfile *p;
    int roles[PW_ROLE_COUNT], nroles;
    int group[PW_ROLE_COUNT + 1], ngroups; /* +1: a bound the compiler can see */
    int count[PW_ROLE_COUNT + 1];
    Cand *cand;
    int ncand, cap;
    PwErr *err;
} Search;

static int add_candidate(Search *s)
{
    int ranks[PW_ROLE_COUNT][PW_PLAN_MAX_RANKS];
    PwRoleMap m;
    memset(&m, 0, sizeof m);
    m.world_size = s->a->search;
    int start[PW_ROLE_COUNT], next = 0;
    for (int g = 0; g < s->ngroups; g++) start[g] = next, next += s->count[g];
    Cand c = {{0}, {0, 0}};
    for (int g = 0; g < s->ngroups; g++) {
        size_t len = strlen(c.desc);
        snprintf(c.desc + len, sizeof c.desc - len, "%s", g ? " | " : "");
        int firstrole = 1;
        for (int i = 0; i < s->nroles; i++) {
            if (s->group[i] != g) continue;
            int role = s->roles[i];
            for (int k = 0; k < s->count[g]; k++) ranks[role][k] = start[g] + k;
            m.role[role].nranks = s->count[g];
            m.role[role].ranks = ranks[role];
            len = strlen(c.desc);
            snprintf(c.desc + len, sizeof c.desc - len, "%s%s", firstrole ? "" : "+",
                     pw_role_name((PwRole)role));
            firstrole = 0;
        }
        len = strlen(c.desc);
        snprintf(c.desc + len, sizeof c.desc - len, " x%d", s->count[g]);
    }
    PwPlanResult res;
    if (pw_plan_predict(s->p, &m, &s->a->hw, &res, s->err)) return -1;
    c.step_s[0] = res.step_s[0];
    c.step_s[1] = res.step_s[1];
    if (s->ncand == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        Cand *grown = realloc(s->cand, (size_t)s->cap * sizeof *grown);
        if (!grown) return pw_errf(s->err, "out of memory");
        s->cand = grown;
    }
    s->cand[s->ncand++] = c;
    return 0;
}

/* Rank counts of groups g.. adding up to `left` ranks. */
static int counts(Search *s, int g, int left)
{
    if (g == s->ngroups) return left == 0 ? add_candidate(s) : 0;
    for (int k = 1; k <= left - (s->ngroups - g - 1); k++) {
        s->count[g] = k;
        if (counts(s, g + 1, left - k)) return -1;
    }
    return 0;
}

/* Restricted growth strings: role i joins one of the groups so far or opens the next. */
static int partitions(Search *s, int i)
{
    if (i == s->nroles) return s->ngroups <= s->a->search ? counts(s, 0, s->a->search) : 0;
    for (int g = 0; g <= s->ngroups; g++) {
        s->group[i] = g;
        int opened = g == s->ngroups;
        s->ngroups += opened;
        int rc = partitions(s, i + 1);
        s->ngroups -= opened;
        if (rc) return -1;
    }
    return 0;
}

static double best_rate(const Cand *c) { return 1 / fmin(c->step_s[0], c->step_s[1]); }

static int by_rate(const void *x, const void *y)
{
    double a = best_rate(x), b = best_rate(y);
    return a < b ? 1 : a > b ? -1 : strcmp(((const Cand *)x)->desc, ((const Cand *)y)->desc);
}

static int plan_search(const PlanArgs *a, const PwPlanProfile *p, PwErr *err)
{
    Search s;
    memset(&s, 0, sizeof s);
    s.a = a;
    s.p = p;
    s.err = err;
    for (int with_gen = 0; with_gen < 2; with_gen++) {
        s.nroles = 0;
        for (int role = 0; role < PW_ROLE_COUNT; role++) {
            if (role == PW_ROLE_REFERENCE && !p->has_reference) continue;
            if (role == PW_ROLE_GENERATOR && !with_gen) continue;
            s.roles[s.nroles++] = role;
        }
        s.ngroups = 0;
        if (partitions(&s, 0)) {
            free(s.cand);
            return -1;
        }
    }
    qsort(s.cand, (size_t)s.ncand, sizeof *s.cand, by_rate);
    print_header(a, p);
    printf("placements of %d ranks: %d (groups of roles sharing ranks, x data-parallel ranks)\n\n",
           a->search, s.ncand);
    printf("rank  sync_steps_per_s  async_steps_per_s  placement\n");
    for (int i = 0; i < s.ncand && i < a->top; i++)
        printf("%d  %.4f  %.4f  %s\n", i + 1, 1 / s.cand[i].step_s[0], 1 / s.cand[i].step_s[1],
               s.cand[i].desc);
    if (s.ncand)
        printf("RESULT best=\"%s\" sync_steps_per_s=%.4f async_steps_per_s=%.4f\n", s.cand[0].desc,
               1 / s.cand[0].step_s[0], 1 / s.cand[0].step_s[1]);
    free(s.cand);
    return 0;
}

/* ---- the command ------------------------------------------------------------------------ */

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "ppo_world plan: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage_text);
    return 2;
}

/* A number of a flag: the whole text, finite, in [lo, hi]. */
static int number(const char *text, double lo, double hi, double *v)
{
    char *end;
    *v = strtod(text, &end);
    return *text && !*end && isfinite(*v) && *v >= lo && *v <= hi ? 0 : -1;
}

int pw_plan_main(int argc, char **argv)
{
    static const struct option flags[] = {
        {"profile", required_argument, NULL, 'P'},
        {"placement", required_argument, NULL, 'p'},
        {"profile-placement", required_argument, NULL, 'q'},
        {"world-size", required_argument, NULL, 'w'},
        {"search", required_argument, NULL, 's'},
        {"top", required_argument, NULL, 't'},
        {"cores", required_argument, NULL, 'c'},
        {"bandwidth", required_argument, NULL, 'b'},
        {"latency-us", required_argument, NULL, 'l'},
        {"wait-load", required_argument, NULL, 'W'},
        {"params", required_argument, NULL, 'n'},
        {"gantt", required_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    PlanArgs a = {.top = 10, .hw = {ncpu > 0 ? (int)ncpu : 1, 2e9, 20e-6, 0.0}};
    PwCli cli;
    pw_cli_init(&cli, argc, argv, "h", flags);
    char fl[64];
    for (int o; (o = pw_cli_next(&cli)) != PW_CLI_END;) {
        double v;
        switch (o) {
        case 'P': a.profile = cli.arg; break;
        case 'p': a.placement = cli.arg; break;
        case 'q': a.profile_placement = cli.arg; break;
        case 'g': a.gantt = cli.arg; break;
        case 'w':
        case 's':
        case 't':
        case 'c':
            if (number(cli.arg, 1, o == 't' ? 1e6 : PW_PLAN_MAX_RANKS, &v) || v != floor(v)) {
                fprintf(stderr, "ppo_world plan: %s %s: expected an integer 1..%d\n",
                        pw_cli_flag(&cli, o, fl, sizeof fl), cli.arg,
                        o == 't' ? 1000000 : PW_PLAN_MAX_RANKS);
                return 2;
            }
            if (o == 'w') a.world_size = (int)v;
            if (o == 's') a.search = (int)v;
            if (o == 't') a.top = (int)v;
            if (o == 'c') a.hw.cores = (int)v;
            break;
        case 'b':
            if (number(cli.arg, 1e-6, 1e6, &v)) return bad("--bandwidth %s: expected GB/s in (0, 1e6]", cli.arg);
            a.hw.bandwidth = v * 1e9;
            break;
        case 'l':
            if (number(cli.arg, 0, 1e7, &v)) return bad("--latency-us %s: expected 0..1e7", cli.arg);
            a.hw.latency = v * 1e-6;
            break;
        case 'W':
            if (number(cli.arg, 0, 1, &v)) return bad("--wait-load %s: expected 0..1", cli.arg);
            a.hw.wait_load = v;
            break;
        case 'n':
            if (number(cli.arg, 1, 1e13, &v)) return bad("--params %s: expected 1..1e13", cli.arg);
            a.params = v;
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        case PW_CLI_OPERAND: return bad("unexpected argument '%s'", cli.arg);
        default: return bad("%s", cli.msg);
        }
    }
    if (!a.profile) return bad("%s", "--profile RUN_DIR is required");
    if (!a.placement == !a.search) return bad("%s", "give one of --placement P.yaml and --search N");
    if (a.world_size && !a.placement) return bad("%s", "--world-size goes with --placement");
    if (a.gantt && !a.placement) return bad("%s", "--gantt goes with --placement");
    PwPlanProfile p;
    PwErr err = {{0}};
    int rc = read_profile(&a, &p, &err);
    if (!rc) rc = a.placement ? plan_one(&a, &p, &err) : plan_search(&a, &p, &err);
    if (rc) {
        fprintf(stderr, "ppo_world plan: %s\n", err.msg);
        return 1;
    }
    return 0;
}
