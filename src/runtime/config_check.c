/* config_check.c: what makes a configuration of any schema valid (ranges, required keys, then the
 * schema's own rules), and the comparison of two that a resume uses to refuse a changed run. */
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

static int check_required(const PwCfgSchema *s, const void *cfg, PwErr *err)
{
    for (size_t i = 0; i < s->nkeys; i++) {
        const PwCfgKey *k = &s->keys[i];
        if (!(k->flags & PW_CFG_REQUIRED)) continue;
        bool empty = k->type == PW_CFG_STRLIST ? PW_CFG_CFIELD(cfg, k, PwStrList)->n == 0
                                               : !**PW_CFG_CFIELD(cfg, k, char *);
        if (empty) return pw_errf(err, "%s: required but not given (%s)", k->name, k->doc);
    }
    return 0;
}

int pw_cfg_validate(const PwCfgSchema *s, const void *cfg, PwErr *err)
{
    /* Ranges again: a caller may have set fields directly after loading. */
    char why[512];
    for (size_t i = 0; i < s->nkeys; i++)
        if (pw_cfg_check_range(cfg, &s->keys[i], why, sizeof why)) return pw_errf(err, "%s", why);
    if (check_required(s, cfg, err)) return -1;
    return s->check ? s->check(cfg, err) : 0;
}

int pw_cfg_rule_not_above(const char *a_key, double a, const char *b_key, double b, PwErr *err)
{
    if (a <= b) return 0;
    char as[40], bs[40];
    pw_cfg_format_double(a, as, sizeof as);
    pw_cfg_format_double(b, bs, sizeof bs);
    return pw_errf(err, "%s (%s) must not exceed %s (%s)", a_key, as, b_key, bs);
}

int pw_cfg_rule_template(const char *key, const char *tmpl, PwErr *err)
{
    static const char mark[] = "{prompt}"; /* pw_data.h's PW_PROMPT_MARK, a layer above */
    if (!tmpl || !*tmpl) return 0;
    const char *at = strstr(tmpl, mark);
    if (!at)
        return pw_errf(err, "%s: the template must hold %s where the prompt goes (e.g. "
                       "\"<|im_start|>user\\n%s<|im_end|>\\n<|im_start|>assistant\\n\")",
                       key, mark, mark);
    if (strstr(at + 1, mark))
        return pw_errf(err, "%s: %s appears more than once; expected once", key, mark);
    return 0;
}

/* The keys that differ between a and b, leaving out those flagged PW_CFG_FREE when skip_free. */
static int cfg_diff(const PwCfgSchema *s, const void *a, const void *b, int skip_free, PwErr *err)
{
    int ndiff = 0;
    char list[900] = "";
    size_t used = 0;
    for (size_t i = 0; i < s->nkeys; i++) {
        if (skip_free && (s->keys[i].flags & PW_CFG_FREE)) continue;
        char va[4096], vb[4096];
        pw_cfg_format_value(a, &s->keys[i], va, sizeof va);
        pw_cfg_format_value(b, &s->keys[i], vb, sizeof vb);
        if (!strcmp(va, vb)) continue;
        if (++ndiff <= 4 && used < sizeof list) {
            int w = snprintf(list + used, sizeof list - used, "%s%s: %s -> %s", ndiff > 1 ? "; " : "",
                             s->keys[i].name, va, vb);
            if (w > 0) used += (size_t)w;
        }
    }
    if (ndiff && err)
        pw_errf(err, "%d key%s differ%s: %s%s", ndiff, ndiff > 1 ? "s" : "", ndiff > 1 ? "" : "s",
                list, ndiff > 4 ? "; ..." : "");
    return ndiff;
}

int pw_cfg_diff(const PwCfgSchema *s, const void *a, const void *b, PwErr *err)
{
    return cfg_diff(s, a, b, 0, err);
}

int pw_cfg_check_saved(const PwCfgSchema *s, const void *cfg, const char *saved_path, PwErr *err)
{
    /* The saved configuration needs a struct of the schema's size: no type to declare it with. */
    void *saved = malloc(s->size);
    if (!saved || pw_cfg_defaults(s, saved)) {
        free(saved);
        return pw_errf(err, "%s: out of memory", saved_path);
    }
    int rc = pw_cfg_load_file(s, saved, saved_path, err);
    if (rc == 0) {
        PwErr d;
        if (cfg_diff(s, saved, cfg, 1, &d)) {
            /* Changing a key under a resumed run makes its curves mean nothing: refuse. Keys
             * that change no number (PW_CFG_FREE: time limits, progress, tracing) may differ. */
            rc = pw_errf(err, "%s: the run was started with another configuration: %s (saved -> now)",
                         saved_path, d.msg);
        }
    }
    pw_cfg_free(s, saved);
    free(saved);
    return rc;
}
