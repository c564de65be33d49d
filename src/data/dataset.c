/* dataset.c: reading one JSONL data set (prompts, SFT pairs or preference pairs) into token ids,
 * with the length limits and the over-long policy applied line by line. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pw_data.h"
#include "pw_file.h"

/* Anthropic HH texts are whole dialogues; the prompt ends with this marker's last occurrence. */
static const char HH_MARK[] = "\n\nAssistant:";

int pw_overlong_parse(const char *name, PwOverlong *out, PwErr *err)
{
    static const char *const names[] = {"drop", "error", "truncate"};
    for (int i = 0; i < 3; i++)
        if (name && !strcasecmp(name, names[i])) {
            *out = (PwOverlong)i;
            return 0;
        }
    return pw_errf(err, "over-long policy '%s': expected drop, error or truncate",
                   name ? name : "");
}

const char *pw_data_shape_name(PwDataShape s)
{
    static const char *const names[] = {"prompts", "sft", "prefs"};
    return (s >= 0 && s <= PW_DATA_PREFS) ? names[s] : "?";
}

void pw_dataset_free(PwDataset *d)
{
    free(d->prompt_off);
    free(d->prompt_len);
    free(d->resp_off);
    free(d->resp_len);
    free(d->tok);
    free(d->line);
    memset(d, 0, sizeof *d);
}

/* ---------------------------------------------------------------------- growable buffers */

typedef struct IntVec {
    int *v;
    size_t n, cap;
} IntVec;

static int vec_reserve(IntVec *a, size_t need)
{
    if (need <= a->cap) return 0;
    size_t cap = a->cap ? a->cap : 256;
    while (cap < need) cap *= 2;
    int *p = realloc(a->v, cap * sizeof *p);
    if (!p) return -1;
    a->v = p;
    a->cap = cap;
    return 0;
}

static int vec_push(IntVec *a, int x)
{
    if (vec_reserve(a, a->n + 1)) return -1;
    a->v[a->n++] = x;
    return 0;
}

/* a := pre[0..npre) + encode(text) + `special` when >= 0. The tokenizer reports the length it
 * needs, so a second call after growing always fits. */
static int encode_into(IntVec *a, const PwTokenizer *tk, const int *pre, int npre,
                       const char *text, size_t len, int special, PwErr *err)
{
    a->n = 0;
    for (int i = 0; i < npre; i++)
        if (vec_push(a, pre[i])) return pw_errf(err, "out of memory");
    size_t room = a->cap - a->n;
    int cap = room > (size_t)1 << 30 ? 1 << 30 : (int)room;
    int need = tk->encode(tk, text, len, a->v ? a->v + a->n : NULL, cap, err);
    if (need < 0) return -1;
    if (need > cap) {
        if (vec_reserve(a, a->n + (size_t)need + 1)) return pw_errf(err, "out of memory");
        need = tk->encode(tk, text, len, a->v + a->n, need, err);
        if (need < 0) return -1;
    }
    a->n += (size_t)need;
    if (special >= 0 && vec_push(a, special)) return pw_errf(err, "out of memory");
    return 0;
}

/* ------------------------------------------------------------------------ one example */

/* text := the template with the prompt in place of {prompt}. */
static int render_prompt(char **buf, size_t *cap, const char *tmpl, const char *p, size_t plen,
                         size_t *out_len, PwErr *err)
{
    const char *at = strstr(tmpl, PW_PROMPT_MARK);
    if (!at) return pw_errf(err, "data.prompt_template has no %s", PW_PROMPT_MARK);
    size_t head = (size_t)(at - tmpl), tail = strlen(at + strlen(PW_PROMPT_MARK));
    size_t n = head + plen + tail;
    if (n + 1 > *cap) {
        char *q = realloc(*buf, n + 1);
        if (!q) return pw_errf(err, "out of memory");
        *buf = q;
        *cap = n + 1;
    }
    memcpy(*buf, tmpl, head);
    memcpy(*buf + head, p, plen);
    memcpy(*buf + head + plen, at + strlen(PW_PROMPT_MARK), tail);
    (*buf)[n] = '\0';
    *out_len = n;
    return 0;
}

typedef struct Loader {
    PwDataset *d;
    const PwDataOpts *o;
    const char *path;
    int line;
    IntVec tok, poff, plen, roff, rlen, lines;
    IntVec prompt, resp[2];
    int npre; /* the tokenizer's prefix ids at the start of the prompt (0 for given ids) */
    char *text; /* the prompt in its template */
    size_t text_cap;
} Loader;

