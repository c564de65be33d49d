/* test_bpe.c: the byte-level BPE tokenizer against ids the Hugging Face `tokenizers` library wrote
 * (tests/fixtures/make_bpe_fixture.py), round trips, invalid UTF-8, and loader errors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_test.h"
#include "pw_tokenizer.h"


/* The whole held-out text, token for token (the post-processor's prefix, then encode()), then
 * back to the same bytes where the tokenizer keeps the text as it is (bpe_nfc does not). */
static void check_fixture(const char *fixtures, const char *name, int vocab, int bos,
                          int prefix, const char *text, size_t len)
{
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/%s", fixtures, name);
    PwErr err = {{0}};
    const PwTokenizer *t = pw_tokenizer_get(dir, &err);
    CHECK(t != NULL, "%s loads: %s", name, err.msg);
    if (!t) return;
    CHECK(pw_tokenizer_get(dir, &err) == t, "%s: loaded once", name);
    /* make_bpe_fixture.py: specials first (<|endoftext|> 0, <|pad|> 1), no sep_token. */
    CHECK(t->vocab_size == vocab && t->eos_id == 0 && t->pad_id == 1 && t->sep_id == -1 &&
              t->bos_id == bos,
          "%s: vocab %d eos %d pad %d sep %d bos %d", name, t->vocab_size, t->eos_id, t->pad_id,
          t->sep_id, t->bos_id);
    CHECK(prefix < 0 ? t->n_prefix == 0 : t->n_prefix == 1 && t->prefix[0] == prefix,
          "%s: %d prefix ids (the first %d), expected %d", name, t->n_prefix,
          t->n_prefix ? t->prefix[0] : -1, prefix);

    snprintf(path, sizeof path, "%s/heldout_ids.u16", dir);
    size_t nbytes;
    unsigned char *raw = (unsigned char *)pw_test_slurp(path, &nbytes);
    CHECK(raw != NULL && nbytes % 2 == 0, "%s readable", path);
    if (!raw) return;
    int nref = (int)(nbytes / 2);
    int *ids = malloc(sizeof(int) * (size_t)(nref + 16));
    int np = t->n_prefix;
    memcpy(ids, t->prefix, sizeof(int) * (size_t)np);
    int n = t->encode(t, text, len, ids + np, nref + 16 - np, &err);
    n = n < 0 ? n : n + np;
    CHECK(n == nref, "%s: %d ids, the library's %d (%s)", name, n, nref, n < 0 ? err.msg : "");
    int mismatch = -1;
    for (int i = 0; i < n && i < nref && mismatch < 0; i++)
        if (ids[i] != (raw[2 * i] | raw[2 * i + 1] << 8)) mismatch = i;
    if (mismatch >= 0) {
        char around[128];
        int lo = mismatch > 4 ? mismatch - 4 : 0;
        t->decode(t, ids + lo, 8, around, sizeof around);
        CHECK(0, "%s: id %d is %d, the library's %d, near \"%s\"", name, mismatch, ids[mismatch],
              raw[2 * mismatch] | raw[2 * mismatch + 1] << 8, around);
    }
    /* bpe_nfc rewrites the text on purpose (NFC, a space before each stretch): the round trips
     * below are for the tokenizers that keep it. */
    int keeps = strcmp(name, "bpe_nfc") != 0;
    char *back = malloc(len + 1);
    if (keeps)
        CHECK(t->decode(t, ids + np, n - np, back, len + 1) == (int)len &&
                  !memcmp(back, text, len),
              "%s: decode(encode(text)) is the text", name);

    /* A short buffer: the full count comes back, nothing past cap is written. */
    ids[3] = -7;
    CHECK(t->encode(t, text, len, ids, 3, &err) == nref - np && ids[3] == -7,
          "%s: truncation", name);

    /* Invalid UTF-8 (the library takes only valid str): PCRE2 leaves the bad bytes out of its
     * matches, so each run of them is a piece of its own and round-trips as raw bytes. */
    const char *bad = "ok \xff\xfe caf\xc3 \xe2\x82 x\xc3\xa9\x80 \xf0\x9f\x98";
    int bid[64];
    int bn = t->encode(t, bad, strlen(bad), bid, 64, &err);
    CHECK(bn > 0 && bn <= 64, "%s: invalid UTF-8 encodes (%d): %s", name, bn, err.msg);
    char bback[64];
    if (keeps) {
        CHECK(t->decode(t, bid, bn, bback, sizeof bback) == (int)strlen(bad) &&
                  !strcmp(bback, bad),
              "%s: invalid UTF-8 round-trips", name);
        int ff, one = t->encode(t, "\xff", 1, &ff, 1, &err);
        char ffs[4];
        CHECK(one == 1 && t->decode(t, &ff, 1, ffs, sizeof ffs) == 1 && ffs[0] == '\xff',
              "%s: a lone 0xff is its byte token", name);
        int two[4];
        CHECK(t->encode(t, "a\xff", 2, two, 4, &err) == 2 && two[1] == ff,
              "%s: 0xff after a letter", name);
    }

    /* Specials decode as their text; an id past the vocabulary is refused. */
    int sp[] = {t->eos_id, t->pad_id};
    char sps[64];
    CHECK(t->decode(t, sp, 2, sps, sizeof sps) == 20 && !strcmp(sps, "<|endoftext|><|pad|>"),
          "%s: specials decode as %s", name, sps);
    int past = t->vocab_size;
    CHECK(t->decode(t, &past, 1, sps, sizeof sps) == -1, "%s: id past the vocabulary", name);
    free(back);
    free(ids);
    free(raw);
}

