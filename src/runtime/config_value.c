/* config_value.c: the type rules of every configuration schema, shared by the YAML file, the
 * command line and the defaults: text -> typed value with range checks, and typed value -> text. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_internal.h"

const char *pw_cfg_expected(const PwCfgKey *k, char *buf, size_t len)
{
    switch (k->type) {
    case PW_CFG_BOOL: return "a bool (true or false)";
    case PW_CFG_INT: return (k->flags & PW_CFG_AUTO) ? "an integer or auto" : "an integer";
    case PW_CFG_FLOAT: return "a number";
    case PW_CFG_STRING: return "a string";
    case PW_CFG_STRLIST: return "a list of strings";
    case PW_CFG_ENUM: {
        size_t used = (size_t)snprintf(buf, len, "one of ");
        for (int i = 0; k->enum_names[i] && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "|" : "",
                                     k->enum_names[i]);
        return buf;
    }
    }
    return "?";
}

/* "got 'x'" for plain text, "got \"x\" (a quoted string)" for quoted: a quoted 4 is a string
 * in YAML, and saying so explains an error that would otherwise look wrong. */
static int type_error(const PwCfgKey *k, const char *text, PwScalarStyle style, char *why,
                      size_t why_len)
{
    char ebuf[128];
    const char *exp = pw_cfg_expected(k, ebuf, sizeof ebuf);
    if (style == PW_SCALAR_NULL)
        snprintf(why, why_len, "%s: expected %s, got null", k->name, exp);
    else if (style == PW_SCALAR_QUOTED)
        snprintf(why, why_len, "%s: expected %s, got \"%s\" (a quoted string)", k->name, exp, text);
    else
        snprintf(why, why_len, "%s: expected %s, got '%s'", k->name, exp, text);
    return -1;
}

void pw_cfg_format_double(double x, char *buf, size_t len)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) return;
    }
}

void pw_cfg_format_range(const PwCfgKey *k, char *buf, size_t len)
{
    char lo[40], hi[40];
    pw_cfg_format_double(k->min, lo, sizeof lo);
    pw_cfg_format_double(k->max, hi, sizeof hi);
    if (k->type == PW_CFG_INT) { /* whole numbers as written: 1000, not the shorter 1e+03 */
        snprintf(lo, sizeof lo, "%.0f", k->min);
        snprintf(hi, sizeof hi, "%.0f", k->max);
    }
    bool has_min = k->flags & PW_CFG_MIN, has_max = k->flags & PW_CFG_MAX;
    if (has_min && has_max)
        snprintf(buf, len, "%c%s, %s%c", (k->flags & PW_CFG_MIN_OPEN) ? '(' : '[', lo, hi,
                 (k->flags & PW_CFG_MAX_OPEN) ? ')' : ']');
    else if (has_min)
        snprintf(buf, len, "%s %s", (k->flags & PW_CFG_MIN_OPEN) ? ">" : ">=", lo);
    else if (has_max)
        snprintf(buf, len, "%s %s", (k->flags & PW_CFG_MAX_OPEN) ? "<" : "<=", hi);
    else
        buf[0] = '\0';
}

static bool in_range(const PwCfgKey *k, double v)
{
    if (k->flags & PW_CFG_MIN) {
        if ((k->flags & PW_CFG_MIN_OPEN) ? !(v > k->min) : !(v >= k->min)) return false;
    }
    if (k->flags & PW_CFG_MAX) {
        if ((k->flags & PW_CFG_MAX_OPEN) ? !(v < k->max) : !(v <= k->max)) return false;
    }
    return true;
}

static int range_error(const PwCfgKey *k, const char *text, char *why, size_t why_len)
{
    char r[96];
    pw_cfg_format_range(k, r, sizeof r);
    snprintf(why, why_len, "%s: %s is out of range %s", k->name, text, r);
    return -1;
}

/* An int key with PW_CFG_AUTO holding `auto`: no number to check or print. */
static bool is_auto(const void *cfg, const PwCfgKey *k)
{
    return k->type == PW_CFG_INT && (k->flags & PW_CFG_AUTO) &&
           *PW_CFG_CFIELD(cfg, k, int64_t) == PW_CFG_AUTO_INT;
}

