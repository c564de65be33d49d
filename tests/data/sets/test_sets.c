/* test_sets.c: the JSONL readers (each shape, HH style, malformed lines, over-long policy), the
 * split, the shuffle, sharding and left-padded batches with SFT weights on hand-worked examples. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_data.h"
#include "pw_test.h"

static char dir[64];

/* Writes text to dir/name and returns the path (static buffer per call site is enough). */
static const char *put(const char *name, const char *text)
{
    static char paths[16][128];
    static int k = 0;
    char *p = paths[k++ % 16];
    snprintf(p, 128, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
    return p;
}

static int ids_eq(const int *a, const int *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static PwDataOpts opts(PwDataShape s)
{
    PwDataOpts o = {s, pw_tokenizer_bytes(), 0, 0, 0, PW_OVERLONG_DROP, 0, NULL};
    return o;
}

static void test_sft_and_batch(void)
{
    const char *p = put("sft.jsonl", "{\"prompt\": \"ab\", \"response\": \"c\"}\n"
                                     "\n"
                                     "{\"prompt\": \"\", \"completion\": \"q\"}\n");
    PwDataOpts o = opts(PW_DATA_SFT);
    PwDataset d;
    PwErr err = {{0}};
    CHECK(pw_dataset_load(&d, p, &o, &err) == 0, "%s", err.msg);
    CHECK(d.n == 2 && d.nresp == 1 && d.lines == 2, "n %d lines %d", d.n, d.lines);
    int p0[] = {'a', 'b', PW_BYTE_SEP}, r0[] = {'c', PW_BYTE_EOS};
    CHECK(d.prompt_len[0] == 3 && ids_eq(d.tok + d.prompt_off[0], p0, 3), "prompt 0");
    CHECK(d.resp_len[0] == 2 && ids_eq(d.tok + d.resp_off[0], r0, 2), "response 0");
    CHECK(d.prompt_len[1] == 1 && d.resp_len[1] == 2, "row 1 lengths %d %d", d.prompt_len[1],
          d.resp_len[1]);
    CHECK(d.max_total == 5, "max_total %d", d.max_total);

    /* Hand-worked batch: row 0 = a b SEP c EOS (5), row 1 = PAD PAD SEP q EOS. Response
     * targets: the targets c, EOS of row 0 (positions 2, 3) and q, EOS of row 1 (2, 3): four,
     * so each weighs 1/4; prompt targets (a->b, b->SEP) weigh 0. */
    int idx[] = {0, 1};
    PwBatch b = {0};
    CHECK(pw_batch_build(&b, &d, idx, 2, 0, 0.0, &err) == 0, "%s", err.msg);
    CHECK(b.B == 2 && b.T == 5, "shape %d x %d", b.B, b.T);
    int tok[] = {'a', 'b', PW_BYTE_SEP, 'c', PW_BYTE_EOS, PW_BYTE_PAD, PW_BYTE_PAD, PW_BYTE_SEP,
                 'q', PW_BYTE_EOS};
    int mask[] = {1, 1, 1, 1, 1, 0, 0, 1, 1, 1};
    int tgt[] = {'b', PW_BYTE_SEP, 'c', PW_BYTE_EOS, -1, -1, -1, 'q', PW_BYTE_EOS, -1};
    float w[] = {0, 0, 0.25f, 0.25f, 0, 0, 0, 0.25f, 0.25f, 0};
    CHECK(ids_eq(b.tokens, tok, 10), "tokens");
    CHECK(ids_eq(b.mask, mask, 10), "mask");
    CHECK(ids_eq(b.targets, tgt, 10), "targets");
    int wok = 1;
    for (int i = 0; i < 10; i++) wok &= b.weights[i] == w[i];
    CHECK(wok, "weights");
    CHECK(b.count == 4.0, "count %g", b.count);
    /* A global normaliser (data parallel) replaces the batch's own count; a wider T pads more. */
    CHECK(pw_batch_build(&b, &d, idx + 1, 1, 7, 8.0, &err) == 0, "%s", err.msg);
    CHECK(b.T == 7 && b.mask[3] == 0 && b.mask[4] == 1 && b.weights[4] == 0.125f &&
          b.weights[5] == 0.125f && b.weights[3] == 0.0f, "row 1 at width 7");
    CHECK(pw_batch_build(&b, &d, idx, 2, 4, 0.0, &err) != 0 && strstr(err.msg, "width 4"),
          "too narrow: %s", err.msg);
    CHECK(pw_data_response_targets(&d, idx, 2) == 4.0, "targets count");
    pw_batch_free(&b);
    pw_dataset_free(&d);
}

static void test_prompts(void)
{
    const char *p = put("p.jsonl", "{\"prompt\": \"hi\"}\n{\"input_ids\": [1, 2, 3]}\n");
    PwDataOpts o = opts(PW_DATA_PROMPTS);
    PwDataset d;
    PwErr err = {{0}};
    CHECK(pw_dataset_load(&d, p, &o, &err) == 0, "%s", err.msg);
    int p0[] = {'h', 'i', PW_BYTE_SEP}, p1[] = {1, 2, 3};
    CHECK(d.n == 2 && d.nresp == 0, "n %d", d.n);
    CHECK(d.prompt_len[0] == 3 && ids_eq(d.tok + d.prompt_off[0], p0, 3), "text prompt");
    CHECK(d.prompt_len[1] == 3 && ids_eq(d.tok + d.prompt_off[1], p1, 3), "ids verbatim");
    int idx[] = {1, 0};
    PwBatch b = {0};
    CHECK(pw_batch_build(&b, &d, idx, 2, 5, 0, &err) == 0 && b.targets == NULL, "%s", err.msg);
    CHECK(b.tokens[2] == 1 && b.mask[1] == 0 && b.mask[2] == 1 && b.tokens[7] == 'h', "layout");
    pw_batch_free(&b);
    pw_dataset_free(&d);
    p = put("p_bad.jsonl", "{\"input_ids\": [1, 300]}\n");
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "p_bad.jsonl:1") &&
          strstr(err.msg, "\"input_ids\""), "id out of range: %s", err.msg);
}

