/* test_tb_events: the TensorBoard writer (src/runtime/tb_events.c) against files TensorBoard's own
 * writer made (tests/fixtures/make_tb_fixture.py): the same events, the same bytes. Also the
 * checksum against its published check value, the JSON path (which keys become scalars, in which
 * order), the errors a user can cause (a file where the folder should be, no parent), and a disk
 * that fills up while the writer writes.
 * Argument: the fixture folder. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_tb.h"
#include "pw_test.h"

static const char *fixtures;

/* Compares the writer's file with the fixture `name`, byte for byte, and says where they part. */
static void same_bytes(const PwTb *tb, const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", fixtures, name);
    size_t n_got = 0, n_want = 0;
    char *got = pw_test_slurp(pw_tb_path(tb), &n_got), *want = pw_test_slurp(path, &n_want);
    CHECK(got && want, "read %s and %s", pw_tb_path(tb), path);
    if (!got || !want) goto out;
    size_t i = 0;
    while (i < n_got && i < n_want && got[i] == want[i]) i++;
    CHECK(n_got == n_want && i == n_want, "%s: %zu bytes, the fixture %zu; first difference at %zu",
          name, n_got, n_want, i);
out:
    free(got);
    free(want);
}

static void test_crc(void)
{
    /* CRC-32C's check value (the CRC of "123456789"), as RFC 3720 and every table give it */
    CHECK(pw_tb_crc32c("123456789", 9) == 0xe3069283u, "crc32c %08x", pw_tb_crc32c("123456789", 9));
    CHECK(pw_tb_crc32c("", 0) == 0, "crc32c of nothing %08x", pw_tb_crc32c("", 0));
    /* the mask by hand: rotate right by 15, add 0xa282ead8 */
    uint32_t c = 0xe3069283u, m = ((c >> 15) | (c << 17)) + 0xa282ead8u;
    CHECK(pw_tb_masked_crc("123456789", 9) == m, "masked %08x", pw_tb_masked_crc("123456789", 9));
}

static void scalars(PwTb *tb, int64_t step, double wall, int n, const char *const *tags,
                    const double *vals)
{
    PwErr err;
    CHECK(pw_tb_scalars(tb, step, wall, n, tags, vals, &err) == 0, "%s", err.msg);
}

/* The events of make_tb_fixture.py's RUN list. */
static void test_run(const char *dir)
{
    const double W0 = 1764000000.25;
    PwErr err;
    PwTb *tb = pw_tb_open(dir, W0, &err);
    CHECK(tb, "open: %s", err.msg);
    if (!tb) return;
    char long_tag[160] = "time/";
    memset(long_tag + 5, 'x', 130);
    long_tag[135] = 0;
    const char *t0[] = {"eval/scores", "eval/kl", "episode"};
    scalars(tb, 0, W0 + 1.5, 3, t0, (double[]){0.5, 0.0, 0.0});
    const char *t1[] = {"objective/kl", "loss/policy_avg", "lr", "objective/entropy", "val/ratio",
                        "critic/x", "episode", long_tag};
    scalars(tb, 1, W0 + 2.75, 8, t1,
            (double[]){0.0123, -0.25, 9e-7, NAN, INFINITY, -INFINITY, 64.0, 3.0});
    /* the fixture's SAMPLES: a markdown table, UTF-8 (e with an acute accent), escapes */
    const char *samples = "| prompt | response | score |\n|---|---|---|\n"
                          "| say \\|ab\\| &lt;sep&gt; | "
                          "caf\xc3\xa9 &amp; th\xc3\xa9<br>next line | 0.5 |\n"
                          "| 12+30= | 42&lt;eos&gt; | -10 |\n";
    CHECK(pw_tb_text(tb, 1, W0 + 2.8, "eval/samples", samples, &err) == 0, "text: %s", err.msg);
    const char *t2[] = {"objective/kl"};
    scalars(tb, 2, W0 + 4.0, 1, t2, (double[]){0.02});
    CHECK(pw_tb_restart(tb, 2, W0 + 10.0, &err) == 0, "restart: %s", err.msg);
    scalars(tb, 2, W0 + 11.0, 1, t2, (double[]){0.03});
    /* the last event through the JSON path: "step" and the non-numbers left out */
    json_error_t je;
    json_t *line = json_loads("{\"step\": 2, \"objective/kl\": 0.04, \"mode\": \"ppo\", "
                              "\"valid/loss\": null, \"eval/samples\": [1], \"x\": {}, "
                              "\"episode\": 256}", 0, &je);
    CHECK(line && pw_tb_json(tb, 3, W0 + 12.0, line, &err) == 0, "json: %s", err.msg);
    json_decref(line);
    CHECK(pw_tb_ok(tb), "writer still ok");
    CHECK(strstr(pw_tb_path(tb), "/events.out.tfevents.1764000000.") != NULL, "name %s",
          pw_tb_path(tb));
    same_bytes(tb, "run.tfevents");
    pw_tb_close(tb);
}

