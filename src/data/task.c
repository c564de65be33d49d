/* task.c: the synthetic tasks (reverse a string of letters; arithmetic, whose own part is
 * task_arith.c): prompts from a seed, the gold scorer, the corruption model and the writer of
 * their JSONL data sets (docs/task.md). */
#include <errno.h>
#include <limits.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_cli.h"
#include "pw_file.h"
#include "pw_generate.h"
#include "pw_rng.h"
#include "pw_task.h"
#include "pw_tokenizer.h"

/* ------------------------------------------------------------------------------ the spec */

PwTaskSpec pw_task_spec_default(void)
{
    PwTaskSpec s = {4, 8, 26, PW_TASK_REVERSE};
    return s;
}

PwTaskSpec pw_task_arith_spec_default(void)
{
    PwTaskSpec s = {1, 2, 10, PW_TASK_ARITHMETIC};
    return s;
}

int pw_task_spec_check(const PwTaskSpec *s, PwErr *err)
{
    if (s->kind == PW_TASK_ARITHMETIC) {
        if (s->min_len < 1 || s->min_len > s->max_len || s->max_len > PW_TASK_ARITH_MAX_DIGITS)
            return pw_errf(err, "arithmetic operands of %d..%d digits: expected 1 <= min <= max "
                                "<= %d", s->min_len, s->max_len, PW_TASK_ARITH_MAX_DIGITS);
        return 0;
    }
    if (s->kind != PW_TASK_REVERSE) return pw_errf(err, "task kind %d: unknown", (int)s->kind);
    if (s->min_len < 1 || s->min_len > s->max_len || s->max_len > PW_TASK_MAX_LEN)
        return pw_errf(err, "task lengths %d..%d: expected 1 <= min <= max <= %d", s->min_len,
                       s->max_len, PW_TASK_MAX_LEN);
    if (s->alphabet < 2 || s->alphabet > 26)
        return pw_errf(err, "task alphabet %d: expected 2..26 letters", s->alphabet);
    return 0;
}

/* ------------------------------------------------------------------------ random streams */

/* Built on the sampler's streams (pw_generate.h): one stream per set, then one per record. */
uint64_t pw_task_stream(uint64_t seed, uint64_t set, uint64_t index)
{
    return pw_sample_stream(pw_sample_stream(seed, set), index);
}

int pw_task_below(uint64_t *state, int n)
{
    int k = (int)(pw_rng_uniform(state) * n);
    return k < n ? k : n - 1;
}

/* ------------------------------------------------------------------- prompts and answers */

int pw_task_prompt(const PwTaskSpec *s, uint64_t *rng, char *out)
{
    if (s->kind == PW_TASK_ARITHMETIC) return pw_task_arith_prompt(s, rng, out);
    int len = s->min_len + pw_task_below(rng, s->max_len - s->min_len + 1);
    for (int i = 0; i < len; i++) out[i] = (char)('a' + pw_task_below(rng, s->alphabet));
    out[len] = '\0';
    return len;
}


/* ------------------------------------------------------------------------ the gold scorer */

/* Optimal string alignment on int sequences (bytes, or token ids where a special token is a
 * character no answer contains). Three rolling rows of nb + 1 cells; SIZE_MAX without memory. */