static void test_prefs(void)
{
    const char *p = put("prefs.jsonl",
                        "{\"prompt\": \"q\", \"chosen\": \"yes\", \"rejected\": \"n\"}\n"
                        "{\"chosen\": \"\\n\\nHuman: hi\\n\\nAssistant: a\\n\\nHuman: more"
                        "\\n\\nAssistant: good\", \"rejected\": \"\\n\\nHuman: hi\\n\\nAssistant: a"
                        "\\n\\nHuman: more\\n\\nAssistant: bad!\"}\n");
    PwDataOpts o = opts(PW_DATA_PREFS);
    PwDataset d;
    PwErr err = {{0}};
    CHECK(pw_dataset_load(&d, p, &o, &err) == 0, "%s", err.msg);
    CHECK(d.n == 2 && d.nresp == 2, "n %d", d.n);
    CHECK(d.prompt_len[0] == 2 && d.resp_len[0] == 4 && d.resp_len[1] == 2, "explicit prompt");
    /* HH: the prompt runs to the LAST "\n\nAssistant:" (the dialogue's first turns included). */
    const char *hh = "\n\nHuman: hi\n\nAssistant: a\n\nHuman: more\n\nAssistant:";
    int plen = (int)strlen(hh) + 1;
    CHECK(d.prompt_len[1] == plen, "HH prompt %d want %d", d.prompt_len[1], plen);
    CHECK(d.tok[d.prompt_off[1] + plen - 2] == ':' &&
          d.tok[d.prompt_off[1] + plen - 1] == PW_BYTE_SEP, "HH prompt ends with the marker");
    int c1[] = {' ', 'g', 'o', 'o', 'd', PW_BYTE_EOS}, r1[] = {' ', 'b', 'a', 'd', '!', PW_BYTE_EOS};
    CHECK(d.resp_len[2] == 6 && ids_eq(d.tok + d.resp_off[2], c1, 6), "HH chosen");
    CHECK(d.resp_len[3] == 6 && ids_eq(d.tok + d.resp_off[3], r1, 6), "HH rejected");
    /* Pair batch: rows [0, n) chosen, [n, 2n) rejected, at the width of the longest of all. */
    int idx[] = {0};
    PwBatch b = {0};
    CHECK(pw_batch_build(&b, &d, idx, 1, 0, 0, &err) == 0, "%s", err.msg);
    int rows[] = {'q', PW_BYTE_SEP, 'y', 'e', 's', PW_BYTE_EOS, PW_BYTE_PAD, PW_BYTE_PAD, 'q',
                  PW_BYTE_SEP, 'n', PW_BYTE_EOS};
    CHECK(b.B == 2 && b.T == 6 && ids_eq(b.tokens, rows, 12), "pair rows");
    CHECK(b.mask[6] == 0 && b.mask[7] == 0 && b.mask[8] == 1 && b.len[1] == 4, "pair mask");
    pw_batch_free(&b);
    pw_dataset_free(&d);
    p = put("hh_bad.jsonl", "{\"chosen\": \"\\n\\nHuman: x\\n\\nAssistant: a\", "
                            "\"rejected\": \"\\n\\nHuman: y\\n\\nAssistant: b\"}\n");
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "hh_bad.jsonl:1") &&
          strstr(err.msg, "field \"rejected\""), "HH prefix mismatch: %s", err.msg);
    p = put("hh_none.jsonl", "{\"chosen\": \"plain\", \"rejected\": \"text\"}\n");
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "field \"chosen\""),
          "HH without marker: %s", err.msg);
}

