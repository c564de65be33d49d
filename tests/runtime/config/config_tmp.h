/* config_tmp.h: a private temporary folder for the config tests, to write small YAML files
 * (bad ones mostly) at test time instead of committing one file per error case. */
#ifndef CONFIG_TMP_H
#define CONFIG_TMP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char config_tmp_dir[200];
static char config_tmp_names[64][64];
static int config_tmp_count;

/* Make the folder once; every file goes into it and config_tmp_clean removes them all. */
static inline const char *config_tmp_path(const char *name)
{
    static char path[512];
    if (!config_tmp_dir[0]) {
        const char *base = getenv("TMPDIR");
        if (!base || !*base || strlen(base) > 150) base = "/tmp";
        snprintf(config_tmp_dir, sizeof config_tmp_dir, "%s/pw_config_XXXXXX", base);
        if (!mkdtemp(config_tmp_dir)) {
            perror("mkdtemp");
            exit(1);
        }
    }
    snprintf(path, sizeof path, "%s/%.200s", config_tmp_dir, name);
    return path;
}

/* Remember a name made in the folder some other way (a FIFO, a folder, a link), for cleaning. */
static inline const char *config_tmp_made(const char *name)
{
    if (config_tmp_count < 64) snprintf(config_tmp_names[config_tmp_count++], 64, "%s", name);
    return config_tmp_path(name);
}

/* Write text (len bytes, so that NUL bytes can be tested) and return the file's path. */
static inline const char *config_tmp_write(const char *name, const char *text, size_t len)
{
    const char *path = config_tmp_path(name);
    if (config_tmp_count < 64) snprintf(config_tmp_names[config_tmp_count++], 64, "%s", name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f)) {
        perror(path);
        exit(1);
    }
    return path;
}

static inline void config_tmp_clean(void)
{
    for (int i = 0; i < config_tmp_count; i++) remove(config_tmp_path(config_tmp_names[i]));
    if (config_tmp_dir[0]) rmdir(config_tmp_dir);
}

#endif