int pw_cfg_check_range(const void *cfg, const PwCfgKey *k, char *why, size_t why_len)
{
    double v;
    if (is_auto(cfg, k)) return 0;
    if (k->type == PW_CFG_INT) v = (double)*PW_CFG_CFIELD(cfg, k, int64_t);
    else if (k->type == PW_CFG_FLOAT) v = *PW_CFG_CFIELD(cfg, k, double);
    else return 0;
    if (in_range(k, v)) return 0;
    char text[64];
    pw_cfg_format_value(cfg, k, text, sizeof text);
    return range_error(k, text, why, why_len);
}

/* Decimal integer, optional sign, nothing else: "1e3", "0x10" and "4.0" are not integers. */
static int parse_int(const char *s, int64_t *out)
{
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    if (!isdigit((unsigned char)*p)) return -1;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q)) return -1;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE) return -2;
    *out = (int64_t)v;
    return 0;
}

/* A finite decimal number; strtod alone would also take "inf", "nan" and hex floats. */
static int parse_float(const char *s, double *out)
{
    if (!*s) return -1;
    for (const char *q = s; *q; q++)
        if (!isdigit((unsigned char)*q) && !strchr("+-.eE", *q)) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end) return -1;
    if (errno == ERANGE && (v > 1.0 || v < -1.0)) return -2;
    *out = v;
    return 0;
}

/* Where s stops being UTF-8 (a stray byte, an overlong form, a surrogate, a value past
 * U+10FFFF: what libyaml refuses), or -1 when all of it is. A string value must be text a
 * configuration file can hold, or the run's config.yaml could not be read back on resume. */
