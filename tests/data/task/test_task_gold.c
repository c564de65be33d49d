/* test_task_gold.c: the synthetic task's gold scorer on hand-worked examples (each kind of error,
 * missing stop token, empty and garbage responses), its token-id form, prompts and corruptions. */
#include <stdint.h>

#include "pw_task.h"
#include "pw_test.h"
#include "pw_tokenizer.h"

static double gold(const char *prompt, const char *response)
{
    return pw_task_gold(prompt, strlen(prompt), response, strlen(response));
}

static size_t dist(const char *a, const char *b)
{
    return pw_task_distance(a, strlen(a), b, strlen(b));
}

static void test_distance(void)
{
    CHECK(dist("", "") == 0, "empty");
    CHECK(dist("", "abc") == 3, "insertions only");
    CHECK(dist("abc", "") == 3, "deletions only");
    CHECK(dist("kitten", "sitting") == 3, "two substitutions and an insertion");
    CHECK(dist("ab", "ba") == 1, "one swap of neighbours");
    /* optimal string alignment edits no substring twice: ca -> abc is 3, not Damerau's 2 */
    CHECK(dist("ca", "abc") == 3, "got %zu", dist("ca", "abc"));
    /* abcd -> dcba: swap the middle (acbd), then substitute both ends */
    CHECK(dist("abcd", "dcba") == 3, "got %zu", dist("abcd", "dcba"));
    CHECK(dist("dcba", "abcd") == 3, "symmetric");
    /* bytes beyond ASCII and NUL are characters like any other */
    CHECK(pw_task_distance("a\0b", 3, "a\0c", 3) == 1, "NUL inside");
    CHECK(dist("\xff\x80", "\x80\xff") == 1, "high bytes swap");
    /* longer than the stack buffers */
    char a[200], b[200];
    memset(a, 'x', sizeof a);
    memcpy(b, a, sizeof b);
    b[100] = 'y';
    CHECK(pw_task_distance(a, sizeof a, b, sizeof b) == 1, "long strings");
    CHECK(pw_task_distance(a, sizeof a, b, 50) == 150, "long against short");
}

static void test_gold_strings(void)
{
    /* prompt abcd, answer dcba */
    CHECK(gold("abcd", "dcba") == 1.0, "perfect");
    CHECK(gold("abcd", "dcbx") == 0.5, "substitution");
    CHECK(gold("abcd", "dca") == 0.5, "deletion");
    CHECK(gold("abcd", "dcbba") == 0.5, "insertion");
    CHECK(gold("abcd", "xdcba") == 0.5, "insertion at the front");
    CHECK(gold("abcd", "cdba") == 0.5, "swap of neighbours");
    CHECK(gold("abcd", "cdbx") == 0.25, "swap and substitution");
    CHECK(gold("abcd", "dc") == 0.25, "two deletions");
    CHECK(gold("abcd", "abcd") == 0.125, "the prompt copied, not reversed: 3 edits");
    CHECK(gold("abcd", "") == 0.0625, "empty response: 4 insertions away");
    CHECK(gold("abcd", "zzzzzzzz") == 1.0 / 256, "garbage: 4 substitutions, 4 deletions");
    CHECK(gold("", "") == 1.0, "empty prompt, empty answer");
    CHECK(gold("a", "a") == 1.0, "one letter");
    double g = gold("abcdefgh", "hgfedcba");
    CHECK(g == 1.0, "eight letters %g", g);
    /* any bytes: the answer is the reversed bytes, whatever they are */
    CHECK(pw_task_gold("x\"\\\n", 4, "\n\\\"x", 4) == 1.0, "quotes and backslashes");
    for (int i = 0; i < 40; i++) {
        char s[41];
        memset(s, 'q', sizeof s);
        double want = 1.0;
        for (int k = 0; k < i; k++) want *= 0.5;
        CHECK(pw_task_gold("q", 1, s, (size_t)i + 1) == want, "%d extra letters", i);
    }
}