static size_t osa_distance(const int *a, size_t na, const int *b, size_t nb)
{
    size_t small[3 * 64], *mem = small;
    if (3 * (nb + 1) > PW_ARRAY_LEN(small)) {
        mem = malloc(3 * (nb + 1) * sizeof *mem);
        if (!mem) return SIZE_MAX;
    }
    size_t *prev2 = mem, *prev = mem + nb + 1, *cur = mem + 2 * (nb + 1);
    for (size_t j = 0; j <= nb; j++) prev[j] = j;
    for (size_t i = 1; i <= na; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t d = prev[j - 1] + cost;
            if (prev[j] + 1 < d) d = prev[j] + 1;
            if (cur[j - 1] + 1 < d) d = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1;
            cur[j] = d;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    size_t d = prev[nb];
    if (mem != small) free(mem);
    return d;
}

/* Bytes as ints, in a caller's small buffer or on the heap; NULL without memory. */
static int *bytes_to_ints(const char *s, size_t n, int *small, size_t cap)
{
    int *v = n <= cap ? small : malloc((n ? n : 1) * sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < n; i++) v[i] = (unsigned char)s[i];
    return v;
}

/* The answer of a prompt given as ints, in a caller's small buffer or on the heap (an answer
 * is never longer than its prompt + 1: a sum's result has at most one more digit); NULL for a
 * malformed prompt or without memory. */
static int *answer_of(const int *prompt, size_t n, int *small, size_t cap, int *len)
{
    size_t need = n + 1;
    int *a = need <= cap ? small : malloc(need * sizeof *a);
    if (!a) return NULL;
    *len = n > INT_MAX - 1 ? -1 : pw_task_answer_ints(prompt, (int)n, a, (int)need);
    if (*len < 0) {
        if (a != small) free(a);
        return NULL;
    }
    return a;
}

int pw_task_answer(const char *prompt, size_t plen, char *out, size_t cap)
{
    int sp[64] = {0}, sa[65] = {0}, n = -1;
    int *p = bytes_to_ints(prompt, plen, sp, PW_ARRAY_LEN(sp));
    int *a = p ? answer_of(p, plen, sa, PW_ARRAY_LEN(sa), &n) : NULL;
    if (a && (size_t)n <= cap) {
        for (int i = 0; i < n; i++) out[i] = (char)a[i];
        if (cap > (size_t)n) out[n] = '\0';
    } else {
        n = -1;
    }
    if (p != sp) free(p);
    if (a && a != sa) free(a);
    return n;
}

size_t pw_task_distance(const char *a, size_t na, const char *b, size_t nb)
{
    int sa[64] = {0}, sb[64] = {0};
    int *va = bytes_to_ints(a, na, sa, PW_ARRAY_LEN(sa));
    int *vb = bytes_to_ints(b, nb, sb, PW_ARRAY_LEN(sb));
    size_t d = va && vb ? osa_distance(va, na, vb, nb) : SIZE_MAX;
    if (va != sa) free(va);
    if (vb != sb) free(vb);
    return d;
}

/* 2^-d: each error halves the score, so the first error costs most and a response with one
 * error is worth clearly more than one with two; exact in double for any d a response can have. */
static double gold_of_distance(size_t d)
{
    return d == SIZE_MAX ? 0.0 : ldexp(1.0, d > 2000 ? -2000 : -(int)d);
}

double pw_task_gold(const char *prompt, size_t plen, const char *response, size_t rlen)
{
    int sp[64] = {0}, sa[65] = {0}, sr[64] = {0}, alen = 0;
    int *p = bytes_to_ints(prompt, plen, sp, PW_ARRAY_LEN(sp));
    int *ans = p ? answer_of(p, plen, sa, PW_ARRAY_LEN(sa), &alen) : NULL;
    int *res = bytes_to_ints(response, rlen, sr, PW_ARRAY_LEN(sr));
    double g = ans && res ? gold_of_distance(osa_distance(res, rlen, ans, (size_t)alen)) : 0.0;
    if (p != sp) free(p);
    if (ans && ans != sa) free(ans);
    if (res != sr) free(res);
    return g;
}

/* The distance of a token-id response to its prompt's answer; SIZE_MAX where the score is 0 by
 * rule (no stop token, a foreign special token in the prompt, no memory). */
static size_t token_distance(const int *prompt, int plen, const int *response, int rlen)
{
    int end = plen;
    while (end > 0 && prompt[end - 1] == PW_BYTE_PAD) end--; /* right padding, if any */
    if (end > 0 && prompt[end - 1] == PW_BYTE_SEP) end--;
    int start = 0;
    while (start < end && prompt[start] == PW_BYTE_PAD) start++;
    int rend = 0;
    while (rend < rlen && response[rend] != PW_BYTE_EOS) rend++;
    if (rend == rlen) return SIZE_MAX;
    for (int i = start; i < end; i++)
        if (prompt[i] < 0 || prompt[i] > 255) return SIZE_MAX;
    int small[65], alen = 0;
    int *ans = answer_of(prompt + start, (size_t)(end - start), small, PW_ARRAY_LEN(small), &alen);
    if (!ans) return SIZE_MAX;
    size_t d = osa_distance(response, (size_t)rend, ans, (size_t)alen);
    if (ans != small) free(ans);
    return d;
}

double pw_task_gold_tokens(const int *prompt, int plen, const int *response, int rlen)
{
    return gold_of_distance(token_distance(prompt, plen, response, rlen));
}

int pw_task_correct_tokens(const int *prompt, int plen, const int *response, int rlen)
{
    return token_distance(prompt, plen, response, rlen) == 0;
}

int pw_task_gold_rows(const int *prompt, int P, const int *response, int R, int n, float *gold,
                      int *correct)
{
    int exact = 0;
    for (int b = 0; b < n; b++) {
        size_t d = token_distance(prompt + (size_t)b * P, P, response + (size_t)b * R, R);
        gold[b] = (float)gold_of_distance(d); /* 2^-d is exact in float down to 2^-149 */
        exact += d == 0;
        if (correct) correct[b] = d == 0;
    }
    return exact;
}

/* --------------------------------------------------------------------- the corruption model */

/* The characters of the task's answers: the spec's letters, or the ten digits of arithmetic
 * (whose errors are digits wrong, dropped, added or swapped; a sign is never added). */
static char first_char(const PwTaskSpec *s) { return s->kind == PW_TASK_ARITHMETIC ? '0' : 'a'; }
static int n_chars(const PwTaskSpec *s) { return s->kind == PW_TASK_ARITHMETIC ? 10 : s->alphabet; }

static char other_letter(const PwTaskSpec *s, char c, uint64_t *rng)
{
    /* draw from the alphabet less c, so a substitution always changes the letter */
    char a = first_char(s);
    int in = c >= a && c < a + n_chars(s);
    int k = pw_task_below(rng, n_chars(s) - in);
    if (in && k >= c - a) k++;
    return (char)(a + k);
}

int pw_task_apply_error(const PwTaskSpec *s, char *str, int len, int kind, uint64_t *rng)
{
    switch (kind) {
    case PW_TASK_ERR_SUBST: {
        if (len < 1) return -1;
        int i = pw_task_below(rng, len);
        str[i] = other_letter(s, str[i], rng);
        return len;
    }
    case PW_TASK_ERR_DELETE: {
        if (len < 1) return -1;
        int i = pw_task_below(rng, len);
        memmove(str + i, str + i + 1, (size_t)(len - i - 1));
        return len - 1;
    }
    case PW_TASK_ERR_INSERT: {
        if (len >= PW_TASK_MAX_LEN) return -1;
        int i = pw_task_below(rng, len + 1);
        memmove(str + i + 1, str + i, (size_t)(len - i));
        str[i] = (char)(first_char(s) + pw_task_below(rng, n_chars(s)));
        return len + 1;
    }
    case PW_TASK_ERR_SWAP: {
        if (len < 2) return -1;
        int i = pw_task_below(rng, len - 1);
        char t = str[i];
        str[i] = str[i + 1];
        str[i + 1] = t;
        return len;
    }
    default:
        return -1;
    }
}

/* Random edits can undo each other (insert then delete the same letter) or merge (two swaps),
 * so the copy is redrawn until its distance is exactly k: the error count is then also the
 * gold's exponent, which the tests and the preference labels rely on. */
int pw_task_corrupt(const PwTaskSpec *s, const char *answer, int alen, int k, uint64_t *rng,
                    char *out)
{
    if (alen < 0 || alen > PW_TASK_MAX_LEN || k < 0) return -1;
    for (int attempt = 0; attempt < 1000; attempt++) {
        memcpy(out, answer, (size_t)alen);
        int len = alen, ok = 1;
        for (int e = 0; e < k && ok; e++) {
            int n = -1;
            for (int tries = 0; tries < 16 && n < 0; tries++)
                n = pw_task_apply_error(s, out, len, pw_task_below(rng, PW_TASK_NUM_ERR), rng);
            if (n < 0) ok = 0;
            else len = n;
        }
        if (ok && pw_task_distance(out, (size_t)len, answer, (size_t)alen) == (size_t)k) {
            out[len] = '\0';
            return len;
        }
    }
    return -1;
}

/* ------------------------------------------------------------------------- JSONL records */

int pw_task_write_record(FILE *f, const char *const *keys, const char *const *vals,
                         const size_t *lens, int n, PwErr *err)
{
    json_t *o = json_object();
    if (!o) return pw_errf(err, "out of memory");
    for (int i = 0; i < n; i++) {
        json_t *v = json_stringn(vals[i], lens[i]);
        if (!v || json_object_set_new(o, keys[i], v)) {
            json_decref(o);
            return pw_errf(err, "key '%s': the text is not valid UTF-8", keys[i]);
        }
    }
    char *line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!line) return pw_errf(err, "out of memory");
    int bad = fputs(line, f) < 0 || fputc('\n', f) == EOF;
    free(line);
    return bad ? pw_errf(err, "write failed: %s", strerror(errno)) : 0;
}

