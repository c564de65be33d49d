/* config_doc.c: docs/config.md's key table comes from the key table in the code. With no
 * argument it prints the table; --check FILE fails when FILE's table is stale; --write FILE
 * replaces FILE's table (run it after changing a key, then commit docs/config.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_config.h"

#define BEGIN_MARK "<!-- BEGIN generated key table -->\n"
#define END_MARK "<!-- END generated key table -->"

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = '\0';
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    char *table = NULL;
    size_t table_len = 0;
    FILE *mem = open_memstream(&table, &table_len);
    if (!mem || pw_config_write_markdown(mem) || fclose(mem)) {
        fprintf(stderr, "config_doc: cannot render the table\n");
        return 1;
    }
    if (argc == 1) {
        fputs(table, stdout);
        free(table);
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "--check") && strcmp(argv[1], "--write"))) {
        fprintf(stderr, "usage: config_doc [--check|--write docs/config.md]\n");
        return 2;
    }
    const char *path = argv[2];
    char *doc = read_all(path);
    if (!doc) {
        fprintf(stderr, "config_doc: cannot read %s\n", path);
        return 1;
    }
    char *begin = strstr(doc, BEGIN_MARK);
    char *end = begin ? strstr(begin, END_MARK) : NULL;
    if (!begin || !end) {
        fprintf(stderr, "config_doc: %s lacks the markers '%.*s' and '%s'\n", path,
                (int)strlen(BEGIN_MARK) - 1, BEGIN_MARK, END_MARK);
        return 1;
    }
    begin += strlen(BEGIN_MARK);
    int rc = 0;
    if (!strcmp(argv[1], "--check")) {
        if ((size_t)(end - begin) != table_len || memcmp(begin, table, table_len)) {
            fprintf(stderr,
                    "config_doc: the key table in %s is stale; regenerate it with\n"
                    "  config_doc --write %s\n(the program is built in "
                    "tests/runtime/config of the build folder)\n",
                    path, path);
            rc = 1;
        } else {
            printf("config_doc: %s is up to date\n", path);
        }
    } else {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(doc, 1, (size_t)(begin - doc), f) != (size_t)(begin - doc) ||
            fwrite(table, 1, table_len, f) != table_len || fputs(end, f) < 0 || fclose(f)) {
            fprintf(stderr, "config_doc: cannot write %s\n", path);
            rc = 1;
        }
    }
    free(doc);
    free(table);
    return rc;
}
