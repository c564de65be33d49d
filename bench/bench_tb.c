/* bench_tb: what log.tensorboard costs a step. A PPO metrics line of the keys a run with every
 * role writes (57 numbers, as the tiny run of docs/roles.md's TensorBoard section), written N
 * times as metrics.c writes it (json_dumps, one line, flushed) and as the TensorBoard event of
 * the same line (pw_tb_json, flushed): microseconds and bytes a line for each, and their ratio.
 *
 *   bench_tb [LINES] [DIR]      (default 2000 lines, in a fresh folder under /tmp)
 *
 * Both write to files in DIR; each figure is the median of 5 rounds of LINES lines. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_clock.h"
#include "bench_stats.h"
#include "pw_metrics.h"
#include "pw_tb.h"

static const char *const keys[] = {
    "episode", "lr", "epoch", "objective/kl", "objective/scores", "objective/rlhf_reward",
    "objective/non_score_reward", "objective/entropy", "objective/kl_coef", "loss/policy_avg",
    "loss/value_avg", "policy/approxkl_avg", "policy/clipfrac_avg", "policy/entropy_avg",
    "val/clipfrac_avg", "val/sequence_lengths", "val/num_stop_token_ids", "val/ratio",
    "critic/lr", "generator/logprob_diff", "generator/staleness", "time/step",
    "comm/bytes_sent", "comm/bytes_collective"};
static const char *const roles[] = {"actor", "reference", "critic", "reward", "generator"};
static const char *const phases[] = {"generate", "evaluate", "advantages", "train", "weights",
                                     "idle"};

/* One line: step, then the keys above, a time per role and phase, a peak per role. */
static json_t *make_line(int64_t step, double x)
{
    json_t *o = json_object();
    json_object_set_new(o, "step", json_integer(step));
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        json_object_set_new(o, keys[i], pw_metric_json(x * (double)(i + 1) / 7.0));
    char key[64];
    for (int r = 0; r < 5; r++)
        for (int p = 0; p < 6; p++) {
            snprintf(key, sizeof key, "time/%s/%s", roles[r], phases[p]);
            json_object_set_new(o, key, pw_metric_json(x * 1e-3 * (r + 1) * (p + 1)));
        }
    for (int r = 0; r < 5 && json_object_size(o) < 58; r++) {
        snprintf(key, sizeof key, "memory/%s/peak_mb", roles[r]);
        json_object_set_new(o, key, pw_metric_json(100.0 + r));
    }
    return o;
}

int main(int argc, char **argv)
{
    int lines = argc > 1 ? atoi(argv[1]) : 2000;
    if (lines < 1) {
        fprintf(stderr, "bench_tb: LINES must be at least 1\n");
        return 2;
    }
    char tmpl[] = "/tmp/bench_tb_XXXXXX";
    const char *dir = argc > 2 ? argv[2] : mkdtemp(tmpl);
    if (!dir) {
        perror("bench_tb: mkdtemp");
        return 2;
    }
    json_t **line = malloc((size_t)lines * sizeof *line);
    for (int i = 0; i < lines; i++) line[i] = make_line(i, 0.37 + 1e-3 * i);
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "w");
    snprintf(path, sizeof path, "%s/tensorboard", dir);
    PwErr err;
    PwTb *tb = pw_tb_open(path, pw_tb_now(), &err);
    if (!f || !tb) {
        fprintf(stderr, "bench_tb: %s\n", f ? err.msg : "cannot write metrics.jsonl");
        return 1;
    }
    double t_json[5], t_tb[5];
    long json_bytes = 0;
    for (int round = 0; round < 5; round++) {
        double t0 = bench_now();
        for (int i = 0; i < lines; i++) {
            char *s = json_dumps(line[i], JSON_COMPACT | JSON_REAL_PRECISION(17));
            fprintf(f, "%s\n", s);
            fflush(f);
            if (round == 0) json_bytes += (long)strlen(s) + 1;
            free(s);
        }
        double t1 = bench_now();
        for (int i = 0; i < lines; i++)
            if (pw_tb_json(tb, i + 1, pw_tb_now(), line[i], &err)) {
                fprintf(stderr, "bench_tb: %s\n", err.msg);
                return 1;
            }
        t_json[round] = (t1 - t0) / lines;
        t_tb[round] = (bench_now() - t1) / lines;
    }
    struct stat st;
    stat(pw_tb_path(tb), &st);
    double tb_bytes = (double)(st.st_size) / (5.0 * lines); /* the version event is 40 bytes */
    double mj = bench_median(t_json, 5) * 1e6, mt = bench_median(t_tb, 5) * 1e6;
    printf("| writer (a line of %zu numbers, %d lines x 5 rounds) | us a line | bytes a line |\n",
           json_object_size(line[0]) - 1, lines);
    printf("|---|---|---|\n");
    printf("| metrics.jsonl (json_dumps, flushed) | %.2f | %.0f |\n", mj,
           (double)json_bytes / lines);
    printf("| TensorBoard event (pw_tb_json, flushed) | %.2f | %.0f |\n", mt, tb_bytes);
    printf("RESULT jsonl_us_per_line=%.3f tb_us_per_line=%.3f tb_vs_jsonl=%.3f "
           "tb_bytes_per_line=%.0f jsonl_bytes_per_line=%.0f\n",
           mj, mt, mt / mj, tb_bytes, (double)json_bytes / lines);
    fclose(f);
    pw_tb_close(tb);
    for (int i = 0; i < lines; i++) json_decref(line[i]);
    free(line);
    if (argc <= 2) {
        snprintf(path, sizeof path, "rm -rf '%s'", dir);
        if (system(path) != 0) fprintf(stderr, "bench_tb: could not remove %s\n", dir);
    }
    return 0;
}
