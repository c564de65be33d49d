/* config_out.c: a configuration of any schema written out: JSON for tools, YAML that the loader
 * reads back (kept in the run folder), the Markdown key reference of the docs, the --help list. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config_internal.h"
#include "pw_file.h"

/* "ppo.epochs" -> section "ppo" (length 3), leaf "epochs"; top-level keys have no section. */
static size_t section_len(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? (size_t)(dot - name) : 0;
}

void *pw_cfg_to_json(const PwCfgSchema *s, const void *cfg)
{
    size_t n = s->nkeys;
    const PwCfgKey *keys = s->keys;
    json_t *root = json_object();
    if (!root) return NULL;
    for (size_t i = 0; i < n; i++) {
        const PwCfgKey *k = &keys[i];
        json_t *v = NULL;
        switch (k->type) {
        case PW_CFG_BOOL: v = json_boolean(*PW_CFG_CFIELD(cfg, k, bool)); break;
        case PW_CFG_INT: {
            int64_t x = *PW_CFG_CFIELD(cfg, k, int64_t);
            v = (k->flags & PW_CFG_AUTO) && x == PW_CFG_AUTO_INT ? json_string("auto")
                                                                  : json_integer((json_int_t)x);
            break;
        }
        case PW_CFG_FLOAT: v = json_real(*PW_CFG_CFIELD(cfg, k, double)); break;
        case PW_CFG_STRING: v = json_string(*PW_CFG_CFIELD(cfg, k, char *)); break;
        case PW_CFG_ENUM:
            v = json_string(pw_cfg_enum_name(k, *PW_CFG_CFIELD(cfg, k, int)));
            break;
        case PW_CFG_STRLIST: {
            const PwStrList *l = PW_CFG_CFIELD(cfg, k, PwStrList);
            v = json_array();
            for (int j = 0; v && j < l->n; j++) json_array_append_new(v, json_string(l->items[j]));
            break;
        }
        }
        if (!v) goto fail;
        size_t sl = section_len(k->name);
        json_t *parent = root;
        if (sl) {
            char sec[64];
            snprintf(sec, sizeof sec, "%.*s", (int)sl, k->name);
            parent = json_object_get(root, sec);
            if (!parent) {
                parent = json_object();
                if (!parent || json_object_set_new(root, sec, parent)) {
                    json_decref(v);
                    goto fail;
                }
            }
        }
        if (json_object_set_new(parent, k->name + (sl ? sl + 1 : 0), v)) goto fail;
    }
    return root;
fail:
    json_decref(root);
    return NULL;
}

int pw_cfg_write_yaml(const PwCfgSchema *s, const void *cfg, FILE *f)
{
    size_t n = s->nkeys;
    const PwCfgKey *keys = s->keys;
    char cur[64] = "";
    char val[8192];
    fprintf(f, "# %s\n", s->title);
    for (size_t i = 0; i < n; i++) {
        const PwCfgKey *k = &keys[i];
        size_t sl = section_len(k->name);
        /* The table keeps each section's keys together, so each section opens once. */
        if (sl && (strlen(cur) != sl || strncmp(cur, k->name, sl))) {
            snprintf(cur, sizeof cur, "%.*s", (int)sl, k->name);
            fprintf(f, "%s:\n", cur);
        }
        pw_cfg_format_value(cfg, k, val, sizeof val);
        fprintf(f, "%s%s: %s\n", sl ? "  " : "", k->name + (sl ? sl + 1 : 0), val);
    }
    return ferror(f) ? -1 : 0;
}

char *pw_cfg_yaml_string(const PwCfgSchema *s, const void *cfg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) return NULL;
    int bad = pw_cfg_write_yaml(s, cfg, mem);
    if (fclose(mem) || bad) {
        free(text);
        return NULL;
    }
    return text;
}

int pw_cfg_save_yaml(const PwCfgSchema *s, const void *cfg, const char *path, PwErr *err)
{
    /* whole or not at all (pw_file.h): a crash leaves the old file or the new one */
    PwFileOut o;
    FILE *f = pw_file_out_open(&o, path, err);
    if (!f) return -1;
    /* a failed write leaves the stream's error, which the close reports */
    pw_cfg_write_yaml(s, cfg, f);
    return pw_file_out_close(&o, 0, err);
}

/* Markdown table cells: a '|' would end the cell. */
static void put_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputc('\\', f);
        fputc(*s, f);
    }
}

int pw_cfg_write_markdown(const PwCfgSchema *s, FILE *f)
{
    size_t n = s->nkeys;
    const PwCfgKey *keys = s->keys;
    fprintf(f, "| key | type | default | range | description | default from |\n");
    fprintf(f, "|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        const PwCfgKey *k = &keys[i];
        char range[300];
        if (k->type == PW_CFG_ENUM) {
            size_t used = 0;
            range[0] = '\0';
            for (int j = 0; k->enum_names[j] && used < sizeof range; j++)
                used += (size_t)snprintf(range + used, sizeof range - used, "%s`%s`",
                                         j ? ", " : "", k->enum_names[j]);
        } else {
            pw_cfg_format_range(k, range, sizeof range);
        }
        fprintf(f, "| `%s` | %s | ", k->name, pw_cfg_type_name(k->type));
        if (k->flags & PW_CFG_REQUIRED)
            fprintf(f, "required");
        else if (k->type == PW_CFG_STRING && !k->def[0])
            fprintf(f, "empty");
        else
            fprintf(f, "`%s`", k->def);
        fprintf(f, " | ");
        put_cell(f, range);
        fprintf(f, " | ");
        put_cell(f, k->doc);
        if (k->flags & PW_CFG_FREE) fprintf(f, " (may change on `--resume`)");
        fprintf(f, " | ");
        put_cell(f, k->source);
        fprintf(f, " |\n");
    }
    return ferror(f) ? -1 : 0;
}

int pw_cfg_write_help(const PwCfgSchema *s, FILE *f)
{
    for (size_t i = 0; i < s->nkeys; i++) {
        const PwCfgKey *k = &s->keys[i];
        const char *def = k->type == PW_CFG_STRING && !k->def[0] ? "\"\"" : k->def;
        fprintf(f, "  %-24s %-8s %s\n", k->name, def, k->doc);
    }
    return ferror(f) ? -1 : 0;
}
