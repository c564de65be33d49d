/* bpe.c: encoding and decoding with a byte-level BPE tokenizer: added tokens first, then the
 * Split regexes (PCRE2), then merges by rank over the bytes of each piece, with a piece cache. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "bpe.h"

/* Pieces repeat (words, indentation), so their ids are kept; the cache is flushed rather than
 * evicted when it grows past these, which keeps it a plain map. */
enum { CACHE_MAX_PIECE = 256, CACHE_MAX_ENTRIES = 1 << 16, CACHE_MAX_POOL = 1 << 20 };

typedef struct Out {
    int *ids;
    int cap, n;
} Out;

static void emit(Out *o, int id)
{
    if (o->n < o->cap) o->ids[o->n] = id;
    o->n++;
}

static int reserve(PwBpe *b, size_t n)
{
    if (n <= b->scratch_cap) return 0;
    size_t cap = n < 64 ? 64 : 2 * n;
    int *s = realloc(b->syms, cap * sizeof *s);
    if (s) b->syms = s;
    int *r = realloc(b->ranks, cap * sizeof *r);
    if (r) b->ranks = r;
    if (!s || !r) return -1;
    b->scratch_cap = cap;
    return 0;
}

static int rank_of(const PwBpe *b, int x, int y, int *id)
{
    int r;
    return pw_pairmap_get(&b->merges, x, y, &r, id) ? r : -1;
}

/* Merges the bytes of one piece into b->syms; returns their count. At each step the pair of the
 * lowest rank merges, the leftmost of equals first, as the library's priority queue does. */
static int merge_piece(PwBpe *b, const unsigned char *s, int n, PwErr *err)
{
    if (reserve(b, (size_t)n)) return pw_errf(err, "out of memory");
    int *sym = b->syms, *rank = b->ranks, merged;
    for (int i = 0; i < n; i++)
        if ((sym[i] = b->byte_id[s[i]]) < 0)
            return pw_errf(err, "%s: byte 0x%02x has no token in the vocabulary", b->pub.name, s[i]);
    for (int i = 0; i + 1 < n; i++) rank[i] = rank_of(b, sym[i], sym[i + 1], &merged);
    while (n > 1) {
        int best = -1;
        for (int i = 0; i + 1 < n; i++)
            if (rank[i] >= 0 && (best < 0 || rank[i] < rank[best])) best = i;
        if (best < 0) break;
        rank_of(b, sym[best], sym[best + 1], &sym[best]);
        memmove(sym + best + 1, sym + best + 2, sizeof *sym * (size_t)(n - best - 2));
        memmove(rank + best + 1, rank + best + 2, sizeof *rank * (size_t)(n - best - 2));
        n--;
        if (best > 0) rank[best - 1] = rank_of(b, sym[best - 1], sym[best], &merged);
        if (best + 1 < n) rank[best] = rank_of(b, sym[best], sym[best + 1], &merged);
    }
    return n;
}

static int cache_put(PwBpe *b, const char *s, size_t len, const int *ids, int n)
{
    if (b->cache.n >= CACHE_MAX_ENTRIES || b->pool_n + (size_t)n + 1 > CACHE_MAX_POOL) {
        pw_strmap_clear(&b->cache);
        b->pool_n = 0;
    }
    if (b->pool_n + (size_t)n + 1 > b->pool_cap) {
        size_t cap = b->pool_cap ? 2 * b->pool_cap : 4096;
        while (cap < b->pool_n + (size_t)n + 1) cap *= 2;
        int *p = realloc(b->pool, cap * sizeof *p);
        if (!p) return -1;
        b->pool = p;
        b->pool_cap = cap;
    }
    if (pw_strmap_put(&b->cache, s, len, (int)b->pool_n)) return -1;
    b->pool[b->pool_n] = n;
    memcpy(b->pool + b->pool_n + 1, ids, sizeof *ids * (size_t)n);
    b->pool_n += (size_t)n + 1;
    return 0;
}

