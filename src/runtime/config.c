/* config.c: reading a configuration of any schema: a YAML file (nested mappings become dotted
 * keys) and "key.sub=value" command-line overrides, both by the type rules of config_value.c. */
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "config_internal.h"
#include "pw_file.h"
#include "yaml_limits.h"

/* ---- names: sections, suggestions ------------------------------------------------------ */

/* A section is a dotted prefix of some key: "ppo" for "ppo.epochs". */
static bool is_section(const PwCfgSchema *s, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < s->nkeys; i++)
        if (!strncmp(s->keys[i].name, name, len) && s->keys[i].name[len] == '.') return true;
    return false;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 64;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* " (did you mean 'ppo.ratio_eps'?)" for a near miss or for a key written outside its
 * section ("gae_lambda" at the top level); "" when nothing is close. */
static void suggest(const PwCfgSchema *s, const char *name, char *buf, size_t len)
{
    size_t n = s->nkeys;
    const PwCfgKey *keys = s->keys;
    const char *best = NULL;
    /* Close enough: a typo or two, or about a quarter of a long name ("ratio_epsilon"). */
    size_t best_d = strlen(name) / 4 > 2 ? strlen(name) / 4 + 1 : 3;
    const char *leaf = strrchr(name, '.');
    leaf = leaf ? leaf + 1 : name;
    for (size_t i = 0; i < n; i++) {
        const char *kleaf = strrchr(keys[i].name, '.');
        kleaf = kleaf ? kleaf + 1 : keys[i].name;
        size_t d = edit_distance(name, keys[i].name);
        if (!strcmp(kleaf, leaf) && d > 0) d = 1; /* same leaf, other section */
        if (d < best_d) {
            best_d = d;
            best = keys[i].name;
        }
    }
    if (best)
        snprintf(buf, len, " (did you mean '%s'?)", best);
    else
        buf[0] = '\0';
}

/* ---- the YAML walk -------------------------------------------------------------------- */

typedef struct Seen {
    char name[128];
    size_t line, col;
} Seen;

typedef struct Walk {
    const PwCfgSchema *schema;
    void *cfg;
    yaml_document_t *doc;
    const char *label; /* file name in messages */
    PwErr *err;
    Seen *seen;
    size_t nseen, cap;
} Walk;

static int fail_at(Walk *w, yaml_mark_t m, const char *fmt, const char *a, const char *b)
{
    char msg[900];
    snprintf(msg, sizeof msg, fmt, a, b);
    return pw_errf(w->err, "%s:%zu:%zu: %s", w->label, m.line + 1, m.column + 1, msg);
}

static const char *node_kind(const yaml_node_t *node)
{
    switch (node->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    default: return "a scalar";
    }
}