static void test_malformed(void)
{
    PwDataOpts o = opts(PW_DATA_SFT);
    PwDataset d;
    PwErr err = {{0}};
    const char *p = put("bad1.jsonl", "{\"prompt\": \"a\", \"response\": \"b\"}\n\n"
                                      "{\"prompt\": \"a\", \"response\": \"b\"\n");
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "bad1.jsonl:3:"),
          "bad JSON names line 3: %s", err.msg);
    p = put("bad2.jsonl", "{\"prompt\": \"a\", \"response\": \"b\"}\n{\"prompt\": \"a\"}\n");
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "bad2.jsonl:2:") &&
          strstr(err.msg, "field \"response\"") && strstr(err.msg, "completion"),
          "missing field: %s", err.msg);
    p = put("bad3.jsonl", "{\"prompt\": 7, \"response\": \"b\"}\n");
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "bad3.jsonl:1:") &&
          strstr(err.msg, "field \"prompt\": expected a string"), "wrong type: %s", err.msg);
    p = put("bad4.jsonl", "[1, 2]\n");
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "bad4.jsonl:1:"),
          "not an object: %s", err.msg);
    /* a key given twice would let the last one win in silence */
    p = put("dup.jsonl", "{\"prompt\": \"a\", \"response\": \"b\", \"response\": \"c\"}\n");
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "dup.jsonl:1:") &&
          strstr(err.msg, "duplicate"), "duplicate key: %s", err.msg);
    /* a NUL byte would end the line early for the JSON reader: what follows it is never read */
    static const char nul[] = "{\"prompt\": \"a\", \"response\": \"b\"}\0{\"x\": 1}\n";
    p = put("nul.jsonl", "");
    FILE *f = fopen(p, "wb");
    fwrite(nul, 1, sizeof nul - 1, f);
    fclose(f);
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 &&
              strstr(err.msg, "nul.jsonl:1: a NUL byte at column 33"),
          "NUL byte: %s", err.msg);
    p = put("empty.jsonl", "\n\n");
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "no example"), "empty: %s",
          err.msg);
    CHECK(pw_dataset_load(&d, "/nonexistent/x.jsonl", &o, &err) != 0 &&
          strstr(err.msg, "x.jsonl"), "missing file: %s", err.msg);
}