/* ------------------------------------------------------------------------------ data sets */

/* Which stream each set draws from (part of the format: changing one changes the data). */
enum { SET_EVAL = 1, SET_TRAIN, SET_SFT_TRAIN, SET_SFT_VALID, SET_PREFS_TRAIN, SET_PREFS_VALID };

PwTaskGenOpts pw_task_gen_defaults(void)
{
    PwTaskGenOpts o;
    memset(&o, 0, sizeof o);
    o.seed = 1;
    o.spec = pw_task_spec_default();
    o.n_train = 2048;
    o.n_eval = 512;
    o.n_sft = 16384;
    o.n_valid = 512;
    o.n_pairs = 16384;
    o.sft_error_rate = 0.5;
    o.sft_max_errors = 2;
    o.pair_max_errors = 3;
    o.label_noise = 0.15;
    return o;
}

/* The evaluation prompts, as a set the training sets draw around: open addressing on the
 * prompt bytes, which are at most PW_TASK_MAX_LEN letters. */
typedef struct PromptSet {
    char (*slot)[PW_TASK_MAX_LEN + 1];
    size_t cap;
} PromptSet;

static size_t prompt_hash(const char *p)
{
    uint64_t h = 1469598103934665603ull;
    for (; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return (size_t)h;
}

/* 1 if p was added, 0 if it was there already. */
static int set_add(PromptSet *s, const char *p)
{
    size_t i = prompt_hash(p) & (s->cap - 1);
    while (s->slot[i][0]) {
        if (!strcmp(s->slot[i], p)) return 0;
        i = (i + 1) & (s->cap - 1);
    }
    strcpy(s->slot[i], p);
    return 1;
}

static int set_has(const PromptSet *s, const char *p)
{
    size_t i = prompt_hash(p) & (s->cap - 1);
    while (s->slot[i][0]) {
        if (!strcmp(s->slot[i], p)) return 1;
        i = (i + 1) & (s->cap - 1);
    }
    return 0;
}

/* A prompt not among the evaluation prompts; -1 if the prompt space is too small to find one. */
static int fresh_prompt(const PwTaskSpec *spec, const PromptSet *held, uint64_t *rng, char *out)
{
    for (int tries = 0; tries < 10000; tries++) {
        int len = pw_task_prompt(spec, rng, out);
        if (!set_has(held, out)) return len;
    }
    return -1;
}

/* Each set is written whole or not at all (pw_file.h): a rerun never reads half a set. */
static int out_open(PwFileOut *o, const char *dir, const char *name, PwErr *err)
{
    char path[1200];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return pw_errf(err, "--out: too long");
    return pw_file_out_open(o, path, err) ? 0 : -1;
}

static int make_dirs(const char *dir, PwErr *err)
{
    char p[1024];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return pw_errf(err, "--out: too long");
    for (char *c = p + 1;; c++) {
        if (*c == '/' || *c == '\0') {
            char keep = *c;
            *c = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST)
                return pw_errf(err, "cannot create folder '%s': %s", p, strerror(errno));
            *c = keep;
            if (!keep) break;
        }
    }
    return 0;
}

