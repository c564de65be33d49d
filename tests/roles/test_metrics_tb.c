/* test_metrics_tb.c: a PPO run's TensorBoard events (src/roles/metrics.c, pw_metrics_tb): an
 * evaluation's sample responses as a markdown table, each cell showing its text as it is; and
 * when the disk fills up under them, the failed write warns once on stderr, naming the file, and
 * ends the event file; the metrics lines of that step and the next are written all the same,
 * and no further warning comes. A unit test of metrics.c, so it reads the roles' internal
 * header. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/roles/roles.h"
#include "pw_tb.h"
#include "pw_test.h"

static int count_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++) n += *p == '\n';
    return n;
}

/* An evaluation line's sample responses become one text summary: a markdown table whose cells
 * show the text as it is (HTML's characters as entities, markdown's escaped, line breaks <br>),
 * written after the line's scalars at step + 1. */
static void test_samples(const char *dir)
{
    char tb_dir[256];
    snprintf(tb_dir, sizeof tb_dir, "%s/tb_samples", dir);
    PwRun *r = calloc(1, sizeof *r);
    PwErr err;
    r->tb = pw_tb_open(tb_dir, pw_tb_now(), &err);
    CHECK(r->tb, "open: %s", err.msg);
    if (!r->tb) return;
    char path[1300];
    snprintf(path, sizeof path, "%s", pw_tb_path(r->tb));
    json_error_t je;
    json_t *line = json_loads(
        "{\"step\": 3, \"eval/scores\": 0.25, \"eval/samples\": ["
        "{\"prompt\": \"say |ab| <sep>\", \"response\": \"*caf\\u00e9* & [x]_\\nnext\\r\\tend\", "
        "\"score\": 0.5, \"gold\": 1},"
        "{\"prompt\": \"a\\\\b\", \"response\": \"`c`\", \"score\": -10, \"gold\": 0.125}]}",
        0, &je);
    CHECK(line, "the line: %s", je.text);
    pw_metrics_tb(r, 3, line);
    json_decref(line);
    CHECK(r->tb != NULL, "written");
    pw_tb_close(r->tb);
    size_t n = 0;
    char *got = pw_test_slurp(path, &n);
    const char *want = "| prompt | response | score | gold |\n|---|---|---|---|\n"
                       "| say \\|ab\\| &lt;sep&gt; | "
                       "\\*caf\xc3\xa9\\* &amp; \\[x\\]\\_<br>next end | 0.5 | 1 |\n"
                       "| a\\\\b | \\`c\\` | -10 | 0.125 |\n";
    CHECK(got && memmem(got, n, want, strlen(want)), "the table: %s", want);
    /* after it, the string's tensor and the text plugin; the step, 4, in the event before */
    CHECK(got && memmem(got, n, "\x4a\x08\x0a\x06\x0a\x04text", 10), "the text plugin");
    CHECK(got && memmem(got, n, "\x10\x04\x2a", 3), "at step 4");
    free(got);
    free(r);
}

int main(void)
{
    char dir[] = "/tmp/pw_metrics_tb_XXXXXX";
    if (!mkdtemp(dir)) return 2;
    char path[256], tb_dir[256], err_path[256];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    snprintf(tb_dir, sizeof tb_dir, "%s/tensorboard", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    PwRun *r = calloc(1, sizeof *r);
    r->s.N = 8;
    r->data.ds.n = 8;
    int one = 0;
    r->w.map.role[PW_ROLE_ACTOR] = (PwRoleRanks){.nranks = 1, .ranks = &one};
    r->metrics = fopen(path, "w");
    PwErr err;
    r->tb = pw_tb_open(tb_dir, pw_tb_now(), &err);
    CHECK(r->metrics && r->tb, "open: %s", err.msg);
    if (!r->metrics || !r->tb) return pw_test_done("metrics_tb");
    char tb_path[1300];
    snprintf(tb_path, sizeof tb_path, "%s", pw_tb_path(r->tb));
    test_samples(dir);

    /* stderr into a file, to read the warning back */
    fflush(stderr);
    int saved = dup(2);
    FILE *e = freopen(err_path, "w", stderr);
    CHECK(e != NULL, "stderr to a file");

    pw_metrics_write(r, 0);
    CHECK(r->tb != NULL, "the first step's event written");
    CHECK(pw_test_fill_disk(tb_path) == 0, "the event file's descriptor pointed at /dev/full");
    pw_metrics_write(r, 1); /* the event fails: warned, the file ended */
    CHECK(r->tb == NULL, "the writer closed after the failure");
    pw_metrics_write(r, 2); /* no writer: no event, no warning */

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(r->metrics);
    char *lines = pw_test_slurp(path, NULL), *warn = pw_test_slurp(err_path, NULL);
    CHECK(lines && count_lines(lines) == 3, "three metrics lines: %s", lines ? lines : "(none)");
    CHECK(warn && count_lines(warn) == 1, "one warning: %s", warn ? warn : "(none)");
    char want[1600];
    snprintf(want, sizeof want, "ppo_world: warning: %s: cannot write: No space left on device; "
             "no more TensorBoard events this run (metrics.jsonl goes on)\n", tb_path);
    CHECK(warn && !strcmp(warn, want), "warning '%s', expected '%s'", warn ? warn : "", want);
    free(lines);
    free(warn);
    free(r);
    snprintf(want, sizeof want, "rm -rf '%s'", dir);
    if (system(want) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return pw_test_done("metrics_tb");
}
