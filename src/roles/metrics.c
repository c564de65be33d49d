/* metrics.c: one JSON line per PPO step in RUN_DIR/metrics.jsonl, with the names open-instruct
 * logs (docs/algorithm.md, Metrics) plus time/<role>/<phase>, the idle time of each role, the
 * bytes moved and each role's peak memory; and the progress line on stdout. */
#include <jansson.h>
#include <stdlib.h>

#include "pw_metrics.h"
#include "pw_tb.h"
#include "roles.h"

/* json_real(NaN) is NULL, and setting NULL drops the key: pw_metric_json writes "nan" instead. */
static void put(json_t *o, const char *key, double v)
{
    json_object_set_new(o, key, pw_metric_json(v));
}

void pw_metrics_write(PwRun *r, int64_t step)
{
    const double *st = r->stats;
    double N = r->s.N;
    json_t *o = json_object();
    json_object_set_new(o, "step", json_integer(step));
    json_object_set_new(o, "episode", json_integer((step + 1) * r->s.N));
    put(o, "lr", st[PW_ST_LR]);
    put(o, "epoch", (double)((step + 1) * r->s.N) / r->data.ds.n); /* passes over the prompts */
    put(o, "objective/kl", st[PW_ST_KL] / N);
    put(o, "objective/scores", st[PW_ST_SCORE] / N);
    put(o, "objective/rlhf_reward", st[PW_ST_RLHF] / N);
    put(o, "objective/non_score_reward", st[PW_ST_NONSCORE] / N);
    put(o, "objective/entropy", st[PW_ST_ENTROPY] / N);
    put(o, "objective/kl_coef", st[PW_ST_BETA]);
    for (int k = 0; k < r->K; k++)
        if (pw_member_is_verifier(&r->member[k])) {
            put(o, "objective/verifiable_correct_rate", st[PW_ST_CORRECT] / N);
            break;
        }
    put(o, "loss/policy_avg", st[PW_ST_PG]);
    put(o, "loss/value_avg", st[PW_ST_VLOSS]);
    put(o, "policy/approxkl_avg", st[PW_ST_APPROXKL]);
    put(o, "policy/clipfrac_avg", st[PW_ST_CLIPFRAC]);
    put(o, "policy/entropy_avg", st[PW_ST_ENTROPY_AVG]);
    put(o, "val/clipfrac_avg", st[PW_ST_VCLIPFRAC]);
    put(o, "val/sequence_lengths", st[PW_ST_LENGTH] / N);
    put(o, "val/num_stop_token_ids", st[PW_ST_STOPPED]);
    put(o, "val/ratio", st[PW_ST_RATIO]);
    put(o, "critic/lr", st[PW_ST_CRITIC_LR]);
    put(o, "generator/logprob_diff",
        st[PW_ST_GENCOUNT] > 0 ? st[PW_ST_GENDIFF] / st[PW_ST_GENCOUNT] : 0.0);
    put(o, "generator/staleness", st[PW_ST_STALENESS] / N);
    char key[64];
    if (r->async) /* the share of the step's samples at each staleness 0..k */
        for (int j = 0; j <= r->k; j++) {
            snprintf(key, sizeof key, "generator/staleness_hist/%d", j);
            put(o, key, st[PW_ST_STALE_HIST + j] / N);
        }
    if (r->s.off_policy != PW_OFFPOL_NONE) {
        double c = st[PW_ST_GENCOUNT] > 0 ? st[PW_ST_GENCOUNT] : 1.0;
        put(o, "objective/is_weight_mean", st[PW_ST_IS_WEIGHT] / c);
        put(o, "objective/is_capped_frac", st[PW_ST_IS_CAPPED] / c);
    }
    if (r->s.algorithm != PW_ALGO_PPO) { /* only there, so ppo's lines keep their keys */
        put(o, "objective/zero_std_groups", st[PW_ST_ZERO_STD]);
        put(o, "objective/group_std_mean", st[PW_ST_GROUP_STD]);
    }
    /* only where steps can be skipped, so a run that stops on them keeps its lines unchanged */
    if (r->s.skip_nonfinite) put(o, "runtime/skipped_steps", st[PW_ST_SKIPPED]);
    put(o, "time/step", r->step_seconds);
    for (int role = 0; role < PW_ROLE_COUNT; role++) {
        if (!r->w.map.role[role].nranks) continue;
        for (int ph = 0; ph < PW_PH_COUNT; ph++) {
            snprintf(key, sizeof key, "time/%s/%s", pw_role_name((PwRole)role), pw_phase_names[ph]);
            put(o, key, r->time[role][ph]);
        }
    }
    put(o, "comm/bytes_sent", r->bytes_sent);
    put(o, "comm/bytes_collective", r->bytes_coll);
    for (int role = 0; role < PW_ROLE_COUNT; role++) {
        if (!r->w.map.role[role].nranks) continue;
        snprintf(key, sizeof key, "memory/%s/peak_mb", pw_role_name((PwRole)role));
        put(o, key, r->peak_mb[role]);
        /* the GPU's own memory, for a role that computes there (host memory is peak_mb) */
        if (r->w.map.role[role].device != PW_DEVICE_CUDA) continue;
        snprintf(key, sizeof key, "memory/%s/device_peak_mb", pw_role_name((PwRole)role));
        put(o, key, r->device_peak_mb[role]);
    }
    char *line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    if (line) {
        fprintf(r->metrics, "%s\n", line);
        fflush(r->metrics);
        free(line);
    }
    pw_metrics_tb(r, step, o);
    json_decref(o);
}

