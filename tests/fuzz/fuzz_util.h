/* fuzz_util.h: what the fuzz targets of tests/fuzz share: a private scratch folder per process
 * and files written into it, for the parsers that read only from a path. */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Source folder of the repository, for the fixtures a target reads (tests/fuzz/meson.build). */
#ifndef PW_FUZZ_SOURCE_ROOT
#define PW_FUZZ_SOURCE_ROOT "."
#endif

/* libFuzzer's own entry points: declared here because no header of its ships them. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char fuzz_dir[512];

/* Everything a target writes goes into this folder: one file name per role, overwritten by each
 * input, so a long run never fills the disk, and targets running side by side (the fuzz suite
 * runs several at once) never read each other's inputs. */
static inline void fuzz_dir_remove(void)
{
    DIR *d = opendir(fuzz_dir);
    char p[1024];
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (snprintf(p, sizeof p, "%s/%s", fuzz_dir, e->d_name) < (int)sizeof p) unlink(p);
    }
    if (d) closedir(d);
    rmdir(fuzz_dir);
}

static inline const char *fuzz_dir_get(void)
{
    if (!fuzz_dir[0]) {
        const char *base = getenv("TMPDIR");
        if (!base || !*base || strlen(base) > 400) base = "/tmp";
        snprintf(fuzz_dir, sizeof fuzz_dir, "%s/pw_fuzz_XXXXXX", base);
        if (!mkdtemp(fuzz_dir)) {
            perror("mkdtemp");
            exit(2);
        }
        atexit(fuzz_dir_remove);
    }
    return fuzz_dir;
}

/* path := the scratch folder's `name`, holding data[0..size). A failure to write is the
 * machine's problem, not the input's: stop loudly rather than fuzz a parser on a stale file. */
static inline const char *fuzz_write(const char *name, const uint8_t *data, size_t size)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir_get(), name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) {
        perror(path);
        exit(2);
    }
    return path;
}

/* data as a NUL-terminated string (the string entry points take C strings). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) exit(2);
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