static int write_prompts(PwFileOut *f, const PwTaskGenOpts *o, PromptSet *held, int set, int n,
                         PwErr *err)
{
    static const char *const keys[] = {"prompt"};
    char p[PW_TASK_MAX_LEN + 1];
    for (int i = 0; i < n; i++) {
        uint64_t rng = pw_task_stream(o->seed, (uint64_t)set, (uint64_t)i);
        int len = -1;
        if (set == SET_EVAL) {
            /* evaluation prompts are distinct, so that each counts once in the gold mean */
            for (int tries = 0; tries < 10000 && len < 0; tries++) {
                len = pw_task_prompt(&o->spec, &rng, p);
                if (!set_add(held, p)) len = -1;
            }
        } else {
            len = fresh_prompt(&o->spec, held, &rng, p);
        }
        if (len < 0) return pw_errf(err, "the prompt space is too small for %d held-out prompts",
                                    o->n_eval);
        const char *vals[] = {p};
        size_t lens[] = {(size_t)len};
        if (pw_task_write_record(f->f, keys, vals, lens, 1, err)) return -1;
    }
    return 0;
}

static int write_sft(PwFileOut *f, const PwTaskGenOpts *o, const PromptSet *held, int set, int n,
                     PwTaskGenStats *st, PwErr *err)
{
    static const char *const keys[] = {"prompt", "response"};
    char p[PW_TASK_MAX_LEN + 1], ans[PW_TASK_MAX_LEN + 1], resp[PW_TASK_MAX_LEN + 1];
    for (int i = 0; i < n; i++) {
        uint64_t rng = pw_task_stream(o->seed, (uint64_t)set, (uint64_t)i);
        int len = fresh_prompt(&o->spec, held, &rng, p);
        if (len < 0) return pw_errf(err, "the prompt space is too small");
        int alen = pw_task_answer(p, (size_t)len, ans, sizeof ans);
        int k = 0;
        if (pw_rng_uniform(&rng) < o->sft_error_rate)
            k = 1 + pw_task_below(&rng, o->sft_max_errors);
        int rlen = pw_task_corrupt(&o->spec, ans, alen, k, &rng, resp);
        if (rlen < 0) return pw_errf(err, "cannot put %d errors into '%s'", k, ans);
        st->sft_total++;
        st->sft_corrupted += k > 0;
        st->sft_gold_mean += pw_task_gold(p, (size_t)len, resp, (size_t)rlen);
        const char *vals[] = {p, resp};
        size_t lens[] = {(size_t)len, (size_t)rlen};
        if (pw_task_write_record(f->f, keys, vals, lens, 2, err)) return -1;
    }
    return 0;
}