static void test_gold_tokens(void)
{
    const int S = PW_BYTE_SEP, E = PW_BYTE_EOS, P = PW_BYTE_PAD;
    int prompt[] = {P, P, 'a', 'b', 'c', 'd', S};
    int np = 7;
    int perfect[] = {'d', 'c', 'b', 'a', E, P, P};
    CHECK(pw_task_gold_tokens(prompt, np, perfect, 7) == 1.0, "perfect, padded");
    CHECK(pw_task_correct_tokens(prompt, np, perfect, 7) == 1, "correct");
    int after[] = {'d', 'c', 'b', 'a', E, 'x', 'y'};
    CHECK(pw_task_gold_tokens(prompt, np, after, 7) == 1.0, "tokens after EOS ignored");
    int nostop[] = {'d', 'c', 'b', 'a'};
    CHECK(pw_task_gold_tokens(prompt, np, nostop, 4) == 0.0, "no EOS: no answer");
    CHECK(pw_task_correct_tokens(prompt, np, nostop, 4) == 0, "no EOS: not correct");
    CHECK(pw_task_gold_tokens(prompt, np, nostop, 0) == 0.0, "no tokens at all");
    int empty[] = {E, P, P};
    CHECK(pw_task_gold_tokens(prompt, np, empty, 3) == 0.0625, "empty response");
    int subst[] = {'d', 'c', 'x', 'a', E};
    CHECK(pw_task_gold_tokens(prompt, np, subst, 5) == 0.5, "substitution");
    CHECK(pw_task_correct_tokens(prompt, np, subst, 5) == 0, "one error is not correct");
    int del[] = {'d', 'b', 'a', E};
    CHECK(pw_task_gold_tokens(prompt, np, del, 4) == 0.5, "deletion");
    int ins[] = {'d', 'c', 'b', 'a', 'a', E};
    CHECK(pw_task_gold_tokens(prompt, np, ins, 6) == 0.5, "insertion");
    int swap[] = {'d', 'b', 'c', 'a', E};
    CHECK(pw_task_gold_tokens(prompt, np, swap, 5) == 0.5, "swap");
    int special[] = {'d', 'c', S, 'a', E};
    CHECK(pw_task_gold_tokens(prompt, np, special, 5) == 0.5, "a special token is a wrong letter");
    int pad_in[] = {'d', 'c', P, 'b', 'a', E};
    CHECK(pw_task_gold_tokens(prompt, np, pad_in, 6) == 0.5, "padding inside is an insertion");
    /* the prompt's SEP and padding are optional */
    int bare[] = {'a', 'b', 'c', 'd'};
    CHECK(pw_task_gold_tokens(bare, 4, perfect, 7) == 1.0, "prompt without SEP");
    int bad_prompt[] = {'a', E, 'c', S};
    CHECK(pw_task_gold_tokens(bad_prompt, 4, perfect, 7) == 0.0, "EOS inside the prompt");
    /* a block of rows, as the reward role holds it: (3, 7) prompts, (3, 7) responses */
    int rows_p[3 * 7], rows_r[3 * 7];
    for (int b = 0; b < 3; b++) memcpy(rows_p + b * 7, prompt, sizeof prompt);
    memcpy(rows_r, perfect, sizeof perfect);
    int sub7[] = {'d', 'c', 'x', 'a', E, P, P};
    memcpy(rows_r + 7, sub7, sizeof sub7);
    memcpy(rows_r + 14, after, sizeof after);
    rows_r[14 + 4] = 'q'; /* no EOS left in the third row */
    float g3[3];
    int c3[3];
    CHECK(pw_task_gold_rows(rows_p, 7, rows_r, 7, 3, g3, c3) == 1, "one exact row");
    CHECK(g3[0] == 1.0f && g3[1] == 0.5f && g3[2] == 0.0f, "rows %g %g %g", g3[0], g3[1], g3[2]);
    CHECK(c3[0] == 1 && c3[1] == 0 && c3[2] == 0, "correct flags");
    CHECK(pw_task_gold_rows(rows_p, 7, rows_r, 7, 2, g3, NULL) == 1, "correct may be NULL");

    /* the token form agrees with the string form on random strings */
    uint64_t rng = pw_task_stream(3, 4, 5);
    PwTaskSpec sp = {1, 12, 4, PW_TASK_REVERSE};
    for (int i = 0; i < 500; i++) {
        char p[PW_TASK_MAX_LEN + 1], r[PW_TASK_MAX_LEN + 1];
        int pl = pw_task_prompt(&sp, &rng, p), rl = pw_task_prompt(&sp, &rng, r);
        int pt[PW_TASK_MAX_LEN + 1], rt[PW_TASK_MAX_LEN + 1];
        for (int j = 0; j < pl; j++) pt[j] = p[j];
        pt[pl] = S;
        for (int j = 0; j < rl; j++) rt[j] = r[j];
        rt[rl] = E;
        double a = pw_task_gold(p, (size_t)pl, r, (size_t)rl);
        double b = pw_task_gold_tokens(pt, pl + 1, rt, rl + 1);
        CHECK(a == b, "'%s' -> '%s': %g vs %g", p, r, a, b);
    }
}

