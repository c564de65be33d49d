/* test_task_sets.c: the synthetic task's data sets: files parse as JSONL (jansson), bytes round
 * trip, demonstration error and label-noise rates sit within statistical bounds, determinism. */
#include <jansson.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_task.h"
#include "pw_test.h"

static char dir[256];

/* Reads DIR/name: every line must be an object with exactly these keys, all strings. Returns
 * the records as a JSON array (NULL on failure). */
static json_t *read_jsonl(const char *name, const char *const *keys, int nkeys)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "open %s", path);
    if (!f) return NULL;
    json_t *all = json_array();
    char line[4096];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        json_error_t e;
        json_t *o = json_loads(line, JSON_ALLOW_NUL, &e);
        CHECK(o && json_is_object(o), "%s:%d: %s", name, lineno, o ? "not an object" : e.text);
        if (!o) continue;
        CHECK((int)json_object_size(o) == nkeys, "%s:%d: %zu keys", name, lineno,
              json_object_size(o));
        for (int k = 0; k < nkeys; k++)
            CHECK(json_is_string(json_object_get(o, keys[k])), "%s:%d: %s", name, lineno, keys[k]);
        json_array_append_new(all, o);
    }
    fclose(f);
    return all;
}

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static void test_round_trip(void)
{
    /* every ASCII byte, NUL included, and a multi-byte UTF-8 letter */
    char text[140];
    size_t n = 0;
    for (int c = 0; c < 128; c++) text[n++] = (char)c;
    memcpy(text + n, "\xc3\xa9", 2);
    n += 2;
    char path[512];
    snprintf(path, sizeof path, "%s/bytes.jsonl", dir);
    FILE *f = fopen(path, "w");
    const char *const keys[] = {"prompt", "response"};
    const char *vals[] = {text, "\"\\"};
    size_t lens[] = {n, 2};
    PwErr err;
    CHECK(pw_task_write_record(f, keys, vals, lens, 2, &err) == 0, "write: %s", err.msg);
    const char *bad[] = {"\xff", "x"};
    size_t bad_lens[] = {1, 1};
    CHECK(pw_task_write_record(f, keys, bad, bad_lens, 2, &err) == -1, "invalid UTF-8 refused");
    fclose(f);
    f = fopen(path, "r");
    char line[2048];
    CHECK(fgets(line, sizeof line, f) != NULL, "one line");
    CHECK(strchr(line, '\n') == line + strlen(line) - 1, "a newline only at the end");
    CHECK(fgets(line + 1000, 1000, f) == NULL, "the refused record left nothing behind");
    fclose(f);
    json_error_t e;
    json_t *o = json_loads(line, JSON_ALLOW_NUL, &e);
    CHECK(o != NULL, "parse: %s", e.text);
    if (o) {
        json_t *p = json_object_get(o, "prompt");
        CHECK(json_string_length(p) == n && !memcmp(json_string_value(p), text, n), "bytes back");
        CHECK(!strcmp(str(o, "response"), "\"\\"), "quote and backslash back");
        json_decref(o);
    }
    remove(path);
}