static PwScalarStyle scalar_style(const yaml_node_t *node)
{
    const char *v = (const char *)node->data.scalar.value;
    if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return PW_SCALAR_QUOTED;
    if (!*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL"))
        return PW_SCALAR_NULL;
    return PW_SCALAR_PLAIN;
}

/* Remember where a dotted name was given; a second sighting is a duplicate, whether it came
 * from the same mapping or from "ppo: {epochs: 1}" next to "ppo.epochs: 2". */
static int note_seen(Walk *w, const char *name, yaml_mark_t m)
{
    for (size_t i = 0; i < w->nseen; i++) {
        if (!strcmp(w->seen[i].name, name)) {
            return pw_errf(w->err, "%s:%zu:%zu: duplicate key '%s' (first given at %zu:%zu)",
                           w->label, m.line + 1, m.column + 1, name, w->seen[i].line,
                           w->seen[i].col);
        }
    }
    if (w->nseen == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 32;
        Seen *s = realloc(w->seen, cap * sizeof *s);
        if (!s) return pw_errf(w->err, "%s: out of memory", w->label);
        w->seen = s;
        w->cap = cap;
    }
    Seen *s = &w->seen[w->nseen++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->line = m.line + 1;
    s->col = m.column + 1;
    return 0;
}

static int set_from_node(Walk *w, const PwCfgKey *k, yaml_node_t *node)
{
    char why[900];
    if (node->type == YAML_SCALAR_NODE) {
        if (pw_cfg_set_scalar(w->cfg, k, (const char *)node->data.scalar.value,
                              scalar_style(node), why, sizeof why))
            return fail_at(w, node->start_mark, "%s%s", why, "");
        return 0;
    }
    if (node->type == YAML_SEQUENCE_NODE && k->type == PW_CFG_STRLIST) {
        yaml_node_item_t *it = node->data.sequence.items.start;
        int n = (int)(node->data.sequence.items.top - it);
        const char **items = calloc(n > 0 ? (size_t)n : 1, sizeof *items);
        if (!items) return pw_errf(w->err, "%s: out of memory", w->label);
        for (int i = 0; i < n; i++) {
            yaml_node_t *item = yaml_document_get_node(w->doc, it[i]);
            if (!item || item->type != YAML_SCALAR_NODE || scalar_style(item) == PW_SCALAR_NULL) {
                free(items);
                return fail_at(w, item ? item->start_mark : node->start_mark,
                               "%s: expected a list of strings, got %s in the list", k->name,
                               item && item->type != YAML_SCALAR_NODE ? node_kind(item) : "null");
            }
            items[i] = (const char *)item->data.scalar.value;
        }
        int rc = pw_cfg_set_list(w->cfg, k, items, n, why, sizeof why);
        free(items);
        if (rc) return fail_at(w, node->start_mark, "%s%s", why, "");
        return 0;
    }
    /* A mapping or list where one value belongs: say what was expected. */
    char ebuf[128], msg[300];
    snprintf(msg, sizeof msg, "%s: expected %s, got %s", k->name,
             pw_cfg_expected(k, ebuf, sizeof ebuf), node_kind(node));
    return fail_at(w, node->start_mark, "%s%s", msg, "");
}

static int walk_mapping(Walk *w, yaml_node_t *map, const char *prefix)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *kn = yaml_document_get_node(w->doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(w->doc, p->value);
        if (!kn || !vn) return pw_errf(w->err, "%s: malformed YAML document", w->label);
        if (kn->type != YAML_SCALAR_NODE)
            return fail_at(w, kn->start_mark, "keys must be names, got %s%s", node_kind(kn), "");
        char name[128];
        int len = snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "",
                           (const char *)kn->data.scalar.value);
        if (len < 0 || (size_t)len >= sizeof name) {
            return fail_at(w, kn->start_mark, "unknown key '%s'%s",
                           (const char *)kn->data.scalar.value, "");
        }
        if (note_seen(w, name, kn->start_mark)) return -1;

        const PwCfgKey *k = pw_cfg_find_key(w->schema, name);
        if (k) {
            if (set_from_node(w, k, vn)) return -1;
        } else if (is_section(w->schema, name)) {
            if (vn->type == YAML_MAPPING_NODE) {
                if (walk_mapping(w, vn, name)) return -1;
            } else if (!(vn->type == YAML_SCALAR_NODE && scalar_style(vn) == PW_SCALAR_NULL)) {
                /* "ppo:" with nothing under it is harmless; "ppo: 3" is not. */
                return fail_at(w, vn->start_mark,
                               "'%s' is a section: expected a mapping of its keys, got %s", name,
                               node_kind(vn));
            }
        } else {
            char hint[160];
            suggest(w->schema, name, hint, sizeof hint);
            return fail_at(w, kn->start_mark, "unknown key '%s'%s", name, hint);
        }
    }
    return 0;
}