static int encode_piece(PwBpe *b, const char *s, size_t len, Out *o, PwErr *err)
{
    if (!len) return 0;
    int off, id;
    if (len <= CACHE_MAX_PIECE && pw_strmap_get(&b->cache, s, len, &off)) {
        for (int i = 0; i < b->pool[off]; i++) emit(o, b->pool[off + 1 + i]);
        return 0;
    }
    /* ignore_merges (Llama 3): a piece that is a whole token is that token, merges or not. */
    if (b->ignore_merges && pw_strmap_get(&b->vocab, s, len, &id)) {
        emit(o, id);
        return 0;
    }
    if (len > 0x7fffffff) return pw_errf(err, "a piece of %zu bytes is too long", len);
    int n = merge_piece(b, (const unsigned char *)s, (int)len, err);
    if (n < 0) return -1;
    for (int i = 0; i < n; i++) emit(o, b->syms[i]);
    if (len <= CACHE_MAX_PIECE && cache_put(b, s, len, b->syms, n)) return pw_errf(err, "out of memory");
    return 0;
}

static size_t utf8_width(const unsigned char *s, size_t left)
{
    size_t w = s[0] < 0xc0 ? 1 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
    return w <= left ? w : 1;
}

/* Split level `level` of a piece: each regex match and each gap between matches (bytes the
 * regex skips, such as invalid UTF-8) goes on to the next level; past the last, to BPE. */
static int split(PwBpe *b, int level, const char *s, size_t len, Out *o, PwErr *err)
{
    if (level >= b->n_split || level >= PW_BPE_MAX_SPLITS) return encode_piece(b, s, len, o, err);
    pcre2_code *re = b->split[level];
    size_t at = 0, done = 0;
    while (at < len) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, len, at, 0, b->md, NULL);
        if (rc < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(b->md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { /* an empty match splits nothing: look again one character on */
            at = ms + utf8_width((const unsigned char *)s + ms, len - ms);
            continue;
        }
        if (ms > done && split(b, level + 1, s + done, ms - done, o, err)) return -1;
        if (split(b, level + 1, s + ms, me - ms, o, err)) return -1;
        at = done = me;
    }
    if (len > done && split(b, level + 1, s + done, len - done, o, err)) return -1;
    return 0;
}

static int grow(char **buf, size_t *cap, size_t n)
{
    if (n <= *cap) return 0;
    char *p = realloc(*buf, n);
    if (!p) return -1;
    *buf = p;
    *cap = n;
    return 0;
}

/* Appends the NFC form of s (valid UTF-8) to b->norm at *at; utf8proc does the work. */
static int nfc_run(PwBpe *b, const char *s, size_t len, size_t *at, PwErr *err)
{
    utf8proc_uint8_t *d = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &d,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (n < 0) return pw_errf(err, "NFC: %s", utf8proc_errmsg(n));
    int rc = grow(&b->norm, &b->norm_cap, *at + (size_t)n);
    if (!rc) memcpy(b->norm + *at, d, (size_t)n);
    free(d);
    if (rc) return pw_errf(err, "out of memory");
    *at += (size_t)n;
    return 0;
}

/* The NFC normalizer on a segment, into b->norm (*out, *out_len). No code point below U+0300
 * composes with anything or decomposes, and every one from U+0300 up has a lead byte of 0xCC or
 * more, so text without such bytes (all ASCII, most Latin) is already NFC and left as it is.
 * Invalid UTF-8 has no normal form: each run of valid text is normalized on its own and the
 * invalid bytes stay where they are (the library never sees them: it takes only str). */