/* The vocabulary every id must fall in: the model's when given, else the tokenizer's. */
static int vocab_of(const PwDataOpts *o)
{
    return o->vocab_size > 0 ? o->vocab_size : o->tok->vocab_size;
}

static int field_error(Loader *L, PwErr *err, const char *field, const char *what)
{
    return pw_errf(err, "%s:%d: field \"%s\": %s", L->path, L->line, field, what);
}

/* The string field `name` (or its alias) of object o; NULL after an error naming the field. */
static const char *get_string(Loader *L, json_t *o, const char *name, const char *alias,
                              size_t *len, PwErr *err)
{
    json_t *v = json_object_get(o, name);
    if (!v && alias) v = json_object_get(o, alias);
    if (!v) {
        char what[160];
        snprintf(what, sizeof what, "missing (expected a string%s%s%s)", alias ? "; \"" : "",
                 alias ? alias : "", alias ? "\" is also accepted" : "");
        field_error(L, err, name, what);
        return NULL;
    }
    if (!json_is_string(v)) {
        field_error(L, err, name, "expected a string");
        return NULL;
    }
    *len = json_string_length(v);
    return json_string_value(v);
}

/* Prompt ids given verbatim ({"input_ids": [...]}, the PPO roles' format). */
static int read_ids(Loader *L, json_t *a, PwErr *err)
{
    int vocab = vocab_of(L->o);
    size_t n = json_array_size(a);
    if (n == 0) return field_error(L, err, "input_ids", "empty: a prompt needs a token");
    L->prompt.n = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(a, i);
        json_int_t t = json_is_integer(v) ? json_integer_value(v) : -1;
        if (t < 0 || t >= vocab) {
            char what[160];
            snprintf(what, sizeof what, "element %zu is not a token id in [0, %d)", i, vocab);
            return field_error(L, err, "input_ids", what);
        }
        if (vec_push(&L->prompt, (int)t)) return pw_errf(err, "out of memory");
    }
    return 0;
}

/* Splits an HH dialogue pair into prompt and two responses (texts point into the JSON). */
static int split_hh(Loader *L, json_t *o, const char **p, size_t *plen, const char **r,
                    size_t *rlen, PwErr *err)
{
    size_t clen, jlen;
    const char *c = get_string(L, o, "chosen", NULL, &clen, err);
    if (!c) return -1;
    const char *j = get_string(L, o, "rejected", NULL, &jlen, err);
    if (!j) return -1;
    size_t m = sizeof HH_MARK - 1;
    const char *last = NULL;
    for (const char *s = c; s + m <= c + clen; s++)
        if (!memcmp(s, HH_MARK, m)) last = s;
    if (!last)
        return field_error(L, err, "chosen", "no \"prompt\" field and no \"\\n\\nAssistant:\" "
                                             "in the text to take the prompt from");
    *plen = (size_t)(last - c) + m;
    if (jlen < *plen || memcmp(c, j, *plen))
        return field_error(L, err, "rejected", "does not start with the prompt of \"chosen\" "
                                               "(the text up to its last \"\\n\\nAssistant:\")");
    *p = c;
    r[0] = c + *plen;
    rlen[0] = clen - *plen;
    r[1] = j + *plen;
    rlen[1] = jlen - *plen;
    return 0;
}

/* Applies the limits to the encoded prompt and responses. Returns 1 to keep, 0 to drop, -1 on
 * error. Truncation keeps the prompt's end (where SEP and the question's last words are) and
 * the response's start, and cuts the response before the prompt when the total is too long. */