static int yaml_problem(PwErr *err, const char *label, const yaml_parser_t *ps)
{
    const char *problem = ps->problem ? ps->problem : "cannot be read";
    if (ps->error == YAML_READER_ERROR)
        return pw_errf(err, "%s: not a YAML text: %s (byte %zu)", label, problem,
                       ps->problem_offset);
    if (ps->context)
        return pw_errf(err, "%s:%zu:%zu: YAML syntax error: %s %s", label,
                       ps->problem_mark.line + 1, ps->problem_mark.column + 1, ps->context,
                       problem);
    return pw_errf(err, "%s:%zu:%zu: YAML syntax error: %s", label, ps->problem_mark.line + 1,
                   ps->problem_mark.column + 1, problem);
}

/* A tag would be ignored by the walk (the document gives `!!str 4` the tag of a plain `4`, so
 * a string would read as a number): refuse it, naming where it is and its key. `where` is
 * "LABEL:LINE:COL: " for a file and "" for an override; `key` names the value. */
static int refuse_tag(const PwYamlTag *t, const char *where, const char *key, PwErr *err)
{
    return pw_errf(err, "%s%s%sYAML tag '%s' is not supported: write the value without it (in "
                   "quotes for a string)", where, key, *key ? ": " : "", t->tag);
}

int pw_cfg_load_string(const PwCfgSchema *s, void *cfg, const char *text, const char *label,
                       PwErr *err)
{
    /* One pass over the events before the document is built: its bounds, and its first tag. */
    PwYamlTag tag;
    int scan = pw_yaml_scan(text, strlen(text), label, &tag, err);
    if (scan < 0) return -1;
    if (scan > 0) {
        char where[200];
        snprintf(where, sizeof where, "%s:%zu:%zu: ", label, tag.line, tag.col);
        return refuse_tag(&tag, where, tag.key, err);
    }
    yaml_parser_t ps;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&ps)) return pw_errf(err, "%s: out of memory", label);
    yaml_parser_set_input_string(&ps, (const unsigned char *)text, strlen(text));
    if (!yaml_parser_load(&ps, &doc)) {
        yaml_problem(err, label, &ps);
        yaml_parser_delete(&ps);
        return -1;
    }
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    Walk w = {.schema = s, .cfg = cfg, .doc = &doc, .label = label, .err = err};
    if (!root) {
        /* An empty file (or only comments) is a valid configuration: all defaults. */
    } else if (root->type == YAML_MAPPING_NODE) {
        rc = walk_mapping(&w, root, "");
    } else if (!(root->type == YAML_SCALAR_NODE && scalar_style(root) == PW_SCALAR_NULL)) {
        rc = fail_at(&w, root->start_mark, "the top level must be a mapping of keys, got %s%s",
                     node_kind(root), "");
    }
    free(w.seen);
    yaml_document_delete(&doc);

    if (rc == 0) {
        /* One configuration per file: a second document would silently be ignored. */
        yaml_document_t next;
        if (!yaml_parser_load(&ps, &next)) {
            rc = yaml_problem(err, label, &ps);
        } else {
            yaml_node_t *r2 = yaml_document_get_root_node(&next);
            if (r2)
                rc = pw_errf(err, "%s:%zu:%zu: a second YAML document; a config file holds one",
                             label, r2->start_mark.line + 1, r2->start_mark.column + 1);
            yaml_document_delete(&next);
        }
    }
    yaml_parser_delete(&ps);
    return rc;
}

int pw_cfg_load_file(const PwCfgSchema *s, void *cfg, const char *path, PwErr *err)
{
    size_t len = 0;
    char *buf = pw_file_read(path, PW_FILE_MAX_YAML, &len, err);
    if (!buf) return -1;
    /* A NUL inside would cut the text short without a word: such a file is not YAML. */
    size_t text_len = strlen(buf);
    if (text_len != len) {
        free(buf);
        return pw_errf(err, "%s: not a YAML text: NUL byte at byte %zu", path, text_len);
    }
    int rc = pw_cfg_load_string(s, cfg, buf, path, err);
    free(buf);
    return rc;
}