static void test_overlong(void)
{
    /* Row 1: prompt 3 + response 2 = 5; row 2: prompt 5 + response 4 = 9. */
    const char *p = put("long.jsonl", "{\"prompt\": \"ab\", \"response\": \"c\"}\n"
                                      "{\"prompt\": \"abcd\", \"response\": \"xyz\"}\n");
    PwDataOpts o = opts(PW_DATA_SFT);
    o.max_len = 6;
    PwDataset d;
    PwErr err = {{0}};
    CHECK(pw_dataset_load(&d, p, &o, &err) == 0 && d.n == 1 && d.dropped == 1, "drop: %s",
          err.msg);
    pw_dataset_free(&d);
    o.overlong = PW_OVERLONG_ERROR;
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "long.jsonl:2:") &&
          strstr(err.msg, "too long"), "error: %s", err.msg);
    /* Truncate: the response is cut first (to 6 - 5 = 1 token: 'x'). */
    o.overlong = PW_OVERLONG_TRUNCATE;
    CHECK(pw_dataset_load(&d, p, &o, &err) == 0 && d.n == 2 && d.truncated == 1, "%s", err.msg);
    CHECK(d.prompt_len[1] == 5 && d.resp_len[1] == 1 && d.tok[d.resp_off[1]] == 'x',
          "truncated lengths %d %d", d.prompt_len[1], d.resp_len[1]);
    pw_dataset_free(&d);
    /* A prompt limit keeps the prompt's END (SEP last): "cd" SEP. */
    o.max_len = 0;
    o.max_prompt_len = 3;
    CHECK(pw_dataset_load(&d, p, &o, &err) == 0 && d.truncated == 1, "%s", err.msg);
    int want[] = {'c', 'd', PW_BYTE_SEP};
    CHECK(d.prompt_len[1] == 3 && ids_eq(d.tok + d.prompt_off[1], want, 3), "prompt tail kept");
    pw_dataset_free(&d);
    o.overlong = PW_OVERLONG_DROP;
    o.max_prompt_len = 1;
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "all 2"), "all dropped: %s",
          err.msg);
    PwOverlong ov;
    CHECK(pw_overlong_parse("Truncate", &ov, &err) == 0 && ov == PW_OVERLONG_TRUNCATE, "parse");
    CHECK(pw_overlong_parse("cut", &ov, &err) != 0 && strstr(err.msg, "drop"), "parse bad");
}

static void test_order_and_shard(void)
{
    int a[50], b[50], c[50], seen[50];
    pw_data_epoch_order(a, 50, 7, 3);
    pw_data_epoch_order(b, 50, 7, 3);
    pw_data_epoch_order(c, 50, 7, 4);
    CHECK(ids_eq(a, b, 50), "same (seed, epoch), same order");
    CHECK(!ids_eq(a, c, 50), "another epoch, another order");
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < 50; i++) seen[a[i]]++;
    int perm = 1;
    for (int i = 0; i < 50; i++) perm &= seen[i] == 1;
    CHECK(perm, "a permutation");
    PwSampler s;
    PwErr err;
    CHECK(pw_sampler_init(&s, 10, 7, &err) == 0, "sampler");
    int rows[4];
    pw_sampler_batch(&s, 2, 4, rows); /* positions 8..11 run across the first epoch boundary */
    int e0[10], e1[10];
    pw_data_epoch_order(e0, 10, 7, 0);
    pw_data_epoch_order(e1, 10, 7, 1);
    CHECK(rows[0] == e0[8] && rows[1] == e0[9] && rows[2] == e1[0] && rows[3] == e1[1],
          "batch across epochs");
    pw_sampler_free(&s);
    /* Every row of every global batch on exactly one rank, in contiguous ascending blocks. */
    int ok = 1;
    for (int n = 0; n <= 20; n++)
        for (int R = 1; R <= 6; R++) {
            int64_t next = 0;
            for (int r = 0; r < R; r++) {
                int64_t st, cnt;
                pw_data_shard(n, R, r, &st, &cnt);
                ok &= st == next && cnt >= n / R && cnt <= n / R + 1;
                next = st + cnt;
            }
            ok &= next == n;
        }
    CHECK(ok, "shards cover each row once");
}