static long utf8_bad_at(const char *s)
{
    static const uint32_t least[4] = {0, 0x80, 0x800, 0x10000};
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; p[i];) {
        unsigned c = p[i];
        int more = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2
                 : (c & 0xf8) == 0xf0 ? 3 : -1;
        if (more < 0) return (long)i;
        uint32_t cp = c & (0x7fu >> more);
        /* A NUL ends the loop here too: it is not a continuation byte. */
        for (int k = 1; k <= more; k++) {
            if ((p[i + k] & 0xc0) != 0x80) return (long)i;
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        if (cp < least[more] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return (long)i;
        i += (size_t)more + 1;
    }
    return -1;
}

static int not_text(const PwCfgKey *k, long at, char *why, size_t why_len)
{
    snprintf(why, why_len, "%s: the value is not UTF-8 text (byte %ld); expected text a "
             "configuration file can hold", k->name, at);
    return -1;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int pw_cfg_set_scalar(void *cfg, const PwCfgKey *k, const char *text, PwScalarStyle style,
                      char *why, size_t why_len)
{
    if (k->type == PW_CFG_STRING) {
        long bad = style == PW_SCALAR_NULL ? -1 : utf8_bad_at(text);
        if (bad >= 0) return not_text(k, bad, why, why_len);
        char *d = dup_str(style == PW_SCALAR_NULL ? "" : text);
        if (!d) return snprintf(why, why_len, "%s: out of memory", k->name), -1;
        char **slot = PW_CFG_FIELD(cfg, k, char *);
        free(*slot);
        *slot = d;
        return 0;
    }
    if (k->type == PW_CFG_STRLIST) {
        /* A single path is a one-member ensemble; null is the empty list. */
        if (style == PW_SCALAR_NULL) return pw_cfg_set_list(cfg, k, NULL, 0, why, why_len);
        return pw_cfg_set_list(cfg, k, &text, 1, why, why_len);
    }
    /* Typed values must be plain scalars: YAML itself says a quoted "4" is a string. */
    if (style != PW_SCALAR_PLAIN) return type_error(k, text, style, why, why_len);

    switch (k->type) {
    case PW_CFG_BOOL: {
        bool v;
        if (!strcmp(text, "true") || !strcmp(text, "True") || !strcmp(text, "TRUE"))
            v = true;
        else if (!strcmp(text, "false") || !strcmp(text, "False") || !strcmp(text, "FALSE"))
            v = false;
        else
            return type_error(k, text, style, why, why_len);
        *PW_CFG_FIELD(cfg, k, bool) = v;
        return 0;
    }
    case PW_CFG_INT: {
        int64_t v = 0;
        if ((k->flags & PW_CFG_AUTO) && !strcasecmp(text, "auto")) {
            *PW_CFG_FIELD(cfg, k, int64_t) = PW_CFG_AUTO_INT;
            return 0;
        }
        int rc = parse_int(text, &v);
        if (rc == -1) return type_error(k, text, style, why, why_len);
        if (rc == -2 || !in_range(k, (double)v)) return range_error(k, text, why, why_len);
        *PW_CFG_FIELD(cfg, k, int64_t) = v;
        return 0;
    }
    case PW_CFG_FLOAT: {
        double v = 0;
        int rc = parse_float(text, &v);
        if (rc == -1) return type_error(k, text, style, why, why_len);
        if (rc == -2 || !in_range(k, v)) return range_error(k, text, why, why_len);
        *PW_CFG_FIELD(cfg, k, double) = v;
        return 0;
    }
    case PW_CFG_ENUM:
        /* Case-insensitive: the reward-ensemble code (Coste et al.) spells "WCO" and "UWO". */
        for (int i = 0; k->enum_names[i]; i++) {
            if (!strcasecmp(text, k->enum_names[i])) {
                *PW_CFG_FIELD(cfg, k, int) = i;
                return 0;
            }
        }
        {
            char ebuf[128];
            snprintf(why, why_len, "%s: '%s' is not %s", k->name, text,
                     pw_cfg_expected(k, ebuf, sizeof ebuf));
        }
        return -1;
    default:
        break;
    }
    return type_error(k, text, style, why, why_len);
}

int pw_cfg_set_list(void *cfg, const PwCfgKey *k, const char *const *items, int n,
                    char *why, size_t why_len)
{
    PwStrList fresh = {NULL, 0};
    for (int i = 0; i < n; i++) {
        long bad = utf8_bad_at(items[i]);
        if (bad >= 0) return not_text(k, bad, why, why_len);
    }
    if (n > 0) {
        fresh.items = calloc((size_t)n, sizeof *fresh.items);
        if (!fresh.items) return snprintf(why, why_len, "%s: out of memory", k->name), -1;
        for (int i = 0; i < n; i++) {
            fresh.items[i] = dup_str(items[i]);
            if (!fresh.items[i]) {
                for (int j = 0; j < i; j++) free(fresh.items[j]);
                free(fresh.items);
                return snprintf(why, why_len, "%s: out of memory", k->name), -1;
            }
            fresh.n = i + 1;
        }
    }
    PwStrList *slot = PW_CFG_FIELD(cfg, k, PwStrList);
    for (int j = 0; j < slot->n; j++) free(slot->items[j]);
    free(slot->items);
    *slot = fresh;
    return 0;
}

/* YAML double-quoted form: safe for any path, and read back verbatim by the loader. */
static size_t quote(const char *s, char *buf, size_t len)
{
    size_t used = 0;
#define PUT(...)                                                                   \
    do {                                                                           \
        int w_ = snprintf(buf + used, used < len ? len - used : 0, __VA_ARGS__);   \
        if (w_ > 0) used += (size_t)w_;                                            \
    } while (0)
    PUT("\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') PUT("\\%c", *p);
        else if (*p == '\n') PUT("\\n");
        else if (*p == '\t') PUT("\\t");
        else if (*p < 0x20 || *p == 0x7f) PUT("\\x%02x", *p);
        /* Characters YAML does not take as they are (the C1 controls, U+FFFE and U+FFFF) or
         * that YAML 1.1 counts as line breaks (NEL, one of the C1, U+2028, U+2029) go as
         * escapes, or the value would not read back the same. The string is UTF-8
         * (pw_cfg_set_scalar), and a NUL differs from every byte tested after it, so no test
         * reads past the end. */
        else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
            PUT("\\x%02x", p[1]);
            p += 1;
        } else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
            PUT("\\u20%02x", p[2] & 0x3f);
            p += 2;
        } else if (p[0] == 0xef && p[1] == 0xbf && p[2] >= 0xbe) {
            PUT("\\uff%02x", 0xc0 | (p[2] & 0x3f));
            p += 2;
        } else {
            PUT("%c", *p);
        }
    }
    PUT("\"");
#undef PUT
    return used;
}