static int apply_limits(Loader *L, int nresp, PwErr *err)
{
    const PwDataOpts *o = L->o;
    int plen = (int)L->prompt.n, over = 0, rl[2] = {0, 0};
    for (int k = 0; k < nresp; k++) rl[k] = (int)L->resp[k].n;
    if (o->max_prompt_len > 0 && plen > o->max_prompt_len) over = 1;
    for (int k = 0; k < nresp; k++) {
        if (o->max_response_len > 0 && rl[k] > o->max_response_len) over = 1;
        if (o->max_len > 0 && plen + rl[k] > o->max_len) over = 1;
    }
    if (!nresp && o->max_len > 0 && plen > o->max_len) over = 1;
    if (!over) return 1;
    if (o->overlong == PW_OVERLONG_DROP) {
        L->d->dropped++;
        return 0;
    }
    if (o->overlong == PW_OVERLONG_ERROR) {
        int worst = nresp ? (rl[0] > rl[1] ? rl[0] : rl[1]) : 0;
        return pw_errf(err, "%s:%d: example too long: prompt %d + response %d tokens, limits "
                       "max_prompt_len %d, max_response_len %d, max_len %d (0 = none); the "
                       "over-long policy is error (drop or truncate would keep going)", L->path,
                       L->line, plen, worst, o->max_prompt_len, o->max_response_len, o->max_len);
    }
    int pmax = o->max_prompt_len > 0 ? o->max_prompt_len : plen;
    if (!nresp && o->max_len > 0 && o->max_len < pmax) pmax = o->max_len;
    int newp = plen < pmax ? plen : pmax;
    for (int k = 0; k < nresp; k++) {
        int r = rl[k];
        if (o->max_response_len > 0 && r > o->max_response_len) r = o->max_response_len;
        if (o->max_len > 0 && newp + r > o->max_len) {
            r = o->max_len - newp;
            if (r < 1) r = rl[k] < 1 ? rl[k] : 1; /* a response keeps at least one token */
        }
        if (o->max_len > 0 && newp + r > o->max_len) newp = o->max_len - r;
        rl[k] = r;
    }
    for (int k = 0; k < nresp; k++) L->resp[k].n = (size_t)rl[k];
    if (newp < plen) { /* keep the last newp prompt tokens, after the prefix (BOS) if it fits */
        int keep = L->npre < newp ? L->npre : 0;
        memmove(L->prompt.v + keep, L->prompt.v + (plen - newp + keep),
                (size_t)(newp - keep) * sizeof(int));
        L->prompt.n = (size_t)newp;
    }
    L->d->truncated++;
    return 1;
}

static int append_slice(IntVec *tok, const IntVec *src, IntVec *off, IntVec *len)
{
    if (vec_push(off, (int)tok->n) || vec_push(len, (int)src->n)) return -1;
    if (vec_reserve(tok, tok->n + src->n)) return -1;
    memcpy(tok->v + tok->n, src->v, src->n * sizeof(int));
    tok->n += src->n;
    return 0;
}

static int read_example(Loader *L, json_t *o, PwErr *err)
{
    const PwTokenizer *tk = L->o->tok;
    int nresp = L->d->nresp;
    const char *p = NULL, *r[2] = {NULL, NULL};
    size_t plen = 0, rlen[2] = {0, 0};
    if (L->o->shape == PW_DATA_PROMPTS) {
        json_t *ids = json_object_get(o, "input_ids");
        if (ids && !json_is_array(ids))
            return field_error(L, err, "input_ids", "expected an array of token ids");
        if (ids) {
            if (read_ids(L, ids, err)) return -1;
        } else {
            p = get_string(L, o, "prompt", "input_ids", &plen, err);
            if (!p) return -1;
        }
    } else if (L->o->shape == PW_DATA_SFT) {
        p = get_string(L, o, "prompt", NULL, &plen, err);
        if (!p) return -1;
        r[0] = get_string(L, o, "response", "completion", &rlen[0], err);
        if (!r[0]) return -1;
    } else if (json_object_get(o, "prompt")) {
        p = get_string(L, o, "prompt", NULL, &plen, err);
        if (!p) return -1;
        r[0] = get_string(L, o, "chosen", NULL, &rlen[0], err);
        if (!r[0]) return -1;
        r[1] = get_string(L, o, "rejected", NULL, &rlen[1], err);
        if (!r[1]) return -1;
    } else if (split_hh(L, o, &p, &plen, r, rlen, err)) {
        return -1;
    }
    PwErr terr;
    if (p && !tk)
        return field_error(L, err, "prompt", "a text prompt needs a tokenizer (data.tokenizer: "
                           "bytes), or give {\"input_ids\": [...]}");
    const char *tmpl = L->o->prompt_template;
    if (p && tmpl && *tmpl) {
        if (render_prompt(&L->text, &L->text_cap, tmpl, p, plen, &plen, err)) return -1;
        p = L->text;
    }
    L->npre = p ? tk->n_prefix : 0;
    if (p && encode_into(&L->prompt, tk, tk->prefix, tk->n_prefix, p, plen, tk->sep_id, &terr))
        return field_error(L, err, "prompt", terr.msg);
    static const char *const rname[2][2] = {{"response", "chosen"}, {"response", "rejected"}};
    for (int k = 0; k < nresp; k++)
        if (encode_into(&L->resp[k], tk, NULL, 0, r[k], rlen[k], tk->eos_id, &terr))
            return field_error(L, err, rname[k][L->o->shape == PW_DATA_PREFS], terr.msg);
    /* The tokenizer's ids may outrun a smaller model vocabulary (bytes need 259). */
    if (L->o->vocab_size > 0 && p) {
        const IntVec *v[3] = {&L->prompt, &L->resp[0], &L->resp[1]};
        static const char *const vname[3] = {"prompt", "response", "rejected"};
        for (int k = 0; k < 1 + nresp; k++)
            for (size_t i = 0; i < v[k]->n; i++)
                if (v[k]->v[i] >= L->o->vocab_size) {
                    char what[160];
                    snprintf(what, sizeof what, "encodes to token %d, outside the model's "
                             "vocabulary [0, %d)", v[k]->v[i], L->o->vocab_size);
                    return field_error(L, err, vname[k], what);
                }
    }
    int keep = apply_limits(L, nresp, err);
    if (keep <= 0) return keep;
    if (append_slice(&L->tok, &L->prompt, &L->poff, &L->plen) || vec_push(&L->lines, L->line))
        return pw_errf(err, "out of memory");
    for (int k = 0; k < nresp; k++)
        if (append_slice(&L->tok, &L->resp[k], &L->roff, &L->rlen))
            return pw_errf(err, "out of memory");
    int total = (int)L->prompt.n;
    for (int k = 0; k < nresp; k++)
        if ((int)L->prompt.n + (int)L->resp[k].n > total) total = (int)(L->prompt.n + L->resp[k].n);
    if (total > L->d->max_total) L->d->max_total = total;
    L->d->n++;
    return 1;
}