static void test_split(void)
{
    char text[4096] = "";
    for (int i = 0; i < 20; i++) {
        char line[96];
        snprintf(line, sizeof line, "{\"prompt\": \"p%d\", \"response\": \"r%d\"}\n", i, i);
        strcat(text, line);
    }
    const char *p = put("split.jsonl", text);
    PwDataOpts o = opts(PW_DATA_SFT);
    PwDataset all, tr, va, tr2, va2;
    PwErr err = {{0}};
    CHECK(pw_dataset_load(&all, p, &o, &err) == 0, "%s", err.msg);
    CHECK(pw_dataset_split(&all, 0.25, 3, &tr, &va, &err) == 0, "%s", err.msg);
    CHECK(tr.n == 15 && va.n == 5, "sizes %d %d", tr.n, va.n);
    CHECK(pw_dataset_split(&all, 0.25, 3, &tr2, &va2, &err) == 0, "%s", err.msg);
    CHECK(tr2.ntok == tr.ntok && ids_eq(tr.tok, tr2.tok, (int)tr.ntok), "deterministic");
    pw_dataset_free(&tr2);
    pw_dataset_free(&va2);
    /* Disjoint and complete: every row's prompt token sum appears once in the two parts. */
    CHECK(tr.ntok + va.ntok == all.ntok, "tokens conserved");
    CHECK(strstr(va.path, "[valid]") != NULL, "valid path %s", va.path);
    CHECK(pw_dataset_split(&all, 1.0, 3, &tr2, &va2, &err) != 0, "bad fraction");
    pw_dataset_free(&all);
    pw_dataset_free(&tr);
    pw_dataset_free(&va);
}

/* Prompt files of token ids need no tokenizer, only the model's vocabulary; text then needs
 * one. vocab_size bounds encoded text too (bytes reach 258), every example keeps its file line
 * (blank lines counted) through a split, and an empty prompt file says so in those words. */