/* Error counts of a pair's two sides, policy-like: few errors are likelier than many
 * (weight pair_max_errors + 1 - k for k errors), and the two counts differ so that gold
 * always prefers one side. */
static int pair_errors(const PwTaskGenOpts *o, uint64_t *rng)
{
    int m = o->pair_max_errors, total = (m + 1) * (m + 2) / 2;
    int u = pw_task_below(rng, total);
    for (int k = 0; k <= m; k++) {
        u -= m + 1 - k;
        if (u < 0) return k;
    }
    return m;
}

static int write_prefs(PwFileOut *f, const PwTaskGenOpts *o, const PromptSet *held, int set, int n,
                       PwTaskGenStats *st, PwErr *err)
{
    static const char *const keys[] = {"prompt", "chosen", "rejected"};
    char p[PW_TASK_MAX_LEN + 1], ans[PW_TASK_MAX_LEN + 1];
    char a[PW_TASK_MAX_LEN + 1], b[PW_TASK_MAX_LEN + 1];
    for (int i = 0; i < n; i++) {
        uint64_t rng = pw_task_stream(o->seed, (uint64_t)set, (uint64_t)i);
        int len = fresh_prompt(&o->spec, held, &rng, p);
        if (len < 0) return pw_errf(err, "the prompt space is too small");
        int alen = pw_task_answer(p, (size_t)len, ans, sizeof ans);
        int ka, kb;
        do { /* both redrawn: the pair is the weighted draw conditioned on ka != kb */
            ka = pair_errors(o, &rng);
            kb = pair_errors(o, &rng);
        } while (ka == kb);
        int la = pw_task_corrupt(&o->spec, ans, alen, ka, &rng, a);
        int lb = pw_task_corrupt(&o->spec, ans, alen, kb, &rng, b);
        if (la < 0 || lb < 0)
            return pw_errf(err, "cannot put %d errors into '%s'", ka > kb ? ka : kb, ans);
        int flip = pw_rng_uniform(&rng) < o->label_noise;
        /* gold prefers the side with fewer errors; label noise exchanges the two */
        int a_chosen = (ka < kb) != flip;
        st->pairs_total++;
        st->pairs_flipped += flip;
        const char *vals[] = {p, a_chosen ? a : b, a_chosen ? b : a};
        size_t lens[] = {(size_t)len, (size_t)(a_chosen ? la : lb), (size_t)(a_chosen ? lb : la)};
        if (pw_task_write_record(f->f, keys, vals, lens, 3, err)) return -1;
    }
    return 0;
}

