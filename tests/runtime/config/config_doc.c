/* config_doc.c: the docs' key tables come from the key tables in the code. `config_doc NAME`
 * prints the table of schema NAME (ppo, train); --check FILE... fails when a marked table in a
 * file is stale; --write FILE... replaces them (run it after changing a key, then commit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_config.h"
#include "pw_test.h"
#include "pw_train_config.h"

/* A table stands between "<!-- BEGIN generated key table: NAME -->" and the END line. */
#define BEGIN_MARK "<!-- BEGIN generated key table: "
#define BEGIN_TAIL " -->\n"
#define END_MARK "<!-- END generated key table -->"

static const PwCfgSchema *const schemas[] = {&pw_config_schema, &pw_train_config_schema};

static const PwCfgSchema *schema_named(const char *name, size_t len)
{
    for (size_t i = 0; i < PW_ARRAY_LEN(schemas); i++)
        if (strlen(schemas[i]->name) == len && !strncmp(schemas[i]->name, name, len))
            return schemas[i];
    return NULL;
}

/* The Markdown table of s in a malloc'd string, or NULL. */
static char *render(const PwCfgSchema *s)
{
    char *table = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&table, &len);
    if (!mem) return NULL;
    int bad = pw_cfg_write_markdown(s, mem);
    if (fclose(mem) || bad) {
        free(table);
        return NULL;
    }
    return table;
}

/* Every marked table of path checked (write = 0) or regenerated (write = 1); 0 when up to
 * date or written. */
static int process(const char *path, int write)
{
    char *doc = pw_test_slurp(path, NULL);
    if (!doc) {
        fprintf(stderr, "config_doc: cannot read %s\n", path);
        return 1;
    }
    char *text = NULL;
    size_t text_len = 0;
    FILE *out = open_memstream(&text, &text_len);
    int rc = out ? 0 : 1, ntables = 0;
    const char *at = doc;
    for (char *b; rc == 0 && (b = strstr(at, BEGIN_MARK));) {
        char *name = b + strlen(BEGIN_MARK), *tail = strstr(name, BEGIN_TAIL);
        char *end = tail ? strstr(tail, END_MARK) : NULL;
        const PwCfgSchema *s = tail ? schema_named(name, (size_t)(tail - name)) : NULL;
        if (!s || !end) {
            fprintf(stderr, "config_doc: %s: a '%s' marker without a known table name "
                            "(ppo, train) or without its '%s'\n", path, BEGIN_MARK, END_MARK);
            rc = 1;
            break;
        }
        char *body = tail + strlen(BEGIN_TAIL), *table = render(s);
        if (!table) {
            fprintf(stderr, "config_doc: cannot render the %s table\n", s->name);
            rc = 1;
            break;
        }
        if (!write && ((size_t)(end - body) != strlen(table) || memcmp(body, table, strlen(table)))) {
            fprintf(stderr,
                    "config_doc: the %s key table in %s is stale; regenerate it with\n"
                    "  config_doc --write %s\n(the program is built in tests/runtime/config "
                    "of the build folder)\n", s->name, path, path);
            rc = 1;
        }
        fwrite(at, 1, (size_t)(body - at), out);
        fputs(table, out);
        free(table);
        at = end;
        ntables++;
    }
    if (out) {
        fputs(at, out);
        if (fclose(out)) rc = 1;
    }
    if (rc == 0 && ntables == 0) {
        fprintf(stderr, "config_doc: %s has no '%sNAME -->' marker\n", path, BEGIN_MARK);
        rc = 1;
    }
    if (rc == 0 && write) {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(text, 1, text_len, f) != text_len || fclose(f)) {
            fprintf(stderr, "config_doc: cannot write %s\n", path);
            rc = 1;
        }
    } else if (rc == 0) {
        printf("config_doc: %s is up to date (%d table%s)\n", path, ntables, ntables > 1 ? "s" : "");
    }
    free(text);
    free(doc);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 2 && argv[1][0] != '-') {
        const PwCfgSchema *s = schema_named(argv[1], strlen(argv[1]));
        char *table = s ? render(s) : NULL;
        if (!table) {
            fprintf(stderr, "config_doc: no table '%s' (ppo, train)\n", argv[1]);
            return 1;
        }
        fputs(table, stdout);
        free(table);
        return 0;
    }
    if (argc < 3 || (strcmp(argv[1], "--check") && strcmp(argv[1], "--write"))) {
        fprintf(stderr, "usage: config_doc ppo|train\n"
                        "       config_doc --check|--write docs/config.md docs/training.md\n");
        return 2;
    }
    int rc = 0;
    for (int i = 2; i < argc; i++) rc |= process(argv[i], !strcmp(argv[1], "--write"));
    return rc;
}
