/* test_task_arith.c: the arithmetic task on hand-worked sums: answers (signs, zero, the digit
 * limit, malformed prompts refused), the gold and exact scores on bytes and on token rows, the
 * prompts' shape over many draws, digit-only corruptions of an exact distance, and gen-task's
 * arithmetic data sets (exact demonstrations are right, an answer's single digit may be dropped
 * to an empty response, the summary names the task). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "pw_task.h"
#include "pw_test.h"
#include "pw_tokenizer.h"

static const char *answer(const char *prompt, char *buf, size_t cap)
{
    int n = pw_task_answer(prompt, strlen(prompt), buf, cap);
    return n < 0 ? NULL : buf;
}

static void test_answers(void)
{
    static const struct { const char *prompt, *want; } ok[] = {
        {"37+485", "522"},   {"12-40", "-28"},     {"0+0", "0"},         {"5-5", "0"},
        {"99+1", "100"},     {"7-0", "7"},         {"0-999999", "-999999"},
        {"999999+999999", "1999998"},              {"abc", "cba"},       {"x", "x"},
    };
    char buf[32];
    for (size_t i = 0; i < PW_ARRAY_LEN(ok); i++) {
        const char *got = answer(ok[i].prompt, buf, sizeof buf);
        CHECK(got && !strcmp(got, ok[i].want), "%s: got %s want %s", ok[i].prompt,
              got ? got : "(refused)", ok[i].want);
    }
    /* no task prompt: a leading zero, more than 6 digits, no operand, two operators, a sign
     * first, letters among digits, an operator among letters */
    static const char *const bad[] = {"05+1", "1234567+1", "+5", "5+", "1+2+3", "-5+1",
                                      "1a+2", "ab-c", "12", ""};
    for (size_t i = 0; i < PW_ARRAY_LEN(bad); i++)
        CHECK(pw_task_answer(bad[i], strlen(bad[i]), buf, sizeof buf) == (bad[i][0] ? -1 : 0),
              "'%s' accepted", bad[i]);
    CHECK(pw_task_answer("12-40", 5, buf, 2) == -1, "answer without room");
    CHECK(pw_task_answer("12-40", 5, buf, 3) == 3 && !memcmp(buf, "-28", 3), "exact room");
}

static void test_gold(void)
{
    /* 2^-d against the answer "-28" */
    CHECK(pw_task_gold("12-40", 5, "-28", 3) == 1.0, "exact");
    CHECK(pw_task_gold("12-40", 5, "-29", 3) == 0.5, "one digit wrong");
    CHECK(pw_task_gold("12-40", 5, "28", 2) == 0.5, "sign dropped");
    CHECK(pw_task_gold("12-40", 5, "-82", 3) == 0.5, "digits swapped");
    CHECK(pw_task_gold("12-40", 5, "52", 2) == 0.25, "52: sign dropped and a digit wrong");
    CHECK(pw_task_gold("05+1", 4, "6", 1) == 0.0, "no task prompt scores 0");

    /* token rows: "12-40" left-padded + SEP; responses up to EOS then padding */
    enum { P = 8, R = 5 };
    const int S = PW_BYTE_SEP, E = PW_BYTE_EOS, D = PW_BYTE_PAD;
    const int prompt[P] = {D, D, '1', '2', '-', '4', '0', S};
    const int resp[4][R] = {{'-', '2', '8', E, D}, {'-', '2', '9', E, D},
                            {'-', '2', '8', D, D}, {'2', '8', E, D, D}};
    const double want[4] = {1.0, 0.5, 0.0, 0.5}; /* the third has no stop token */
    int prompts[4 * P], correct[4];
    float g[4];
    for (int b = 0; b < 4; b++) memcpy(prompts + b * P, prompt, sizeof prompt);
    int exact = pw_task_gold_rows(prompts, P, &resp[0][0], R, 4, g, correct);
    CHECK(exact == 1, "exact answers %d", exact);
    for (int b = 0; b < 4; b++) {
        CHECK(g[b] == (float)want[b], "row %d: gold %g want %g", b, g[b], want[b]);
        CHECK(correct[b] == (b == 0), "row %d correct %d", b, correct[b]);
    }
    CHECK(pw_task_correct_tokens(prompt, P, resp[0], R) == 1, "correct on tokens");
}