static int check_opts(const PwTaskGenOpts *o, PwErr *err)
{
    if (!o->out || !*o->out) return pw_errf(err, "--out DIR is required");
    if (pw_task_spec_check(&o->spec, err)) return -1;
    if (o->n_train < 0 || o->n_eval < 0 || o->n_sft < 0 || o->n_valid < 0 || o->n_pairs < 0)
        return pw_errf(err, "set sizes must be >= 0");
    if (!(o->sft_error_rate >= 0 && o->sft_error_rate <= 1))
        return pw_errf(err, "--sft-error-rate %g: expected 0..1", o->sft_error_rate);
    if (!(o->label_noise >= 0 && o->label_noise <= 1))
        return pw_errf(err, "--label-noise %g: expected 0..1", o->label_noise);
    /* the shortest answer: min-len letters reversed, or a single digit of arithmetic ("5-5");
     * any answer takes at least 2 errors (a substitution and an insertion) */
    int most = o->spec.kind == PW_TASK_ARITHMETIC ? 2 : o->spec.min_len;
    const char *what = o->spec.kind == PW_TASK_ARITHMETIC ? "arithmetic" : "min-len";
    if (o->sft_max_errors < 1 || o->sft_max_errors > most)
        return pw_errf(err, "--sft-max-errors %d: expected 1..%d (%s)", o->sft_max_errors, most,
                       what);
    if (o->pair_max_errors < 1 || o->pair_max_errors > most)
        return pw_errf(err, "--pair-max-errors %d: expected 1..%d (%s)", o->pair_max_errors,
                       most, what);
    return 0;
}

static int write_summary(const PwTaskGenOpts *o, const PwTaskGenStats *st, PwErr *err)
{
    PwFileOut f = {0};
    if (out_open(&f, o->out, "task.json", err)) return -1;
    json_t *j = json_pack(
        "{s:s, s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:i, s:i, s:f, s:{s:i, s:i, s:f, "
        "s:i, s:i}}",
        "task", o->spec.kind == PW_TASK_ARITHMETIC ? "arithmetic" : "reverse", "seed", (json_int_t)o->seed, "min_len", o->spec.min_len, "max_len",
        o->spec.max_len, "alphabet", o->spec.alphabet, "n_train", o->n_train, "n_eval", o->n_eval,
        "n_sft", o->n_sft, "n_valid", o->n_valid, "n_pairs", o->n_pairs, "sft_error_rate",
        o->sft_error_rate, "sft_max_errors", o->sft_max_errors, "pair_max_errors",
        o->pair_max_errors, "label_noise", o->label_noise, "drawn", "sft", st->sft_total,
        "sft_corrupted", st->sft_corrupted, "sft_gold_mean", st->sft_gold_mean, "pairs",
        st->pairs_total, "pairs_flipped", st->pairs_flipped);
    size_t flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10);
    int bad = !j || json_dumpf(j, f.f, flags) != 0 || fputc('\n', f.f) == EOF;
    json_decref(j);
    if (bad) pw_errf(err, "cannot write '%s'", f.path);
    return pw_file_out_close(&f, bad, err);
}

