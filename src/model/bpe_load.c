/* bpe_load.c: reads a Hugging Face tokenizer folder into a PwBpe: the vocabulary and merges of a
 * byte-level BPE model, its added tokens, its Split/ByteLevel pre-tokenizers, and its specials. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bpe.h"
#include "pw_file.h"

/* GPT-2's regex, which ByteLevel(use_regex: true) runs when no Split precedes it. */
static const char gpt2_split[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* GPT-2's byte-to-unicode map, inverted: code point -> byte, for code points below 324. The
 * printable bytes stand for themselves; the other 68 take 256, 257, ... in byte order. */
static void byte_of_codepoint(int inv[324])
{
    for (int i = 0; i < 324; i++) inv[i] = -1;
    int next = 256;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
        inv[printable ? b : next++] = b;
    }
}

/* A vocabulary string (UTF-8 of mapped code points) to raw bytes, written to out (len <= the
 * string's). A code point outside the map keeps its UTF-8: such entries are added tokens. */
static size_t unmap(const int inv[324], const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned c = (unsigned char)s[i];
        int cp = -1, w = 1;
        if (c < 0x80) {
            cp = (int)c;
        } else if ((c & 0xe0) == 0xc0 && i + 1 < n) {
            cp = (int)((c & 0x1f) << 6 | ((unsigned char)s[i + 1] & 0x3f));
            w = 2;
        }
        if (cp >= 0 && cp < 324 && inv[cp] >= 0) {
            out[o++] = (char)inv[cp];
            i += (size_t)w;
        } else {
            memcpy(out + o, s + i, n - i);
            return o + (n - i);
        }
    }
    return o;
}

static json_t *load_json(const char *path, int required, PwErr *err)
{
    /* Only a name that is not there at all means "no tokenizer_config.json"; whatever else is
     * at that name (a dangling link, a FIFO) is read, or refused, like tokenizer.json. */
    struct stat ls;
    if (!required && lstat(path, &ls) != 0 && errno == ENOENT) return json_null();
    PwErr e;
    json_t *j = pw_file_json(path, required ? PW_FILE_MAX_TOKENIZER : PW_FILE_MAX_JSON,
                             JSON_REJECT_DUPLICATES /* not last-one-wins */, &e);
    if (!j)
        pw_errf(err, "%s%s", e.msg, required ? "; a Hugging Face tokenizer folder needs "
                "tokenizer.json (and may have tokenizer_config.json)" : "");
    else if (!json_is_object(j)) {
        pw_errf(err, "%s: expected a JSON object at the top", path);
        json_decref(j);
        j = NULL;
    }
    return j;
}

static int set_token(PwBpe *b, int id, const char *bytes, size_t len)
{
    if (b->tok[id]) free(b->tok[id]);
    if (!(b->tok[id] = malloc(len + 1))) return -1;
    if (len) memcpy(b->tok[id], bytes, len); /* "" may come as NULL */
    b->tok[id][len] = '\0';
    b->tok_len[id] = (int)len;
    return 0;
}