static void test_prompts(void)
{
    PwTaskSpec sp = pw_task_spec_default();
    PwErr err;
    CHECK(pw_task_spec_check(&sp, &err) == 0, "default spec");
    PwTaskSpec bad = {5, 4, 26, PW_TASK_REVERSE};
    CHECK(pw_task_spec_check(&bad, &err) == -1, "min > max");
    bad = (PwTaskSpec){1, PW_TASK_MAX_LEN + 1, 26, PW_TASK_REVERSE};
    CHECK(pw_task_spec_check(&bad, &err) == -1, "too long");
    bad = (PwTaskSpec){1, 4, 27, PW_TASK_REVERSE};
    CHECK(pw_task_spec_check(&bad, &err) == -1, "alphabet");
    /* the same stream gives the same prompt; another seed another */
    int counts[PW_TASK_MAX_LEN + 1] = {0}, same = 0;
    const int N = 4000;
    for (int i = 0; i < N; i++) {
        char a[PW_TASK_MAX_LEN + 1], b[PW_TASK_MAX_LEN + 1], c[PW_TASK_MAX_LEN + 1];
        uint64_t r1 = pw_task_stream(11, 1, (uint64_t)i), r2 = pw_task_stream(11, 1, (uint64_t)i);
        uint64_t r3 = pw_task_stream(12, 1, (uint64_t)i);
        int la = pw_task_prompt(&sp, &r1, a), lb = pw_task_prompt(&sp, &r2, b);
        pw_task_prompt(&sp, &r3, c);
        CHECK(la == lb && !strcmp(a, b), "determinism at %d", i);
        same += !strcmp(a, c);
        CHECK(la >= sp.min_len && la <= sp.max_len && (int)strlen(a) == la, "length %d", la);
        for (int j = 0; j < la; j++) CHECK(a[j] >= 'a' && a[j] <= 'z', "letter %d", a[j]);
        counts[la]++;
    }
    CHECK(same < 5, "seeds 11 and 12 agree on %d prompts", same);
    /* lengths uniform over 4..8: each 1/5, within 5 standard errors */
    double p = 0.2, se = sqrt(p * (1 - p) / N);
    for (int l = sp.min_len; l <= sp.max_len; l++)
        CHECK(fabs(counts[l] / (double)N - p) < 5 * se, "length %d: %d of %d", l, counts[l], N);
    /* pinned: the first evaluation prompt of seed 1 (stream (1, 1, 0)), so that a change to the
     * streams, which would change every data set, cannot pass unnoticed */
    uint64_t r = pw_task_stream(1, 1, 0);
    char first[PW_TASK_MAX_LEN + 1];
    pw_task_prompt(&sp, &r, first);
    CHECK(!strcmp(first, "umlz"), "stream (1, 1, 0) gave '%s'", first);
    char ans[8];
    CHECK(pw_task_answer("abc", 3, ans, sizeof ans) == 3 && !strcmp(ans, "cba"), "answer");
    CHECK(pw_task_answer("abc", 3, ans, 2) == -1, "answer without room");
}

static void test_corruptions(void)
{
    PwTaskSpec sp = pw_task_spec_default();
    uint64_t rng = pw_task_stream(21, 0, 0);
    /* each kind on distinct letters is one edit: gold exactly 0.5 */
    for (int kind = 0; kind < PW_TASK_NUM_ERR; kind++) {
        for (int i = 0; i < 200; i++) {
            char s[PW_TASK_MAX_LEN + 1] = "hgfedcba";
            int len = pw_task_apply_error(&sp, s, 8, kind, &rng);
            CHECK(len == 8 + (kind == PW_TASK_ERR_INSERT) - (kind == PW_TASK_ERR_DELETE),
                  "kind %d length %d", kind, len);
            double g = pw_task_gold("abcdefgh", 8, s, (size_t)len);
            /* an inserted letter next to its twin is still one edit; so is every other kind */
            CHECK(g == 0.5, "kind %d: '%.*s' gold %g", kind, len, s, g);
        }
    }
    char s[PW_TASK_MAX_LEN + 1] = "";
    CHECK(pw_task_apply_error(&sp, s, 0, PW_TASK_ERR_DELETE, &rng) == -1, "delete from empty");
    CHECK(pw_task_apply_error(&sp, s, 1, PW_TASK_ERR_SWAP, &rng) == -1, "swap one letter");
    memset(s, 'a', PW_TASK_MAX_LEN);
    CHECK(pw_task_apply_error(&sp, s, PW_TASK_MAX_LEN, PW_TASK_ERR_INSERT, &rng) == -1,
          "insert at full length");
    /* exactly k errors: gold exactly 2^-k, for every prompt length */
    for (int k = 0; k <= 3; k++) {
        for (int i = 0; i < 300; i++) {
            char p[PW_TASK_MAX_LEN + 1], ans[PW_TASK_MAX_LEN + 1], out[PW_TASK_MAX_LEN + 1];
            int len = pw_task_prompt(&sp, &rng, p);
            pw_task_answer(p, (size_t)len, ans, sizeof ans);
            int n = pw_task_corrupt(&sp, ans, len, k, &rng, out);
            CHECK(n >= 0 && (int)strlen(out) == n, "k %d length %d", k, n);
            CHECK(pw_task_gold(p, (size_t)len, out, (size_t)n) == ldexp(1.0, -k),
                  "k %d: '%s' for '%s'", k, out, ans);
        }
    }
    /* one letter of a two-letter alphabet still takes two errors; more than 16 cannot be had
     * within PW_TASK_MAX_LEN letters */
    PwTaskSpec tiny = {1, 1, 2, PW_TASK_REVERSE};
    char out[PW_TASK_MAX_LEN + 1];
    CHECK(pw_task_corrupt(&tiny, "a", 1, 2, &rng, out) >= 0, "two errors in one letter");
    CHECK(pw_task_corrupt(&tiny, "a", 1, PW_TASK_MAX_LEN + 5, &rng, out) == -1, "impossible");
}

int main(void)
{
    test_distance();
    test_gold_strings();
    test_gold_tokens();
    test_prompts();
    test_corruptions();
    return pw_test_done("test_task_gold");
}