static void test_prompts_and_errors(void)
{
    PwTaskSpec s = pw_task_arith_spec_default();
    PwErr err;
    CHECK(pw_task_spec_check(&s, &err) == 0, "%s", err.msg);
    PwTaskSpec bad = s;
    bad.max_len = PW_TASK_ARITH_MAX_DIGITS + 1;
    CHECK(pw_task_spec_check(&bad, &err) == -1 && strstr(err.msg, "digits"), "7 digits: %s",
          err.msg);
    s.min_len = 2;
    s.max_len = 3;
    int plus = 0, minus = 0, three = 0, neg = 0;
    uint64_t rng = pw_task_stream(7, 0, 0);
    for (int i = 0; i < 2000; i++) {
        char p[PW_TASK_MAX_LEN + 1], ans[PW_TASK_MAX_LEN + 1], out[PW_TASK_MAX_LEN + 1];
        int len = pw_task_prompt(&s, &rng, p);
        long a = 0, b = 0;
        char op = 0;
        int used = 0;
        CHECK(len == (int)strlen(p) && sscanf(p, "%ld%c%ld%n", &a, &op, &b, &used) == 3 &&
                  used == len, "prompt '%s'", p);
        CHECK(a >= 10 && a <= 999 && b >= 10 && b <= 999, "operands of 2..3 digits: '%s'", p);
        plus += op == '+';
        minus += op == '-';
        three += a >= 100;
        int alen = pw_task_answer(p, (size_t)len, ans, sizeof ans);
        CHECK(alen > 0 && atol(ans) == (op == '+' ? a + b : a - b), "'%s' = '%s'", p, ans);
        neg += ans[0] == '-';
        /* k errors: exactly distance k, digits only besides the answer's own sign */
        int k = 1 + i % 2;
        int n = pw_task_corrupt(&s, ans, alen, k, &rng, out);
        CHECK(n >= 0 && pw_task_distance(out, (size_t)n, ans, (size_t)alen) == (size_t)k,
              "%d errors in '%s': '%s'", k, ans, n >= 0 ? out : "(none)");
        for (int j = 0; j < n; j++)
            CHECK((out[j] >= '0' && out[j] <= '9') || (out[j] == '-' && ans[0] == '-'),
                  "'%s' from '%s': character %c", out, ans, out[j]);
    }
    /* each operator and each length about half the time (1000 +- 3 * 22) */
    CHECK(plus > 930 && minus > 930, "+ %d, - %d", plus, minus);
    CHECK(three > 930 && three < 1070, "three-digit operands %d", three);
    /* a - b < 0 in a little under a quarter of all (a < b half the time, less ties): 500 +- 60 */
    CHECK(neg > 430 && neg < 560, "negative results %d", neg);
}

static void test_sets(void)
{
    char dir[] = "/tmp/pw_arith_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    PwTaskGenOpts o = pw_task_gen_defaults();
    o.out = dir;
    o.spec = pw_task_arith_spec_default();
    o.n_train = 64, o.n_eval = 64, o.n_sft = 200, o.n_valid = 16, o.n_pairs = 50;
    o.pair_max_errors = 2;
    PwErr err;
    PwTaskGenStats st;
    CHECK(pw_task_write_sets(&o, &st, &err) == 0, "%s", err.msg);
    char path[256];
    snprintf(path, sizeof path, "%s/sft_train.jsonl", dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "%s", path);
    char line[256];
    int exact = 0, total = 0;
    while (f && fgets(line, sizeof line, f)) {
        char ans[32];
        json_t *j = json_loads(line, 0, NULL);
        const char *p = json_string_value(json_object_get(j, "prompt"));
        const char *r = json_string_value(json_object_get(j, "response"));
        CHECK(p && r, "record %s", line);
        if (!p || !r) {
            json_decref(j);
            continue;
        }
        int alen = pw_task_answer(p, strlen(p), ans, sizeof ans);
        CHECK(alen > 0, "prompt '%s'", p);
        exact += alen == (int)strlen(r) && !memcmp(ans, r, (size_t)alen);
        total++;
        json_decref(j);
    }
    if (f) fclose(f);
    CHECK(total == 200, "%d demonstrations", total);
    /* half the demonstrations are exact (error rate 0.5): 100 +- 3 * 7 */
    CHECK(exact > 75 && exact < 125, "%d exact demonstrations", exact);
    snprintf(path, sizeof path, "%s/task.json", dir);
    f = fopen(path, "r");
    char buf[4096] = "";
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    CHECK(strstr(buf, "\"task\": \"arithmetic\"") != NULL, "task.json: %s", buf);
    o.sft_max_errors = 3;
    CHECK(pw_task_write_sets(&o, &st, &err) == -1 && strstr(err.msg, "--sft-max-errors 3") &&
              strstr(err.msg, "1..2"), "3 errors: %s", err.msg);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "%s", cmd);
}

int main(void)
{
    test_answers();
    test_gold();
    test_prompts_and_errors();
    test_sets();
    return pw_test_done("task_arith");
}