int pw_task_write_sets(const PwTaskGenOpts *o, PwTaskGenStats *stats, PwErr *err)
{
    PwTaskGenStats st;
    memset(&st, 0, sizeof st);
    if (check_opts(o, err) || make_dirs(o->out, err)) return -1;
    PromptSet held = {NULL, 16};
    while (held.cap < 2 * (size_t)o->n_eval + 2) held.cap *= 2;
    held.slot = calloc(held.cap, sizeof *held.slot);
    if (!held.slot) return pw_errf(err, "out of memory");

    static const char *const names[] = {"prompts_eval.jsonl", "prompts_train.jsonl",
                                        "sft_train.jsonl", "sft_valid.jsonl",
                                        "prefs_train.jsonl", "prefs_valid.jsonl"};
    /* the evaluation prompts come first: every other set is drawn around them */
    int rc = 0;
    for (int s = SET_EVAL; s <= SET_PREFS_VALID && !rc; s++) {
        PwFileOut f = {0};
        if (out_open(&f, o->out, names[s - SET_EVAL], err)) {
            rc = -1;
            break;
        }
        int bad;
        switch (s) {
        case SET_EVAL: bad = write_prompts(&f, o, &held, s, o->n_eval, err); break;
        case SET_TRAIN: bad = write_prompts(&f, o, &held, s, o->n_train, err); break;
        case SET_SFT_TRAIN: bad = write_sft(&f, o, &held, s, o->n_sft, &st, err); break;
        case SET_SFT_VALID: bad = write_sft(&f, o, &held, s, o->n_valid, &st, err); break;
        case SET_PREFS_TRAIN: bad = write_prefs(&f, o, &held, s, o->n_pairs, &st, err); break;
        default: bad = write_prefs(&f, o, &held, s, o->n_valid, &st, err); break;
        }
        rc = pw_file_out_close(&f, bad, err);
    }
    free(held.slot);
    if (st.sft_total) st.sft_gold_mean /= st.sft_total;
    if (!rc) rc = write_summary(o, &st, err);
    if (stats) *stats = st;
    return rc;
}

/* ---------------------------------------------------------------------------- the command */

static void gen_usage(FILE *f)
{
    PwTaskGenOpts d = pw_task_gen_defaults();
    fprintf(f,
            "usage: ppo_world gen-task --out DIR [options]\n"
            "  writes the synthetic task's data sets (docs/task.md) into DIR\n"
            "  --task T             reverse (letters reversed) | arithmetic (sums and\n"
            "                       differences; --min-len/--max-len then count digits per\n"
            "                       operand, 1..2 by default, at most %d) (reverse)\n"
            "  --seed S             random seed (%llu)\n"
            "  --n-train N          PPO training prompts (%d)\n"
            "  --n-eval N           held-out gold evaluation prompts (%d)\n"
            "  --n-sft N            SFT demonstrations (%d)\n"
            "  --n-valid N          records in sft_valid and in prefs_valid (%d)\n"
            "  --n-pairs N          reward-model preference pairs (%d)\n"
            "  --sft-error-rate P   fraction of demonstrations with errors (%g)\n"
            "  --sft-max-errors K   a corrupted demonstration has 1..K errors (%d)\n"
            "  --pair-max-errors K  each side of a pair has 0..K errors (%d)\n"
            "  --label-noise P      fraction of pairs with chosen and rejected exchanged (%g)\n"
            "  --min-len N, --max-len N  letters per prompt (%d, %d; at most %d)\n"
            "  --alphabet N         letters a.. used (%d; 2..26)\n",
            PW_TASK_ARITH_MAX_DIGITS, (unsigned long long)d.seed, d.n_train, d.n_eval, d.n_sft, d.n_valid, d.n_pairs,
            d.sft_error_rate, d.sft_max_errors, d.pair_max_errors, d.label_noise,
            d.spec.min_len, d.spec.max_len, PW_TASK_MAX_LEN, d.spec.alphabet);
}

static int parse_int(const char *flag, const char *v, int *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!*v || *end || errno || n < 0 || n > 100000000) {
        fprintf(stderr, "ppo_world gen-task: %s %s: expected a count\n", flag, v);
        return -1;
    }
    *out = (int)n;
    return 0;
}

static int parse_real(const char *flag, const char *v, double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end) {
        fprintf(stderr, "ppo_world gen-task: %s %s: expected a number\n", flag, v);
        return -1;
    }
    *out = x;
    return 0;
}

static int gen_bad_usage(const char *msg)
{
    fprintf(stderr, "ppo_world gen-task: %s\n", msg);
    gen_usage(stderr);
    return 2;
}