/* The events of make_tb_fixture.py's EDGE list. */
static void test_edge(const char *dir)
{
    PwErr err;
    PwTb *tb = pw_tb_open(dir, 0.0, &err);
    CHECK(tb, "open: %s", err.msg);
    if (!tb) return;
    const char *a[] = {"a"};
    scalars(tb, -1, -0.0, 1, a, (double[]){1.0});
    scalars(tb, (INT64_C(1) << 40) + 3, 1e9, 0, NULL, NULL);
    const char *empty[] = {""};
    scalars(tb, INT64_MIN, 1.0, 1, empty, (double[]){0.0});
    CHECK(pw_tb_restart(tb, 0, 2.0, &err) == 0, "restart: %s", err.msg);
    /* the strings of pw_metrics.h become the values they stand for; 1e300 no float holds */
    json_error_t je;
    json_t *line = json_loads("{\"big\": 1e300, \"tiny\": 1e-50, \"neg0\": -0.0, "
                              "\"third\": 0.33333333333333331}", 0, &je);
    CHECK(line && pw_tb_json(tb, 5, 3.0, line, &err) == 0, "json: %s", err.msg);
    json_decref(line);
    /* a line without a number writes nothing */
    line = json_loads("{\"step\": 7, \"mode\": \"sft\", \"valid/loss\": null}", 0, &je);
    CHECK(line && pw_tb_json(tb, 7, 4.0, line, &err) == 0, "json: %s", err.msg);
    json_decref(line);
    CHECK(pw_tb_text(tb, 6, 4.0, "", "", &err) == 0, "empty text: %s", err.msg);
    same_bytes(tb, "edge.tfevents");
    pw_tb_close(tb);
}

/* The JSON strings of non-finite values (pw_metrics.h) arrive as those values. */
static void test_json_nonfinite(const char *dir)
{
    PwErr err;
    PwTb *tb = pw_tb_open(dir, 5.0, &err);
    CHECK(tb, "open: %s", err.msg);
    if (!tb) return;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "a", "nan", "b", "inf", "c", "-inf", "d", "x");
    CHECK(pw_tb_json(tb, 1, 6.0, o, &err) == 0, "json: %s", err.msg);
    json_decref(o);
    size_t n = 0;
    char *got = pw_test_slurp(pw_tb_path(tb), &n);
    pw_tb_close(tb);
    /* the second record's three floats: quiet NaN, +inf, -inf; "x" is not a number */
    const unsigned char want[][4] = {{0, 0, 0xc0, 0x7f}, {0, 0, 0x80, 0x7f}, {0, 0, 0x80, 0xff}};
    int found = 0;
    for (int k = 0; k < 3 && got; k++)
        for (size_t i = 0; i + 5 <= n; i++)
            if ((unsigned char)got[i] == 0x15 && !memcmp(got + i + 1, want[k], 4)) {
                found++;
                break;
            }
    CHECK(found == 3, "found %d of the three non-finite floats", found);
    CHECK(got && !memmem(got, n, "\x0a\x01x", 3), "the string \"x\" became no scalar");
    free(got);
}

/* A disk that fills up under a writer (its file's descriptor pointed at /dev/full): the write
 * fails with the reason, and every later one says an earlier write failed, without writing. */
static void test_disk_full(const char *dir)
{
    PwErr err;
    PwTb *tb = pw_tb_open(dir, 5.0, &err);
    CHECK(tb, "open: %s", err.msg);
    if (!tb) return;
    const char *a[] = {"a"};
    scalars(tb, 1, 6.0, 1, a, (double[]){1.0});
    if (pw_test_fill_disk(pw_tb_path(tb))) {
        CHECK(0, "the event file's descriptor pointed at /dev/full");
        pw_tb_close(tb);
        return;
    }
    int rc = pw_tb_scalars(tb, 2, 7.0, 1, a, (double[]){2.0}, &err);
    CHECK(rc == -1 && strstr(err.msg, ": cannot write: No space left on device"), "%s", err.msg);
    CHECK(!pw_tb_ok(tb), "the writer says it failed");
    rc = pw_tb_restart(tb, 3, 8.0, &err);
    CHECK(rc == -1 && strstr(err.msg, "an earlier write failed"), "%s", err.msg);
    rc = pw_tb_scalars(tb, 3, 8.0, 1, a, (double[]){3.0}, &err);
    CHECK(rc == -1 && strstr(err.msg, "an earlier write failed"), "%s", err.msg);
    pw_tb_close(tb);
}

static void test_errors(const char *base)
{
    PwErr err;
    char path[1200];
    snprintf(path, sizeof path, "%s/plain_file", base);
    FILE *f = fopen(path, "w");
    fclose(f);
    PwTb *tb = pw_tb_open(path, 1.0, &err);
    CHECK(!tb && strstr(err.msg, "plain_file: not a directory (a regular file)"), "%s", err.msg);
    snprintf(path, sizeof path, "%s/no/such/parent", base);
    tb = pw_tb_open(path, 1.0, &err);
    CHECK(!tb && strstr(err.msg, "no/such/parent: cannot make the TensorBoard folder: No such"),
          "%s", err.msg);
    /* an existing folder is used, and a second file in it gets a name of its own */
    snprintf(path, sizeof path, "%s/twice", base);
    PwTb *a = pw_tb_open(path, 1.0, &err), *b = pw_tb_open(path, 1.0, &err);
    CHECK(a && b && strcmp(pw_tb_path(a), pw_tb_path(b)), "two files in one folder");
    pw_tb_close(a);
    pw_tb_close(b);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_tb_events FIXTURE_FOLDER\n");
        return 2;
    }
    fixtures = argv[1];
    char base[] = "/tmp/pw_tb_XXXXXX";
    if (!mkdtemp(base)) return 2;
    char dir[1200];
    test_crc();
    snprintf(dir, sizeof dir, "%s/run", base);
    test_run(dir);
    snprintf(dir, sizeof dir, "%s/edge", base);
    test_edge(dir);
    snprintf(dir, sizeof dir, "%s/nonfinite", base);
    test_json_nonfinite(dir);
    snprintf(dir, sizeof dir, "%s/full", base);
    test_disk_full(dir);
    test_errors(base);
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
    return pw_test_done("tb_events");
}