static void test_sets(void)
{
    PwTaskGenOpts o = pw_task_gen_defaults();
    o.out = dir;
    o.seed = 5;
    o.n_train = 300;
    o.n_eval = 200;
    o.n_sft = 3000;
    o.n_valid = 100;
    o.n_pairs = 3000;
    o.sft_error_rate = 0.4;
    o.label_noise = 0.15;
    PwTaskGenStats st;
    PwErr err;
    CHECK(pw_task_write_sets(&o, &st, &err) == 0, "write: %s", err.msg);

    static const char *const kp[] = {"prompt"}, *const ks[] = {"prompt", "response"},
                             *const kr[] = {"prompt", "chosen", "rejected"};
    json_t *eval = read_jsonl("prompts_eval.jsonl", kp, 1);
    json_t *train = read_jsonl("prompts_train.jsonl", kp, 1);
    json_t *sft = read_jsonl("sft_train.jsonl", ks, 2);
    json_t *sftv = read_jsonl("sft_valid.jsonl", ks, 2);
    json_t *prefs = read_jsonl("prefs_train.jsonl", kr, 3);
    json_t *prefv = read_jsonl("prefs_valid.jsonl", kr, 3);
    if (!eval || !train || !sft || !sftv || !prefs || !prefv) return;
    CHECK(json_array_size(eval) == 200 && json_array_size(train) == 300, "prompt counts");
    CHECK(json_array_size(sft) == 3000 && json_array_size(sftv) == 100, "sft counts");
    CHECK(json_array_size(prefs) == 3000 && json_array_size(prefv) == 100, "pair counts");

    /* evaluation prompts: distinct, and in no other set */
    size_t i, j;
    json_t *a, *b;
    json_array_foreach(eval, i, a) {
        const char *p = str(a, "prompt");
        size_t len = strlen(p);
        CHECK(len >= 4 && len <= 8, "eval prompt '%s'", p);
        for (j = i + 1; j < json_array_size(eval); j++)
            CHECK(strcmp(p, str(json_array_get(eval, j), "prompt")), "'%s' twice", p);
        json_t *sets[] = {train, sft, sftv, prefs, prefv};
        for (size_t s = 0; s < PW_ARRAY_LEN(sets); s++)
            json_array_foreach(sets[s], j, b) CHECK(strcmp(p, str(b, "prompt")), "'%s' leaked", p);
    }

    /* demonstrations: 40% carry 1 or 2 errors (gold 0.5 or 0.25), the rest are exact */
    int corrupted = 0, two = 0;
    double gsum = 0;
    json_array_foreach(sft, i, a) {
        const char *p = str(a, "prompt"), *r = str(a, "response");
        double g = pw_task_gold(p, strlen(p), r, strlen(r));
        CHECK(g == 1.0 || g == 0.5 || g == 0.25, "demo '%s' -> '%s': gold %g", p, r, g);
        corrupted += g < 1;
        two += g == 0.25;
        gsum += g;
    }
    double N = 3000, p = 0.4, se = sqrt(p * (1 - p) / N);
    CHECK(fabs(corrupted / N - p) < 5 * se, "corrupted %d of 3000", corrupted);
    CHECK(fabs(two / (double)corrupted - 0.5) < 5 * sqrt(0.25 / corrupted), "two errors %d of %d",
          two, corrupted);
    /* the mean gold of demonstrations: 1 - p + p (0.5 + 0.25) / 2 = 1 - 0.625 p */
    CHECK(fabs(gsum / N - (1 - 0.625 * p)) < 5 * 0.31 * sqrt(p) / sqrt(N), "demo gold %g",
          gsum / N);
    CHECK(st.sft_total == 3100, "stats count train and valid: %d", st.sft_total);

    /* pairs: the sides differ in gold; gold disagrees with the label at the noise rate */
    int flipped = 0, zero_one = 0;
    json_array_foreach(prefs, i, a) {
        const char *q = str(a, "prompt"), *c = str(a, "chosen"), *r = str(a, "rejected");
        double gc = pw_task_gold(q, strlen(q), c, strlen(c));
        double gr = pw_task_gold(q, strlen(q), r, strlen(r));
        CHECK(gc != gr, "pair %zu: equal gold", i);
        CHECK(gc >= 0.125 && gr >= 0.125, "pair %zu: at most 3 errors", i);
        flipped += gc < gr;
        zero_one += (gc == 1 && gr == 0.5) || (gc == 0.5 && gr == 1);
    }
    p = 0.15;
    se = sqrt(p * (1 - p) / N);
    CHECK(fabs(flipped / N - p) < 5 * se, "labels against gold %d of 3000", flipped);
    CHECK(st.pairs_total == 3100 && st.pairs_flipped >= flipped, "stats count train and valid");
    /* error counts weighted 4:3:2:1 for 0..3 errors, sides unequal: P(0 vs 1) = 2*12/70 */
    p = 24.0 / 70;
    CHECK(fabs(zero_one / N - p) < 5 * sqrt(p * (1 - p) / N), "0-vs-1 pairs %d", zero_one);

    /* determinism: the same options write the same files; the eval set ignores other sizes */
    char path[512];
    snprintf(path, sizeof path, "%s/prompts_eval.jsonl", dir);
    char *first = NULL;
    size_t flen = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        first = malloc(1 << 16);
        flen = fread(first, 1, 1 << 16, f);
        fclose(f);
    }
    o.n_train = 50;
    o.n_sft = 10;
    o.n_pairs = 10;
    CHECK(pw_task_write_sets(&o, NULL, &err) == 0, "rewrite: %s", err.msg);
    json_t *sft2 = read_jsonl("sft_train.jsonl", ks, 2);
    f = fopen(path, "r");
    if (f && first) {
        char *again = malloc(1 << 16);
        size_t alen = fread(again, 1, 1 << 16, f);
        CHECK(alen == flen && !memcmp(first, again, flen), "eval prompts unchanged");
        free(again);
    }
    if (f) fclose(f);
    for (i = 0; sft2 && i < json_array_size(sft2); i++)
        CHECK(json_equal(json_array_get(sft2, i), json_array_get(sft, i)), "demo %zu again", i);
    free(first);
    json_decref(sft2);

    /* another seed, other prompts */
    o.seed = 6;
    CHECK(pw_task_write_sets(&o, NULL, &err) == 0, "seed 6: %s", err.msg);
    json_t *eval6 = read_jsonl("prompts_eval.jsonl", kp, 1);
    int same = 0;
    for (i = 0; eval6 && i < json_array_size(eval6); i++)
        same += !strcmp(str(json_array_get(eval6, i), "prompt"),
                        str(json_array_get(eval, i), "prompt"));
    CHECK(same < 3, "seeds 5 and 6 share %d of 200 eval prompts", same);
    json_decref(eval6);

    json_t *summary = json_load_file((snprintf(path, sizeof path, "%s/task.json", dir), path), 0,
                                     NULL);
    CHECK(summary && json_integer_value(json_object_get(summary, "seed")) == 6, "task.json");
    json_decref(summary);
    json_t *sets[] = {eval, train, sft, sftv, prefs, prefv};
    for (size_t s = 0; s < PW_ARRAY_LEN(sets); s++) json_decref(sets[s]);

    /* bad options name the flag */
    o = pw_task_gen_defaults();
    o.out = dir;
    o.label_noise = 1.5;
    CHECK(pw_task_write_sets(&o, NULL, &err) == -1 && strstr(err.msg, "--label-noise"), "noise");
    o = pw_task_gen_defaults();
    o.out = dir;
    o.spec = (PwTaskSpec){1, 1, 2, PW_TASK_REVERSE};
    o.sft_max_errors = o.pair_max_errors = 1;
    o.n_eval = 5; /* only two one-letter prompts exist */
    CHECK(pw_task_write_sets(&o, NULL, &err) == -1 && strstr(err.msg, "too small"), "space");
}