/* NFC on its own: decomposed text encodes as its composed form, also around invalid bytes and
 * added tokens; a tokenizer without the normalizer keeps the two apart. */
static void check_nfc(const char *fixtures)
{
    char dir[4096];
    PwErr err = {{0}};
    snprintf(dir, sizeof dir, "%s/bpe_nfc", fixtures);
    const PwTokenizer *t = pw_tokenizer_get(dir, &err);
    snprintf(dir, sizeof dir, "%s/bpe_gpt2", fixtures);
    const PwTokenizer *raw = pw_tokenizer_get(dir, &err);
    CHECK(t && raw, "fixtures load: %s", err.msg);
    if (!t || !raw) return;
    static const char *const pairs[][2] = {
        {"cafe\xcc\x81 nai\xcc\x88ve", "caf\xc3\xa9 na\xc3\xafve"},
        {"e\xcc\x81\xff\xfe" "e\xcc\x81 ok", "\xc3\xa9\xff\xfe\xc3\xa9 ok"},
        {"<|im_start|>A\xcc\x8a<|im_end|>", "<|im_start|>\xc3\x85<|im_end|>"},
        {"\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", "\xea\xb0\x81"}, /* jamo -> U+AC01 */
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        int a[64], b[64], c[64], d[64];
        int na = t->encode(t, pairs[i][0], strlen(pairs[i][0]), a, 64, &err);
        int nb = t->encode(t, pairs[i][1], strlen(pairs[i][1]), b, 64, &err);
        CHECK(na > 0 && na == nb && !memcmp(a, b, sizeof(int) * (size_t)na),
              "bpe_nfc: pair %zu encodes as its NFC form (%d and %d ids)", i, na, nb);
        int nc = raw->encode(raw, pairs[i][0], strlen(pairs[i][0]), c, 64, &err);
        int nd = raw->encode(raw, pairs[i][1], strlen(pairs[i][1]), d, 64, &err);
        CHECK(nc != nd || memcmp(c, d, sizeof(int) * (size_t)nc),
              "bpe_gpt2 (no normalizer): pair %zu stays apart", i);
    }
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[4500];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* Loading `dir` fails with a message holding each of the given pieces. */
static void expect_error(const char *dir, const char *want1, const char *want2)
{
    PwErr err = {{0}};
    const PwTokenizer *t = pw_tokenizer_get(dir, &err);
    CHECK(t == NULL && strstr(err.msg, want1) && (!want2 || strstr(err.msg, want2)),
          "%s: expected an error with '%s' and '%s', got '%s'", dir, want1, want2 ? want2 : "",
          t ? "(loaded)" : err.msg);
}

static void check_errors(const char *tmp)
{
    char d[4400];
    const char *tail = "\"vocab\":{\"a\":0},\"merges\":[]},\"pre_tokenizer\":{\"type\":\"ByteLevel\"},"
                       "\"decoder\":{\"type\":\"ByteLevel\"}}";
    char json[512];
    snprintf(d, sizeof d, "%s/wordpiece", tmp);
    snprintf(json, sizeof json, "{\"model\":{\"type\":\"WordPiece\",%s", tail);
    write_file(d, "tokenizer.json", json);
    expect_error(d, "wordpiece/tokenizer.json: model type WordPiece", "expected BPE");

    snprintf(d, sizeof d, "%s/unigram", tmp);
    snprintf(json, sizeof json, "{\"model\":{\"type\":\"Unigram\",%s", tail);
    write_file(d, "tokenizer.json", json);
    expect_error(d, "unigram/tokenizer.json: model type Unigram", "expected BPE");

    snprintf(d, sizeof d, "%s/malformed", tmp);
    write_file(d, "tokenizer.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {");
    expect_error(d, "malformed/tokenizer.json:1: not valid JSON", NULL);

    snprintf(d, sizeof d, "%s/dupkey", tmp);
    write_file(d, "tokenizer.json", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"a\":1},"
               "\"merges\":[]},\"pre_tokenizer\":{\"type\":\"ByteLevel\"},"
               "\"decoder\":{\"type\":\"ByteLevel\"}}");
    expect_error(d, "dupkey/tokenizer.json:1: not valid JSON", "duplicate object key");

    snprintf(d, sizeof d, "%s/missing", tmp);
    mkdir(d, 0755);
    expect_error(d, "missing/tokenizer.json: does not exist", "needs tokenizer.json");

    snprintf(d, sizeof d, "%s/nofolder", tmp);
    expect_error(d, "unknown tokenizer", "Hugging Face tokenizer folder");
    snprintf(d, sizeof d, "%s/missing", tmp);
    write_file(d, "afile", "");
    snprintf(d, sizeof d, "%s/missing/afile", tmp);
    expect_error(d, "afile: not a directory (a regular file)", NULL);

    /* A FIFO in place of either file (no writer: opening it would wait for ever) and a loop of
     * links in place of the folder are refused by what they are. */
    char p[4500], q[4500];
    snprintf(d, sizeof d, "%s/fifo", tmp);
    mkdir(d, 0755);
    snprintf(p, sizeof p, "%s/tokenizer.json", d);
    unlink(p); /* the folder stays in the build tree between runs */
    CHECK(mkfifo(p, 0600) == 0, "mkfifo %s", p);
    expect_error(d, "fifo/tokenizer.json: not a regular file (a FIFO)", NULL);
    snprintf(d, sizeof d, "%s/fifo_config", tmp);
    snprintf(json, sizeof json, "{\"model\":{\"type\":\"BPE\",%s", tail);
    write_file(d, "tokenizer.json", json);
    snprintf(p, sizeof p, "%s/tokenizer_config.json", d);
    unlink(p);
    CHECK(mkfifo(p, 0600) == 0, "mkfifo %s", p);
    expect_error(d, "fifo_config/tokenizer_config.json: not a regular file (a FIFO)", NULL);
    snprintf(p, sizeof p, "%s/loop_a", tmp);
    snprintf(q, sizeof q, "%s/loop_b", tmp);
    unlink(p);
    unlink(q);
    CHECK(symlink(q, p) == 0 && symlink(p, q) == 0, "symlink %s", p);
    expect_error(p, "loop_a: too many symbolic links", NULL);

    /* A valid tokenizer.json but an eos_token it does not have. */
    snprintf(d, sizeof d, "%s/badeos", tmp);
    snprintf(json, sizeof json, "{\"model\":{\"type\":\"BPE\",%s", tail);
    write_file(d, "tokenizer.json", json);
    write_file(d, "tokenizer_config.json", "{\"eos_token\": {\"content\": \"</s>\"}}");
    expect_error(d, "badeos/tokenizer_config.json: eos_token '</s>' is not a token", NULL);

    /* Two added tokens on one id: refused (the matcher would read the first one's freed
     * text); the same token listed twice loads and matches. */
    const char *twice = "{\"added_tokens\":[{\"id\":0,\"content\":\"<x>\"},"
                        "{\"id\":0,\"content\":\"%s\"}],\"model\":{\"type\":\"BPE\",%s";
    snprintf(d, sizeof d, "%s/addedtwice", tmp);
    snprintf(json, sizeof json, twice, "<yy>", tail);
    write_file(d, "tokenizer.json", json);
    expect_error(d, "addedtwice/tokenizer.json: added_tokens[1] gives id 0 to '<yy>', which an "
                 "earlier added token has ('<x>')", "expected one token per id");
    snprintf(d, sizeof d, "%s/addedsame", tmp);
    snprintf(json, sizeof json, twice, "<x>", tail);
    write_file(d, "tokenizer.json", json);
    PwErr e2 = {{0}};
    const PwTokenizer *same = pw_tokenizer_get(d, &e2);
    int sid[4] = {-1, -1, -1, -1};
    CHECK(same && same->encode(same, "<x>", 3, sid, 4, &e2) == 1 && sid[0] == 0,
          "the same added token twice loads and matches: %s", e2.msg);

    /* An empty vocabulary key, the first one: it loads, and nothing copies or compares it
     * through a NULL pointer (UndefinedBehaviorSanitizer, the sanitizer pass). */
    snprintf(d, sizeof d, "%s/emptykey", tmp);
    write_file(d, "tokenizer.json", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"\":1,\"a\":0},"
               "\"merges\":[]},\"pre_tokenizer\":{\"type\":\"ByteLevel\"},"
               "\"decoder\":{\"type\":\"ByteLevel\"}}");
    const PwTokenizer *ek = pw_tokenizer_get(d, &e2);
    CHECK(ek && ek->encode(ek, "a", 1, sid, 4, &e2) == 1 && sid[0] == 0,
          "a vocabulary with an empty key loads: %s", e2.msg);

    snprintf(d, sizeof d, "%s/roberta", tmp);
    snprintf(json, sizeof json, "{\"post_processor\":{\"type\":\"RobertaProcessing\"},"
             "\"model\":{\"type\":\"BPE\",%s", tail);
    write_file(d, "tokenizer.json", json);
    expect_error(d, "roberta/tokenizer.json: post_processor type RobertaProcessing",
                 "expected ByteLevel, TemplateProcessing");

    snprintf(d, sizeof d, "%s/badtemplate", tmp);
    snprintf(json, sizeof json, "{\"post_processor\":{\"type\":\"TemplateProcessing\","
             "\"single\":[{\"SpecialToken\":{\"id\":\"<s>\"}}],\"special_tokens\":{}},"
             "\"model\":{\"type\":\"BPE\",%s", tail);
    write_file(d, "tokenizer.json", json);
    expect_error(d, "badtemplate/tokenizer.json: post_processor template piece 0",
                 "named in special_tokens");

    snprintf(d, sizeof d, "%s/nobytelevel", tmp);
    write_file(d, "tokenizer.json", "{\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]},"
               "\"pre_tokenizer\":{\"type\":\"Metaspace\"},\"decoder\":null}");
    expect_error(d, "nobytelevel/tokenizer.json: pre_tokenizer type Metaspace", "expected ByteLevel");
}

int main(int argc, char **argv)
{
    CHECK(argc == 3, "usage: test_bpe FIXTURES_DIR TMP_DIR");
    if (argc != 3) return pw_test_done("test_bpe");
    char path[4200];
    snprintf(path, sizeof path, "%s/bpe_heldout.txt", argv[1]);
    size_t len;
    char *text = pw_test_slurp(path, &len);
    CHECK(text != NULL && len >= 100000, "%s: %zu bytes", path, text ? len : 0);
    if (text) {
        /* make_bpe_fixture.py: <|begin_of_text|> is id 4, after the four specials */
        check_fixture(argv[1], "bpe_llama3", 1500, 4, 4, text, len);
        check_fixture(argv[1], "bpe_gpt2", 1200, 0, -1, text, len);
        check_fixture(argv[1], "bpe_nfc", 1000, -1, -1, text, len);
        check_nfc(argv[1]);
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/bpe_errors", argv[2]);
    mkdir(tmp, 0755);
    check_errors(tmp);
    free(text);
    return pw_test_done("test_bpe");
}