static void test_ids_without_tokenizer(void)
{
    const char *p = put("ids.jsonl", "{\"input_ids\": [3, 1, 4]}\n"
                                     "\n"
                                     "{\"input_ids\": [9]}\n"
                                     "{\"input_ids\": [2, 6]}\n");
    PwDataOpts o = {PW_DATA_PROMPTS, NULL, 0, 0, 0, PW_OVERLONG_DROP, 10, NULL};
    PwDataset d, tr, va;
    PwErr err = {{0}};
    CHECK(pw_dataset_load(&d, p, &o, &err) == 0, "%s", err.msg);
    CHECK(d.n == 3 && d.pad_id == 0, "n %d pad %d", d.n, d.pad_id);
    CHECK(d.line[0] == 1 && d.line[1] == 3 && d.line[2] == 4, "lines %d %d %d", d.line[0],
          d.line[1], d.line[2]);
    int want[] = {3, 1, 4, 9, 2, 6};
    CHECK(d.ntok == 6 && ids_eq(d.tok, want, 6), "ids verbatim");
    CHECK(pw_dataset_split(&d, 0.34, 5, &tr, &va, &err) == 0, "%s", err.msg);
    for (int i = 0; i < va.n; i++)
        CHECK(va.line[i] == (va.prompt_len[i] == 3 ? 1 : va.prompt_len[i] == 1 ? 3 : 4),
              "split keeps line %d for a prompt of %d ids", va.line[i], va.prompt_len[i]);
    pw_dataset_free(&tr);
    pw_dataset_free(&va);
    pw_dataset_free(&d);

    p = put("ids_big.jsonl", "{\"input_ids\": [3]}\n{\"input_ids\": [10]}\n");
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "ids_big.jsonl:2:") &&
          strstr(err.msg, "not a token id in [0, 10)"), "id past vocab_size: %s", err.msg);
    p = put("text_no_tok.jsonl", "{\"input_ids\": [3]}\n{\"prompt\": \"hi\"}\n");
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "text_no_tok.jsonl:2:") &&
          strstr(err.msg, "needs a tokenizer"), "text without a tokenizer: %s", err.msg);
    PwDataOpts sft = {PW_DATA_SFT, NULL, 0, 0, 0, PW_OVERLONG_DROP, 10, NULL};
    CHECK(pw_dataset_load(&d, p, &sft, &err) != 0 && strstr(err.msg, "no tokenizer given"),
          "sft without a tokenizer: %s", err.msg);

    /* bytes encode '~' as 126 and add SEP 258: past a 200-token model, within a 259 one */
    p = put("text_vocab.jsonl", "{\"prompt\": \"~\"}\n");
    PwDataOpts small = {PW_DATA_PROMPTS, pw_tokenizer_bytes(), 0, 0, 0, PW_OVERLONG_DROP, 200, NULL};
    CHECK(pw_dataset_load(&d, p, &small, &err) != 0 && strstr(err.msg, "text_vocab.jsonl:1:") &&
          strstr(err.msg, "encodes to token 258, outside the model's vocabulary [0, 200)"),
          "encoded id past vocab_size: %s", err.msg);
    small.vocab_size = 259;
    CHECK(pw_dataset_load(&d, p, &small, &err) == 0 && d.n == 1 && d.tok[0] == 126 &&
          d.tok[1] == 258, "fits 259: %s", err.msg);
    pw_dataset_free(&d);

    p = put("no_prompts.jsonl", "\n");
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "no_prompts.jsonl' holds no prompt"),
          "empty prompt file: %s", err.msg);
}

/* A tokenizer whose post-processor starts each sequence with a BOS (Llama 3): text prompts get
 * it first, responses and given ids do not, and truncation keeps it. The byte tokenizer with a
 * prefix stands in for a BPE folder (the data layer sees only the table). */