static int compile_split(PwBpe *b, const char *file, const char *pattern, uint32_t extra,
                         PwErr *err)
{
    if (b->n_split == PW_BPE_MAX_SPLITS)
        return pw_errf(err, "%s: more than %d Split pre-tokenizers", file, PW_BPE_MAX_SPLITS);
    int ec;
    PCRE2_SIZE at;
    /* UCP: \s, \p{L} and \w by Unicode properties, as the Rust regex engines read them.
     * MATCH_INVALID_UTF: bytes that are not UTF-8 just never match, instead of failing the
     * whole match, so they fall into the gaps between matches and still reach byte-level BPE. */
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | extra, &ec,
                                   &at, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return pw_errf(err, "%s: the Split regex does not compile at offset %zu: %s", file,
                       (size_t)at, (const char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter on failure */
    b->split[b->n_split++] = re;
    return 0;
}

/* One pre-tokenizer: Split (Isolated, not inverted) or ByteLevel; first says whether it runs
 * first, the only place add_prefix_space can be honoured per segment. */
static int pre_one(PwBpe *b, const char *file, json_t *p, int first, int *byte_level, PwErr *err)
{
    const char *type = json_string_value(json_object_get(p, "type"));
    if (type && !strcmp(type, "ByteLevel")) {
        *byte_level = 1;
        if (json_is_true(json_object_get(p, "add_prefix_space"))) {
            if (!first)
                return pw_errf(err, "%s: ByteLevel add_prefix_space after a Split is not "
                               "supported", file);
            b->prefix_space = 1;
        }
        json_t *ur = json_object_get(p, "use_regex");
        if (!ur || json_is_true(ur)) return compile_split(b, file, gpt2_split, 0, err);
        return 0;
    }
    if (type && !strcmp(type, "Split")) {
        json_t *pat = json_object_get(p, "pattern");
        const char *behavior = json_string_value(json_object_get(p, "behavior"));
        if (!behavior || strcmp(behavior, "Isolated") || json_is_true(json_object_get(p, "invert")))
            return pw_errf(err, "%s: a Split pre-tokenizer must be behavior Isolated, not "
                           "inverted (got %s)", file, behavior ? behavior : "none");
        const char *re = json_string_value(json_object_get(pat, "Regex"));
        const char *lit = json_string_value(json_object_get(pat, "String"));
        if (re) return compile_split(b, file, re, 0, err);
        if (lit) return compile_split(b, file, lit, PCRE2_LITERAL, err);
        return pw_errf(err, "%s: a Split pattern must be {\"Regex\": ...} or {\"String\": ...}",
                       file);
    }
    return pw_errf(err, "%s: pre_tokenizer type %s is not supported (expected ByteLevel, Split, "
                   "or a Sequence of them)", file, type ? type : "(none)");
}

static int load_pre(PwBpe *b, const char *file, json_t *root, PwErr *err)
{
    json_t *p = json_object_get(root, "pre_tokenizer");
    int byte_level = 0;
    const char *type = json_string_value(json_object_get(p, "type"));
    if (type && !strcmp(type, "Sequence")) {
        json_t *seq = json_object_get(p, "pretokenizers");
        size_t i;
        json_t *q;
        json_array_foreach(seq, i, q) if (pre_one(b, file, q, i == 0, &byte_level, err)) return -1;
    } else if (p && !json_is_null(p) && pre_one(b, file, p, 1, &byte_level, err)) {
        return -1;
    }
    if (!byte_level)
        return pw_errf(err, "%s: expected a byte-level BPE (a ByteLevel pre_tokenizer); this one "
                       "has none", file);
    const char *dec = json_string_value(json_object_get(json_object_get(root, "decoder"), "type"));
    if (!dec || strcmp(dec, "ByteLevel"))
        return pw_errf(err, "%s: expected a ByteLevel decoder, got %s", file, dec ? dec : "none");
    const char *norm = json_string_value(json_object_get(json_object_get(root, "normalizer"), "type"));
    if (norm && strcmp(norm, "NFC"))
        return pw_errf(err, "%s: normalizer %s is not supported (expected none or NFC)", file,
                       norm);
    b->nfc = norm != NULL;
    return 0;
}

/* One post-processor: ByteLevel only trims offsets (no ids); TemplateProcessing's "single"
 * template puts special tokens around the text ($A), of which the ones before it are the
 * prefix. Those after it (a few tokenizers append EOS) are left out: a response ends with the
 * stop token already. Pair templates concern two-sentence inputs, which nothing here encodes. */
static int post_one(PwBpe *b, const char *file, json_t *p, PwErr *err)
{
    const char *type = json_string_value(json_object_get(p, "type"));
    if (type && !strcmp(type, "ByteLevel")) return 0;
    if (!type || strcmp(type, "TemplateProcessing"))
        return pw_errf(err, "%s: post_processor type %s is not supported (expected ByteLevel, "
                       "TemplateProcessing or a Sequence of them)", file, type ? type : "none");
    json_t *single = json_object_get(p, "single"), *specials = json_object_get(p, "special_tokens");
    if (!json_is_array(single))
        return pw_errf(err, "%s: post_processor TemplateProcessing needs a \"single\" list", file);
    size_t i;
    json_t *piece;
    json_array_foreach(single, i, piece) {
        if (json_object_get(piece, "Sequence")) break; /* the text: the prefix ends here */
        const char *name = json_string_value(
            json_object_get(json_object_get(piece, "SpecialToken"), "id"));
        json_t *ids = json_object_get(json_object_get(specials, name ? name : ""), "ids");
        if (!name || !json_is_array(ids))
            return pw_errf(err, "%s: post_processor template piece %zu: expected a SpecialToken "
                           "named in special_tokens, or the Sequence $A", file, i);
        size_t k;
        json_t *id;
        json_array_foreach(ids, k, id) {
            json_int_t v = json_integer_value(id);
            if (!json_is_integer(id) || v < 0 || v >= b->pub.vocab_size)
                return pw_errf(err, "%s: post_processor special token %s: id outside the "
                               "vocabulary [0, %d)", file, name, b->pub.vocab_size);
            if (b->pub.n_prefix == PW_TOKENIZER_MAX_PREFIX)
                return pw_errf(err, "%s: post_processor puts more than %d tokens before the "
                               "text", file, PW_TOKENIZER_MAX_PREFIX);
            b->pub.prefix[b->pub.n_prefix++] = (int)v;
        }
    }
    return 0;
}

static int load_post(PwBpe *b, const char *file, json_t *root, PwErr *err)
{
    json_t *p = json_object_get(root, "post_processor");
    if (!p || json_is_null(p)) return 0;
    const char *type = json_string_value(json_object_get(p, "type"));
    if (type && !strcmp(type, "Sequence")) {
        size_t i;
        json_t *q;
        json_array_foreach(json_object_get(p, "processors"), i, q)
            if (post_one(b, file, q, err)) return -1;
        return 0;
    }
    return post_one(b, file, p, err);
}

/* A merge as two strings: "a b" (GPT-2's files) or ["a", "b"] (tokenizers >= 0.20). */
static int merge_parts(json_t *m, const char **a, size_t *na, const char **c, size_t *nc)
{
    if (json_is_string(m)) {
        const char *s = json_string_value(m);
        const char *sp = strchr(s, ' ');
        if (!sp || strchr(sp + 1, ' ')) return -1;
        *a = s, *na = (size_t)(sp - s), *c = sp + 1, *nc = strlen(sp + 1);
        return 0;
    }
    if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
        json_is_string(json_array_get(m, 1))) {
        *a = json_string_value(json_array_get(m, 0)), *na = json_string_length(json_array_get(m, 0));
        *c = json_string_value(json_array_get(m, 1)), *nc = json_string_length(json_array_get(m, 1));
        return 0;
    }
    return -1;
}

static int load_merges(PwBpe *b, const char *file, json_t *merges, const int inv[324], PwErr *err)
{
    size_t i;
    json_t *m;
    char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    json_array_foreach(merges, i, m) {
        const char *a, *c;
        size_t na, nc;
        if (merge_parts(m, &a, &na, &c, &nc)) {
            rc = pw_errf(err, "%s: merge %zu is neither \"a b\" nor [\"a\", \"b\"]", file, i);
            break;
        }
        if (na + nc > cap && !(buf = realloc(buf, cap = 2 * (na + nc)))) {
            rc = pw_errf(err, "%s: out of memory", file);
            break;
        }
        size_t la = unmap(inv, a, na, buf), lc = unmap(inv, c, nc, buf + la);
        int ia, ic, ir;
        if (!pw_strmap_get(&b->vocab, buf, la, &ia) || !pw_strmap_get(&b->vocab, buf + la, lc, &ic) ||
            !pw_strmap_get(&b->vocab, buf, la + lc, &ir)) {
            rc = pw_errf(err, "%s: merge %zu (%.*s %.*s) names a token not in the vocabulary", file,
                         i, (int)na, a, (int)nc, c);
            break;
        }
        /* A repeated pair keeps its last rank, as the library's map does. */
        if (pw_pairmap_put(&b->merges, ia, ic, (int)i, ir)) {
            rc = pw_errf(err, "%s: out of memory", file);
            break;
        }
    }
    free(buf);
    return rc;
}

static int load_model(PwBpe *b, const char *file, json_t *root, PwErr *err)
{
    json_t *model = json_object_get(root, "model");
    const char *type = json_string_value(json_object_get(model, "type"));
    if (!type || strcmp(type, "BPE"))
        return pw_errf(err, "%s: model type %s is not supported: expected BPE (byte-level, as "
                       "GPT-2, Llama 3, Qwen2 and SmolLM have; WordPiece and Unigram are not "
                       "implemented)", file, type ? type : "(none)");
    json_t *vocab = json_object_get(model, "vocab"), *merges = json_object_get(model, "merges");
    if (!json_is_object(vocab) || !json_is_array(merges))
        return pw_errf(err, "%s: a BPE model needs a \"vocab\" object and a \"merges\" array", file);
    const char *bad[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int k = 0; k < 2; k++)
        if (json_string_value(json_object_get(model, bad[k])))
            return pw_errf(err, "%s: %s is not supported by the byte-level BPE", file, bad[k]);
    if (json_is_true(json_object_get(model, "byte_fallback")))
        return pw_errf(err, "%s: byte_fallback is not supported (it is SentencePiece-style BPE, "
                       "not byte-level)", file);
    b->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));

    /* Ids: the largest of vocab and added_tokens bounds the table. */
    json_t *added = json_object_get(root, "added_tokens");
    long max_id = -1;
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 0x7ffffff)
            return pw_errf(err, "%s: vocab entry '%s' has no valid id", file, key);
        if (json_integer_value(v) > max_id) max_id = (long)json_integer_value(v);
    }
    size_t i;
    json_array_foreach(added, i, v) {
        json_t *id = json_object_get(v, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > 0x7ffffff ||
            !json_is_string(json_object_get(v, "content")))
            return pw_errf(err, "%s: added_tokens[%zu] needs an id and a content", file, i);
        if (json_integer_value(id) > max_id) max_id = (long)json_integer_value(id);
    }
    b->pub.vocab_size = (int)(max_id + 1);
    b->tok = calloc((size_t)max_id + 1, sizeof *b->tok);
    b->tok_len = calloc((size_t)max_id + 1, sizeof *b->tok_len);
    b->added = calloc(json_array_size(added) + 1, sizeof *b->added);
    if (!b->tok || !b->tok_len || !b->added) return pw_errf(err, "%s: out of memory", file);

    int inv[324];
    byte_of_codepoint(inv);
    char *buf = NULL;
    size_t cap = 0;
    json_object_foreach(vocab, key, v) {
        size_t n = strlen(key);
        if (n > cap && !(buf = realloc(buf, cap = 2 * n + 16))) return pw_errf(err, "out of memory");
        size_t len = unmap(inv, key, n, buf);
        int id = (int)json_integer_value(v);
        if (pw_strmap_put(&b->vocab, buf, len, id) || set_token(b, id, buf, len)) {
            free(buf);
            return pw_errf(err, "%s: out of memory", file);
        }
    }
    free(buf);
    for (int c = 0; c < 256; c++) {
        char one = (char)c;
        if (!pw_strmap_get(&b->vocab, &one, 1, &b->byte_id[c])) b->byte_id[c] = -1;
    }
    /* Added tokens are matched and decoded as their literal content, never byte-mapped. The
     * matcher's entry points into tok[id], so a second added token on one id would free the
     * bytes under the first's entry: the same token twice is kept once, two texts on one id
     * are refused (a vocab entry on the id is replaced, as GPT-2's <|endoftext|> is). */
    unsigned char *taken = calloc((size_t)max_id + 1, 1);
    if (!taken) return pw_errf(err, "%s: out of memory", file);
    int rc = 0;
    json_array_foreach(added, i, v) {
        const char *content = json_string_value(json_object_get(v, "content"));
        size_t len = json_string_length(json_object_get(v, "content"));
        int id = (int)json_integer_value(json_object_get(v, "id"));
        if (!len) continue;
        if (taken[id]) {
            if (b->tok_len[id] == (int)len && !memcmp(b->tok[id], content, len)) continue;
            rc = pw_errf(err, "%s: added_tokens[%zu] gives id %d to '%s', which an earlier added "
                         "token has ('%s'); expected one token per id", file, i, id, content,
                         b->tok[id]);
            break;
        }
        taken[id] = 1;
        if (set_token(b, id, content, len) || pw_strmap_put(&b->vocab, content, len, id)) {
            rc = pw_errf(err, "%s: out of memory", file);
            break;
        }
        b->added[b->n_added++] = (PwBpeAdded){b->tok[id], (int)len, id};
    }
    free(taken);
    return rc ? rc : load_merges(b, file, merges, inv, err);
}