/* ---- command-line overrides ----------------------------------------------------------- */

/* A message about a one-line value without its ":line:column: ": the argument says it all. */
static const char *after_mark(const char *msg)
{
    for (int colons = 0; *msg && colons < 3; msg++)
        if (*msg == ':') colons++;
    while (*msg == ' ') msg++;
    return msg;
}

int pw_cfg_apply_override(const PwCfgSchema *s, void *cfg, const char *arg, PwErr *err)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) return pw_errf(err, "override '%s': expected key=value", arg);
    char name[128];
    size_t nlen = (size_t)(eq - arg);
    if (nlen >= sizeof name) return pw_errf(err, "override '%s': unknown key", arg);
    memcpy(name, arg, nlen);
    name[nlen] = '\0';
    const char *value = eq + 1;

    const PwCfgKey *k = pw_cfg_find_key(s, name);
    if (!k) {
        if (is_section(s, name))
            return pw_errf(err, "override '%s': '%s' is a section: give one of its keys (%s.<key>=value)",
                           arg, name, name);
        char hint[160];
        suggest(s, name, hint, sizeof hint);
        return pw_errf(err, "override '%s': unknown key '%s'%s", arg, name, hint);
    }

    char why[900];
    if (k->type == PW_CFG_STRING) {
        /* Paths are taken verbatim: "a: b" or "#x" should not turn into YAML structure. */
        if (pw_cfg_set_scalar(cfg, k, value, PW_SCALAR_QUOTED, why, sizeof why))
            return pw_errf(err, "override '%s': %s", arg, why);
        return 0;
    }

    /* Every other type reads the value as a YAML value, so the rules match the file's. */
    PwErr inner;
    PwYamlTag tag;
    int scan = pw_yaml_scan(value, strlen(value), "", &tag, &inner);
    if (scan < 0) return pw_errf(err, "override '%s': %s", arg, after_mark(inner.msg));
    if (scan > 0) {
        refuse_tag(&tag, "", name, &inner);
        return pw_errf(err, "override '%s': %s", arg, inner.msg);
    }
    yaml_parser_t ps;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&ps)) return pw_errf(err, "override '%s': out of memory", arg);
    yaml_parser_set_input_string(&ps, (const unsigned char *)value, strlen(value));
    if (!yaml_parser_load(&ps, &doc)) {
        int rc = pw_errf(err, "override '%s': %s: cannot read the value: %s", arg, name,
                         ps.problem ? ps.problem : "YAML error");
        yaml_parser_delete(&ps);
        return rc;
    }
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        /* "key=" : an empty list, or an empty value that the type rules then judge. */
        rc = pw_cfg_set_scalar(cfg, k, "", k->type == PW_CFG_STRLIST ? PW_SCALAR_NULL
                                                                    : PW_SCALAR_PLAIN,
                               why, sizeof why);
        if (rc) pw_errf(err, "override '%s': %s", arg, why);
    } else {
        Walk w = {.schema = s, .cfg = cfg, .doc = &doc, .label = "", .err = &inner};
        rc = set_from_node(&w, k, root);
        if (rc) pw_errf(err, "override '%s': %s", arg, after_mark(inner.msg));
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&ps);
    return rc;
}

/* ---- the whole command line ----------------------------------------------------------- */

int pw_cfg_build(const PwCfgSchema *s, void *cfg, const char *path, const char *const *overrides,
                 int n, PwErr *err)
{
    if (pw_cfg_defaults(s, cfg)) return pw_errf(err, "configuration: out of memory");
    int rc = path ? pw_cfg_load_file(s, cfg, path, err) : 0;
    for (int i = 0; rc == 0 && i < n; i++) rc = pw_cfg_apply_override(s, cfg, overrides[i], err);
    if (rc == 0) rc = pw_cfg_validate(s, cfg, err);
    if (rc) pw_cfg_free(s, cfg);
    return rc;
}
