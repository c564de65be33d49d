/* st_tmpdir.h: a scratch folder for the safetensors tests, made fresh per run and removed after,
 * so that tests running side by side never see each other's files. */
#ifndef ST_TMPDIR_H
#define ST_TMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Fills dir (cap bytes) with a new empty folder; exits with a message if none can be made. */
static inline void st_tmpdir_make(char *dir, size_t cap, const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, cap, "%s/pw_%s_XXXXXX", base && base[0] ? base : "/tmp", tag);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(2);
    }
}

/* Number of entries in dir whose name contains needle (e.g. leftover ".tmp." files). */
static inline int st_tmpdir_count(const char *dir, const char *needle)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, needle)) n++;
    if (d) closedir(d);
    return n;
}

/* The folder holds only plain files the test wrote, so one level of unlink is enough. */
static inline void st_tmpdir_remove(const char *dir)
{
    DIR *d = opendir(dir);
    char p[4096 + 256];
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p) unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

#endif