static int nfc(PwBpe *b, const char *s, size_t len, const char **out, size_t *out_len, PwErr *err)
{
    size_t i = 0;
    while (i < len && (unsigned char)s[i] < 0xcc) i++;
    *out = s;
    *out_len = len;
    if (i == len) return 0;
    size_t at = 0, run = 0;
    i = 0;
    while (i < len) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t w = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                              (utf8proc_ssize_t)(len - i), &cp);
        if (w > 0) {
            i += (size_t)w;
            continue;
        }
        if (i > run && nfc_run(b, s + run, i - run, &at, err)) return -1;
        if (grow(&b->norm, &b->norm_cap, at + 1)) return pw_errf(err, "out of memory");
        b->norm[at++] = s[i++];
        run = i;
    }
    if (len > run && nfc_run(b, s + run, len - run, &at, err)) return -1;
    *out = b->norm;
    *out_len = at;
    return 0;
}

/* A stretch of text between added tokens: NFC when the tokenizer normalizes; ByteLevel's
 * add_prefix_space puts a space before it unless it starts with one. */
static int segment(PwBpe *b, const char *s, size_t len, Out *o, PwErr *err)
{
    if (!len) return 0;
    if (b->nfc && nfc(b, s, len, &s, &len, err)) return -1;
    if (!b->prefix_space || s[0] == ' ') return split(b, 0, s, len, o, err);
    if (grow(&b->buf, &b->buf_cap, len + 1)) return pw_errf(err, "out of memory");
    b->buf[0] = ' ';
    memcpy(b->buf + 1, s, len);
    return split(b, 0, b->buf, len + 1, o, err);
}

/* The earliest added token at or after `from`, the longest of those starting there; next[k]
 * remembers where token k was last found so each token's memmem scans the text once. */
static int next_added(const PwBpe *b, const char *s, size_t len, size_t from, size_t *next,
                      size_t *at)
{
    int best = -1;
    for (int k = 0; k < b->n_added; k++) {
        if (next[k] == SIZE_MAX || next[k] < from) {
            const char *p = memmem(s + from, len - from, b->added[k].content, (size_t)b->added[k].len);
            next[k] = p ? (size_t)(p - s) : len;
        }
        if (next[k] < len && (best < 0 || next[k] < *at ||
                              (next[k] == *at && b->added[k].len > b->added[best].len))) {
            best = k;
            *at = next[k];
        }
    }
    return best;
}

static int encode_locked(PwBpe *b, const char *text, size_t len, Out *o, PwErr *err)
{
    size_t *next = malloc(((size_t)b->n_added + 1) * sizeof *next);
    if (!next) return pw_errf(err, "out of memory");
    for (int k = 0; k < b->n_added; k++) next[k] = SIZE_MAX; /* not searched yet */
    size_t from = 0;
    int rc = 0;
    while (!rc && from < len) {
        size_t at = len;
        int k = next_added(b, text, len, from, next, &at);
        rc = segment(b, text + from, at - from, o, err);
        if (k < 0) break;
        emit(o, b->added[k].id);
        from = at + (size_t)b->added[k].len;
    }
    free(next);
    return rc;
}

int pw_bpe_encode(const PwTokenizer *t, const char *text, size_t len, int *ids, int cap,
                  PwErr *err)
{
    PwBpe *b = t->impl;
    Out o = {ids, cap, 0};
    pthread_mutex_lock(&b->lock);
    int rc = encode_locked(b, text, len, &o, err);
    pthread_mutex_unlock(&b->lock);
    if (rc) return -1;
    return o.n;
}

int pw_bpe_decode(const PwTokenizer *t, const int *ids, int n, char *out, size_t cap)
{
    const PwBpe *b = t->impl;
    size_t need = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->vocab_size || !b->tok[ids[i]]) return -1;
        size_t len = (size_t)b->tok_len[ids[i]];
        if (cap > 0 && need < cap - 1) {
            size_t room = cap - 1 - need;
            memcpy(out + need, b->tok[ids[i]], len < room ? len : room);
        }
        need += len;
    }
    if (cap > 0) out[need < cap - 1 ? need : cap - 1] = '\0';
    return need > 0x7fffffff ? -1 : (int)need;
}