/* A special of tokenizer_config.json: "text", {"content": "text"}, or null/absent (-1). */
static int special_id(PwBpe *b, const char *file, json_t *cfg, const char *name, int *id,
                      PwErr *err)
{
    json_t *v = json_object_get(cfg, name);
    *id = -1;
    if (!v || json_is_null(v)) return 0;
    if (json_is_object(v)) v = json_object_get(v, "content");
    if (!json_is_string(v))
        return pw_errf(err, "%s: %s must be a string or {\"content\": ...}", file, name);
    if (!pw_strmap_get(&b->vocab, json_string_value(v), json_string_length(v), id))
        return pw_errf(err, "%s: %s '%s' is not a token of tokenizer.json", file, name,
                       json_string_value(v));
    return 0;
}

PwBpe *pw_bpe_load(const char *dir, PwErr *err)
{
    size_t n = strlen(dir) + 32;
    char *tj = malloc(n), *tc = malloc(n);
    PwBpe *b = calloc(1, sizeof *b);
    json_t *root = NULL, *cfg = NULL;
    int ok = 0;
    if (!tj || !tc || !b) {
        pw_errf(err, "out of memory");
        goto out;
    }
    pthread_mutex_init(&b->lock, NULL);
    snprintf(tj, n, "%s/tokenizer.json", dir);
    snprintf(tc, n, "%s/tokenizer_config.json", dir);
    if (!(root = load_json(tj, 1, err)) || load_model(b, tj, root, err) ||
        load_pre(b, tj, root, err) || load_post(b, tj, root, err))
        goto out;
    if (!(cfg = load_json(tc, 0, err))) goto out;
    if (special_id(b, tc, cfg, "bos_token", &b->pub.bos_id, err) ||
        special_id(b, tc, cfg, "eos_token", &b->pub.eos_id, err) ||
        special_id(b, tc, cfg, "pad_token", &b->pub.pad_id, err) ||
        special_id(b, tc, cfg, "sep_token", &b->pub.sep_id, err))
        goto out;
    if (!(b->md = pcre2_match_data_create(1, NULL)) || !(b->pub.name = strdup(dir))) {
        pw_errf(err, "out of memory");
        goto out;
    }
    b->pub.encode = pw_bpe_encode;
    b->pub.decode = pw_bpe_decode;
    b->pub.impl = b;
    ok = 1;
out:
    json_decref(root);
    json_decref(cfg);
    free(tj);
    free(tc);
    if (!ok && b) {
        pw_bpe_free(b);
        b = NULL;
    }
    return b;
}

void pw_bpe_free(PwBpe *b)
{
    if (!b) return;
    for (int i = 0; b->tok && i < b->pub.vocab_size; i++) free(b->tok[i]);
    free(b->tok);
    free(b->tok_len);
    free(b->added);
    for (int i = 0; i < b->n_split; i++) pcre2_code_free(b->split[i]);
    pcre2_match_data_free(b->md);
    pw_strmap_free(&b->vocab);
    pw_strmap_free(&b->cache);
    pw_pairmap_free(&b->merges);
    free(b->pool);
    free(b->syms);
    free(b->ranks);
    free(b->buf);
    free(b->norm);
    free((char *)b->pub.name);
    pthread_mutex_destroy(&b->lock);
    free(b);
}