/* ------------------------------------------------------------------------------ loading */

int pw_dataset_load(PwDataset *d, const char *path, const PwDataOpts *o, PwErr *err)
{
    memset(d, 0, sizeof *d);
    d->shape = o->shape;
    d->nresp = o->shape == PW_DATA_SFT ? 1 : o->shape == PW_DATA_PREFS ? 2 : 0;
    snprintf(d->path, sizeof d->path, "%s", path);
    if (!o->tok && (o->shape != PW_DATA_PROMPTS || o->vocab_size <= 0))
        return pw_errf(err, "%s: no tokenizer given (only prompt files of token ids with a "
                       "vocabulary size can do without)", path);
    d->pad_id = o->tok && o->tok->pad_id >= 0 ? o->tok->pad_id : 0;
    FILE *f = pw_file_fopen(path, PW_FILE_MAX_JSONL, err);
    if (!f) return -1;
    Loader L = {.d = d, .o = o, .path = path};
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    ssize_t got;
    while (!rc && (got = getline(&line, &cap, f)) >= 0) {
        L.line++;
        /* the JSON reader stops at a NUL: whatever follows it on the line would go unread */
        const char *nul = memchr(line, '\0', (size_t)got);
        if (nul) {
            rc = pw_errf(err, "%s:%d: a NUL byte at column %d; a JSONL line is text", path,
                         L.line, (int)(nul - line) + 1);
            break;
        }
        char *s = line;
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
        if (!*s) continue;
        d->lines++;
        json_error_t je;
        json_t *obj = json_loads(s, JSON_REJECT_DUPLICATES, &je); /* else the last one wins */
        if (!obj)
            rc = pw_errf(err, "%s:%d: not valid JSON (column %d): %s", path, L.line, je.column,
                         je.text);
        else if (!json_is_object(obj))
            rc = pw_errf(err, "%s:%d: expected a JSON object, one example per line", path,
                         L.line);
        else if (read_example(&L, obj, err) < 0)
            rc = -1;
        json_decref(obj);
    }
    free(line);
    fclose(f);
    if (!rc && d->n == 0)
        rc = d->dropped ? pw_errf(err, "%s: all %d examples are over the length limits and "
                                  "were dropped", path, d->dropped)
                        : pw_errf(err, "'%s' holds no %s", path,
                                  o->shape == PW_DATA_PROMPTS ? "prompt" : "example");
    d->tok = L.tok.v;
    d->line = L.lines.v;
    d->ntok = L.tok.n;
    d->prompt_off = L.poff.v;
    d->prompt_len = L.plen.v;
    d->resp_off = L.roff.v;
    d->resp_len = L.rlen.v;
    free(L.prompt.v);
    free(L.text);
    free(L.resp[0].v);
    free(L.resp[1].v);
    if (rc) pw_dataset_free(d);
    return rc;
}
