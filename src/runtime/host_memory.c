/* host_memory.c: how much host memory this process can still have (pw_memcheck.h).
 *
 * Read by hand from the kernel's own text files: /proc/meminfo's MemAvailable (the kernel's
 * estimate of what can be allocated without swapping) and, under a container's or a batch
 * system's limit, each cgroup's limit less what it uses beyond its page cache, which the kernel
 * reclaims before it kills. No Debian library answers this (libcgroup manages groups; hwloc and
 * sysinfo(2) give free pages, which leave out the reclaimable cache), and each figure is a line
 * of text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_memcheck.h"

/* The number after `key` at the start of a line of `path` ("MemAvailable:", "file "): 0, or -1
 * where there is none. */
static int read_keyed(const char *path, const char *key, uint64_t *v)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[512];
    size_t n = strlen(key);
    int rc = -1;
    while (rc && fgets(line, sizeof line, f)) {
        char *end;
        if (strncmp(line, key, n)) continue;
        unsigned long long x = strtoull(line + n, &end, 10);
        if (end != line + n) {
            *v = x;
            rc = 0;
        }
    }
    fclose(f);
    return rc;
}

/* A file holding one number ("max", a v2 limit that is none, gives -1). */
static int read_number(const char *path, uint64_t *v)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[64];
    int rc = -1;
    if (fgets(line, sizeof line, f)) {
        char *end;
        unsigned long long x = strtoull(line, &end, 10);
        if (end != line && (*end == '\n' || *end == '\0')) {
            *v = x;
            rc = 0;
        }
    }
    fclose(f);
    return rc;
}

/* A limit below what was known replaces it, with where it came from. */
static void lower(PwHostMemory *m, uint64_t bytes, const char *fmt, const char *a, const char *b)
{
    if (bytes >= m->bytes) return;
    m->bytes = (size_t)bytes;
    snprintf(m->source, sizeof m->source, fmt, a, b);
}

/* One cgroup folder: limit - (usage - page cache), where it has a limit. A v1 limit of "no
 * limit" is a page-rounded 2^63 - 1; any limit past 2^60 bytes is taken as none. */
static void cgroup_dir(PwHostMemory *m, const char *dir, const char *cg, int v2)
{
    char path[4400];
    uint64_t limit, used, cache = 0;
    snprintf(path, sizeof path, "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
    if (read_number(path, &limit) || limit >= ((uint64_t)1 << 60)) return;
    snprintf(path, sizeof path, "%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
    if (read_number(path, &used)) return;
    snprintf(path, sizeof path, "%s/memory.stat", dir);
    if (read_keyed(path, v2 ? "file " : "total_cache ", &cache) && !v2)
        (void)read_keyed(path, "cache ", &cache);
    used = cache < used ? used - cache : 0;
    lower(m, used < limit ? limit - used : 0, "cgroup %s %s", *cg ? cg : "/",
          v2 ? "memory.max" : "memory.limit_in_bytes");
}

/* Each cgroup from the process's own up to the hierarchy's root: a parent's limit binds too.
 * Inside a container the path in /proc/self/cgroup may be the host's while the hierarchy mounted
 * is the container's own; its root is still found, at the top of the walk. */
static void cgroup_walk(PwHostMemory *m, const char *root, const char *mount, char *cg, int v2)
{
    char dir[4200];
    for (;;) {
        snprintf(dir, sizeof dir, "%s%s%s", root, mount, cg);
        cgroup_dir(m, dir, cg, v2);
        char *slash = strrchr(cg, '/');
        if (!slash || !*cg) return;
        *slash = '\0';
    }
}

int pw_host_memory(const char *root, PwHostMemory *out)
{
    char path[4200];
    uint64_t kib;
    memset(out, 0, sizeof *out);
    snprintf(path, sizeof path, "%s/proc/meminfo", root);
    if (read_keyed(path, "MemAvailable:", &kib)) return -1;
    out->bytes = (size_t)(kib * 1024);
    snprintf(out->source, sizeof out->source, "MemAvailable");
    /* "0::/path" is the v2 hierarchy; "N:...memory...:/path" the v1 memory controller's */
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c1 = *c2 = '\0';
        char *ctl = c1 + 1, *cg = c2 + 1;
        if (!strcmp(line, "0") && !*ctl) {
            cgroup_walk(out, root, "/sys/fs/cgroup", cg, 1);
        } else { /* "cpu,memory" or "memory": the v1 memory controller */
            for (char *t = strtok(ctl, ","); t; t = strtok(NULL, ","))
                if (!strcmp(t, "memory")) cgroup_walk(out, root, "/sys/fs/cgroup/memory", cg, 0);
        }
    }
    fclose(f);
    return 0;
}