static void test_command(void)
{
    char out[300];
    snprintf(out, sizeof out, "%s/cmd", dir);
    char *ok[] = {"gen-task", "--out", out, "--seed", "3", "--n-train", "4", "--n-eval", "4",
                  "--n-sft", "4", "--n-valid", "2", "--n-pairs", "4", "--label-noise", "0.2"};
    CHECK(pw_task_gen_main((int)PW_ARRAY_LEN(ok), ok) == 0, "gen-task runs");
    char path[400];
    snprintf(path, sizeof path, "%s/prefs_valid.jsonl", out);
    CHECK(access(path, R_OK) == 0, "wrote %s", path);
    char *unknown[] = {"gen-task", "--nope", "1"};
    CHECK(pw_task_gen_main(3, unknown) == 2, "unknown flag");
    char *badn[] = {"gen-task", "--out", out, "--n-sft", "x"};
    CHECK(pw_task_gen_main(5, badn) == 2, "bad count");
    char *noval[] = {"gen-task", "--seed"};
    CHECK(pw_task_gen_main(2, noval) == 2, "missing value");
    char *noout[] = {"gen-task"};
    CHECK(pw_task_gen_main(1, noout) == 1, "no --out");
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/pw_task_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip();
    test_sets();
    test_command();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return pw_test_done("test_task_sets");
}