void pw_cfg_format_value(const void *cfg, const PwCfgKey *k, char *buf, size_t len)
{
    buf[0] = '\0';
    if (is_auto(cfg, k)) {
        snprintf(buf, len, "auto");
        return;
    }
    switch (k->type) {
    case PW_CFG_BOOL:
        snprintf(buf, len, "%s", *PW_CFG_CFIELD(cfg, k, bool) ? "true" : "false");
        break;
    case PW_CFG_INT:
        snprintf(buf, len, "%" PRId64, *PW_CFG_CFIELD(cfg, k, int64_t));
        break;
    case PW_CFG_FLOAT:
        pw_cfg_format_double(*PW_CFG_CFIELD(cfg, k, double), buf, len);
        break;
    case PW_CFG_STRING: {
        const char *s = *PW_CFG_CFIELD(cfg, k, char *);
        quote(s ? s : "", buf, len);
        break;
    }
    case PW_CFG_ENUM: {
        const char *name = pw_cfg_enum_name(k, *PW_CFG_CFIELD(cfg, k, int));
        snprintf(buf, len, "%s", name ? name : "?");
        break;
    }
    case PW_CFG_STRLIST: {
        const PwStrList *l = PW_CFG_CFIELD(cfg, k, PwStrList);
        size_t used = (size_t)snprintf(buf, len, "[");
        for (int i = 0; i < l->n && used < len; i++) {
            if (i) used += (size_t)snprintf(buf + used, len - used, ", ");
            if (used < len) used += quote(l->items[i], buf + used, len - used);
        }
        if (used < len) snprintf(buf + used, len - used, "]");
        break;
    }
    }
}

/* ---- the table as a whole --------------------------------------------------------------- */

const char *pw_cfg_type_name(PwCfgType t)
{
    switch (t) {
    case PW_CFG_BOOL: return "bool";
    case PW_CFG_INT: return "int";
    case PW_CFG_FLOAT: return "float";
    case PW_CFG_STRING: return "string";
    case PW_CFG_ENUM: return "enum";
    case PW_CFG_STRLIST: return "string list";
    }
    return "?";
}

const PwCfgKey *pw_cfg_find_key(const PwCfgSchema *s, const char *name)
{
    for (size_t i = 0; i < s->nkeys; i++)
        if (!strcmp(s->keys[i].name, name)) return &s->keys[i];
    return NULL;
}

const char *pw_cfg_enum_name(const PwCfgKey *k, int value)
{
    if (!k || k->type != PW_CFG_ENUM || value < 0) return NULL;
    for (int i = 0; k->enum_names[i]; i++)
        if (i == value) return k->enum_names[i];
    return NULL;
}

int pw_cfg_defaults(const PwCfgSchema *s, void *cfg)
{
    /* Start from zero so that freeing a half-filled config is safe. */
    memset(cfg, 0, s->size);
    char why[256];
    for (size_t i = 0; i < s->nkeys; i++) {
        const PwCfgKey *k = &s->keys[i];
        int rc;
        /* Defaults are parsed by the same rules as a file, so the docs cannot disagree. */
        if (k->type == PW_CFG_STRLIST)
            rc = pw_cfg_set_list(cfg, k, NULL, 0, why, sizeof why);
        else
            rc = pw_cfg_set_scalar(cfg, k, k->def,
                                   k->type == PW_CFG_STRING ? PW_SCALAR_QUOTED : PW_SCALAR_PLAIN,
                                   why, sizeof why);
        if (rc) {
            pw_cfg_free(s, cfg);
            return -1;
        }
    }
    return 0;
}

void pw_cfg_free(const PwCfgSchema *s, void *cfg)
{
    if (!cfg) return;
    for (size_t i = 0; i < s->nkeys; i++) {
        const PwCfgKey *k = &s->keys[i];
        if (k->type == PW_CFG_STRING) {
            char **str = PW_CFG_FIELD(cfg, k, char *);
            free(*str);
            *str = NULL;
        } else if (k->type == PW_CFG_STRLIST) {
            PwStrList *l = PW_CFG_FIELD(cfg, k, PwStrList);
            for (int j = 0; j < l->n; j++) free(l->items[j]);
            free(l->items);
            l->items = NULL;
            l->n = 0;
        }
    }
}