/* A table cell: the text as markdown shows it literally. HTML's three characters become entities
 * (TensorBoard's sanitiser would drop "<sep>" as an unknown tag), markdown's markup characters
 * are escaped, and a line break is <br>, which a table cell allows. */
static void cell_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '\n': fputs("<br>", f); break;
        case '\r': break;
        case '\t': fputc(' ', f); break;
        case '|': case '\\': case '*': case '_': case '`': case '[': case ']':
            fputc('\\', f);
            fputc(*s, f);
            break;
        default: fputc(*s, f);
        }
    }
}

/* The evaluation's sample responses (an array of objects, eval.c) as a markdown table: a column
 * per key of the first object, in its order; numbers as %.4g. NULL when there are none. */
static char *samples_markdown(const json_t *arr)
{
    const json_t *first = json_array_get(arr, 0);
    if (!json_is_object(first)) return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)first, key, v) fprintf(f, "| %s ", key);
    fputs("|\n", f);
    json_object_foreach((json_t *)first, key, v) fputs("|---", f);
    fputs("|\n", f);
    size_t i;
    json_t *row;
    json_array_foreach(arr, i, row) {
        json_object_foreach((json_t *)first, key, v) {
            json_t *c = json_object_get(row, key);
            fputs("| ", f);
            if (json_is_string(c)) cell_text(f, json_string_value(c));
            else if (json_is_number(c)) fprintf(f, "%.4g", json_number_value(c));
            fputc(' ', f);
        }
        fputs("|\n", f);
    }
    fclose(f);
    return text;
}

void pw_metrics_tb(PwRun *r, int64_t step, const json_t *line)
{
    PwErr err;
    if (!r->tb) return;
    int rc = pw_tb_json(r->tb, step + 1, pw_tb_now(), line, &err);
    const json_t *samples = json_object_get(line, "eval/samples");
    char *md = !rc && json_array_size(samples) ? samples_markdown(samples) : NULL;
    if (md) rc = pw_tb_text(r->tb, step + 1, pw_tb_now(), "eval/samples", md, &err);
    free(md);
    if (rc) pw_tb_give_up(&r->tb, "ppo_world", &err);
}

/* "1:05", or "2:03:07" past an hour; a time that is not a number (no rate yet) prints "?". */
static void clock_text(char *buf, size_t n, double secs)
{
    if (!(secs >= 0 && secs < 1e9)) {
        snprintf(buf, n, "?");
        return;
    }
    long s = (long)(secs + 0.5);
    if (s >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else snprintf(buf, n, "%ld:%02ld", s / 60, s % 60);
}

void pw_progress_line(PwRun *r, int64_t step)
{
    double now = pw_now();
    int last = step + 1 == r->s.steps;
    if (r->s.progress_s <= 0 || (!last && now - r->progress_last < r->s.progress_s)) return;
    r->progress_last = now;
    double rate = (double)(step + 1 - r->first_step) / (now - r->run_t0);
    char eta[32], total[32];
    clock_text(eta, sizeof eta, (double)(r->s.steps - step - 1) / rate);
    clock_text(total, sizeof total, now - r->run_t0);
    /* The quickstart's stage lines: the count first, the time since the start last. */
    int w = snprintf(NULL, 0, "%lld", (long long)r->s.steps);
    printf("[ppo %*lld/%lld] %.3g steps/s  ETA %s  score %.4f  kl %.4f  [%s]\n", w,
           (long long)(step + 1), (long long)r->s.steps, rate, eta, r->stats[PW_ST_SCORE] / r->s.N,
           r->stats[PW_ST_KL] / r->s.N, total);
    fflush(stdout);
}