static void test_prefix(void)
{
    PwTokenizer tk = *pw_tokenizer_bytes();
    tk.prefix[0] = 250;
    tk.n_prefix = 1;
    const char *p = put("pre.jsonl", "{\"prompt\": \"abc\", \"response\": \"d\"}\n"
                                     "{\"prompt\": \"wxyz\", \"response\": \"e\"}\n");
    PwDataOpts o = {PW_DATA_SFT, &tk, 4, 0, 0, PW_OVERLONG_TRUNCATE, 0, NULL};
    PwDataset d;
    PwErr err = {{0}};
    CHECK(pw_dataset_load(&d, p, &o, &err) == 0, "%s", err.msg);
    int p0[] = {250, 'b', 'c', PW_BYTE_SEP}, r0[] = {'d', PW_BYTE_EOS};
    int p1[] = {250, 'y', 'z', PW_BYTE_SEP};
    CHECK(d.n == 2 && d.prompt_len[0] == 4 && ids_eq(d.tok + d.prompt_off[0], p0, 4),
          "prompt 0: BOS, then the last tokens that fit");
    CHECK(d.resp_len[0] == 2 && ids_eq(d.tok + d.resp_off[0], r0, 2), "response 0: no BOS");
    CHECK(d.prompt_len[1] == 4 && ids_eq(d.tok + d.prompt_off[1], p1, 4), "prompt 1");
    CHECK(d.truncated == 2, "truncated %d", d.truncated);
    pw_dataset_free(&d);
    const char *q = put("pre_ids.jsonl", "{\"input_ids\": [5, 6]}\n{\"prompt\": \"a\"}\n");
    PwDataOpts po = {PW_DATA_PROMPTS, &tk, 0, 0, 0, PW_OVERLONG_DROP, 0, NULL};
    CHECK(pw_dataset_load(&d, q, &po, &err) == 0, "%s", err.msg);
    int q0[] = {5, 6}, q1[] = {250, 'a', PW_BYTE_SEP};
    CHECK(d.prompt_len[0] == 2 && ids_eq(d.tok + d.prompt_off[0], q0, 2), "given ids: as given");
    CHECK(d.prompt_len[1] == 3 && ids_eq(d.tok + d.prompt_off[1], q1, 3), "text prompt: BOS");
    pw_dataset_free(&d);

    /* data.prompt_template: text prompts go inside it (after the prefix); given ids do not. */
    po.prompt_template = "<{prompt}>!";
    CHECK(pw_dataset_load(&d, q, &po, &err) == 0, "%s", err.msg);
    int t1[] = {250, '<', 'a', '>', '!', PW_BYTE_SEP};
    CHECK(d.prompt_len[0] == 2 && ids_eq(d.tok + d.prompt_off[0], q0, 2), "template: ids as given");
    CHECK(d.prompt_len[1] == 6 && ids_eq(d.tok + d.prompt_off[1], t1, 6), "template: text");
    pw_dataset_free(&d);
    o.prompt_template = "[{prompt}]";
    o.max_prompt_len = 0;
    CHECK(pw_dataset_load(&d, p, &o, &err) == 0, "%s", err.msg);
    int s0[] = {250, '[', 'a', 'b', 'c', ']', PW_BYTE_SEP};
    CHECK(d.prompt_len[0] == 7 && ids_eq(d.tok + d.prompt_off[0], s0, 7) && d.resp_len[0] == 2,
          "template: an SFT prompt, its response as it was");
    pw_dataset_free(&d);
}

/* Paths that are no data set: refused by what they are, before a line is read; a FIFO (no
 * writer) would block the open for ever and a folder used to read as an empty file. */
static void test_not_files(void)
{
    PwDataOpts o = {PW_DATA_PROMPTS, NULL, 0, 0, 0, PW_OVERLONG_DROP, 10, NULL};
    PwDataset d;
    PwErr err = {{0}};
    char p[128];
    snprintf(p, sizeof p, "%s/folder.jsonl", dir);
    CHECK(mkdir(p, 0700) == 0, "mkdir %s", p);
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "folder.jsonl: is a directory"),
          "a folder: %s", err.msg);
    snprintf(p, sizeof p, "%s/fifo.jsonl", dir);
    CHECK(mkfifo(p, 0600) == 0, "mkfifo %s", p);
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 &&
              strstr(err.msg, "fifo.jsonl: not a regular file (a FIFO)"),
          "a FIFO: %s", err.msg);
    CHECK(pw_dataset_load(&d, "/dev/zero", &o, &err) != 0 &&
              strstr(err.msg, "/dev/zero: not a regular file (a character device)"),
          "a device: %s", err.msg);
    snprintf(p, sizeof p, "%s/absent.jsonl", dir);
    CHECK(pw_dataset_load(&d, p, &o, &err) != 0 && strstr(err.msg, "absent.jsonl: does not exist"),
          "a missing file: %s", err.msg);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/pw_sets_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    test_sft_and_batch();
    test_prompts();
    test_prefs();
    test_malformed();
    test_overlong();
    test_order_and_shard();
    test_split();
    test_ids_without_tokenizer();
    test_prefix();
    test_not_files();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    return pw_test_done("test_sets");
}