int pw_task_gen_main(int argc, char **argv)
{
    PwTaskGenOpts o = pw_task_gen_defaults();
    /* Count flags carry val F_COUNT + their index in counts[]. */
    enum { F_OUT = 256, F_TASK, F_SEED, F_ERROR_RATE, F_LABEL_NOISE, F_COUNT };
    static const struct option flags[] = {
        {"out", required_argument, NULL, F_OUT},
        {"task", required_argument, NULL, F_TASK},
        {"seed", required_argument, NULL, F_SEED},
        {"sft-error-rate", required_argument, NULL, F_ERROR_RATE},
        {"label-noise", required_argument, NULL, F_LABEL_NOISE},
        {"n-train", required_argument, NULL, F_COUNT + 0},
        {"n-eval", required_argument, NULL, F_COUNT + 1},
        {"n-sft", required_argument, NULL, F_COUNT + 2},
        {"n-valid", required_argument, NULL, F_COUNT + 3},
        {"n-pairs", required_argument, NULL, F_COUNT + 4},
        {"sft-max-errors", required_argument, NULL, F_COUNT + 5},
        {"pair-max-errors", required_argument, NULL, F_COUNT + 6},
        {"min-len", required_argument, NULL, F_COUNT + 7},
        {"max-len", required_argument, NULL, F_COUNT + 8},
        {"alphabet", required_argument, NULL, F_COUNT + 9},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int *counts[] = {&o.n_train, &o.n_eval, &o.n_sft, &o.n_valid, &o.n_pairs,
                     &o.sft_max_errors, &o.pair_max_errors, &o.spec.min_len, &o.spec.max_len,
                     &o.spec.alphabet};
    /* --min-len, --max-len, --pair-max-errors given: else the chosen task's own defaults */
    int lens_given = 0, pair_errors_given = 0;
    PwCli cli;
    pw_cli_init(&cli, argc, argv, "h", flags);
    for (int c; (c = pw_cli_next(&cli)) != PW_CLI_END;) {
        char flag[32];
        pw_cli_flag(&cli, c, flag, sizeof flag);
        int bad = 0;
        if (c == 'h') {
            gen_usage(stdout);
            return 0;
        } else if (c == PW_CLI_ERROR) {
            return gen_bad_usage(cli.msg);
        } else if (c == PW_CLI_OPERAND) {
            char msg[300];
            snprintf(msg, sizeof msg, "unexpected argument '%s'", cli.arg);
            return gen_bad_usage(msg);
        } else if (c == F_OUT) {
            o.out = cli.arg;
        } else if (c == F_TASK) {
            if (!strcmp(cli.arg, "reverse")) o.spec.kind = PW_TASK_REVERSE;
            else if (!strcmp(cli.arg, "arithmetic")) o.spec.kind = PW_TASK_ARITHMETIC;
            else {
                fprintf(stderr, "ppo_world gen-task: --task %s: expected reverse or arithmetic\n",
                        cli.arg);
                bad = 1;
            }
        } else if (c == F_SEED) {
            char *end;
            errno = 0;
            unsigned long long x = strtoull(cli.arg, &end, 10);
            bad = !*cli.arg || *end || errno;
            if (bad) fprintf(stderr, "ppo_world gen-task: --seed %s: expected an integer\n", cli.arg);
            o.seed = x;
        } else if (c == F_ERROR_RATE) {
            bad = parse_real(flag, cli.arg, &o.sft_error_rate);
        } else if (c == F_LABEL_NOISE) {
            bad = parse_real(flag, cli.arg, &o.label_noise);
        } else {
            bad = parse_int(flag, cli.arg, counts[c - F_COUNT]);
            lens_given |= c == F_COUNT + 7 || c == F_COUNT + 8;
            pair_errors_given |= c == F_COUNT + 6;
        }
        if (bad) return 2;
    }
    if (o.spec.kind == PW_TASK_ARITHMETIC && !lens_given) {
        PwTaskSpec a = pw_task_arith_spec_default();
        o.spec.min_len = a.min_len;
        o.spec.max_len = a.max_len;
    }
    if (o.spec.kind == PW_TASK_ARITHMETIC && !pair_errors_given) o.pair_max_errors = 2;
    PwErr err = {{0}};
    PwTaskGenStats st;
    if (pw_task_write_sets(&o, &st, &err)) {
        fprintf(stderr, "ppo_world gen-task: %s\n", err.msg);
        return 1;
    }
    printf("gen-task: %s: %d train + %d eval prompts, %d + %d demonstrations (%d with errors, "
           "mean gold %.3f), %d + %d pairs (%d labels exchanged)\n",
           o.out, o.n_train, o.n_eval, o.n_sft, o.n_valid, st.sft_corrupted, st.sft_gold_mean,
           o.n_pairs, o.n_valid, st.pairs_flipped);
    return 0;
}
