/* test_host_memory.c: pw_host_memory on made-up systems (a folder standing for "/"), the answers
 * worked by hand: MemAvailable alone; a cgroup v2 limit below it, less the usage beyond the page
 * cache, and a parent's tighter limit; "max" (no limit); a v1 memory controller with its "no
 * limit" number and its cache; usage above the limit; no /proc/meminfo. Then the live system:
 * some figure, no more than MemAvailable. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_memcheck.h"
#include "pw_test.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)

static char root[256];

/* root/path (its folders made) holding the formatted text */
static void put(const char *path, const char *fmt, ...)
{
    char full[1024];
    snprintf(full, sizeof full, "%s/%s", root, path);
    for (char *p = full + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(full, 0755);
            *p = '/';
        }
    FILE *f = fopen(full, "w");
    if (!f) {
        perror(full);
        exit(1);
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

static void fresh(const char *name)
{
    snprintf(root, sizeof root, "%s/%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", root, root);
    if (system(cmd)) exit(1);
    put("proc/meminfo", "MemTotal:       32000000 kB\nMemFree:         1000000 kB\n"
                        "MemAvailable:   20000000 kB\nBuffers:           10000 kB\n");
}

static void expect(const char *what, uint64_t bytes, const char *source)
{
    PwHostMemory m;
    int rc = pw_host_memory(root, &m);
    CHECK(rc == 0, "%s: rc %d", what, rc);
    CHECK(m.bytes == bytes, "%s: %zu bytes, expected %llu", what, m.bytes,
          (unsigned long long)bytes);
    CHECK(!strcmp(m.source, source), "%s: source '%s', expected '%s'", what, m.source, source);
}

int main(void)
{
    char tmpl[64];
    snprintf(tmpl, sizeof tmpl, "pw_host_memory_%d", (int)getpid());

    /* MemAvailable alone: 20,000,000 kB */
    fresh(tmpl);
    expect("meminfo", 20000000 * KIB, "MemAvailable");

    /* v2: /a/b limited to 8 GiB, using 5 GiB of which 2 GiB page cache: 8 - (5 - 2) = 5 GiB;
     * its parent /a limited to 6 GiB using 4 GiB, no cache: 2 GiB, the tighter */
    put("proc/self/cgroup", "0::/a/b\n");
    put("sys/fs/cgroup/a/b/memory.max", "%llu\n", 8192 * MIB);
    put("sys/fs/cgroup/a/b/memory.current", "%llu\n", 5120 * MIB);
    put("sys/fs/cgroup/a/b/memory.stat", "anon 1\nfile %llu\nkernel 3\n", 2048 * MIB);
    expect("v2 own", 5120 * MIB, "cgroup /a/b memory.max");
    put("sys/fs/cgroup/a/memory.max", "%llu\n", 6144 * MIB);
    put("sys/fs/cgroup/a/memory.current", "%llu\n", 4096 * MIB);
    expect("v2 parent", 2048 * MIB, "cgroup /a memory.max");
    /* "max": no limit there; the other one still holds */
    put("sys/fs/cgroup/a/memory.max", "max\n");
    expect("v2 max", 5120 * MIB, "cgroup /a/b memory.max");
    /* using more than its limit (cache left aside): nothing available */
    put("sys/fs/cgroup/a/b/memory.current", "%llu\n", 12288 * MIB);
    expect("v2 over", 0, "cgroup /a/b memory.max");

    /* a container's own hierarchy at the mount's root, /proc/self/cgroup naming the host's
     * path: the walk reaches the root; 3 GiB limit, 1 GiB used, none of it cache */
    fresh(tmpl);
    put("proc/self/cgroup", "0::/system.slice/docker-1.scope\n");
    put("sys/fs/cgroup/memory.max", "%llu\n", 3072 * MIB);
    put("sys/fs/cgroup/memory.current", "%llu\n", 1024 * MIB);
    expect("v2 container", 2048 * MIB, "cgroup / memory.max");

    /* v1: "cpu,memory" listed with others; no limit (2^63 rounded to a page) at /job, 4 GiB at
     * the root using 3 GiB of which total_cache 1.5 GiB: 4 - 1.5 = 2.5 GiB */
    fresh(tmpl);
    put("proc/self/cgroup", "12:pids:/job\n4:cpu,memory:/job\n0::/\n");
    put("sys/fs/cgroup/memory/job/memory.limit_in_bytes", "9223372036854771712\n");
    put("sys/fs/cgroup/memory/job/memory.usage_in_bytes", "%llu\n", 100 * MIB);
    put("sys/fs/cgroup/memory/memory.limit_in_bytes", "%llu\n", 4096 * MIB);
    put("sys/fs/cgroup/memory/memory.usage_in_bytes", "%llu\n", 3072 * MIB);
    put("sys/fs/cgroup/memory/memory.stat", "cache 1\nrss 2\ntotal_cache %llu\n", 1536 * MIB);
    expect("v1", 2560 * MIB, "cgroup / memory.limit_in_bytes");
    /* a limit above MemAvailable changes nothing */
    put("sys/fs/cgroup/memory/memory.limit_in_bytes", "%llu\n", 64000 * MIB);
    expect("v1 loose", 20000000 * KIB, "MemAvailable");

    /* no /proc/meminfo: unknown */
    fresh(tmpl);
    char path[512];
    snprintf(path, sizeof path, "%s/proc/meminfo", root);
    unlink(path);
    PwHostMemory m;
    CHECK(pw_host_memory(root, &m) == -1, "no meminfo: known");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd)) return 1;

    /* this machine: a figure no larger than its MemAvailable (Linux has one) */
    CHECK(pw_host_memory("", &m) == 0 && m.bytes > 0, "live: %zu bytes", m.bytes);
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kb = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    if (f) fclose(f);
    CHECK(m.bytes <= kb * KIB + 64 * MIB, "live: %zu bytes, MemAvailable %llu kB", m.bytes, kb);
    printf("this host: %.1f MiB available (%s)\n", m.bytes / (double)MIB, m.source);
    return pw_test_done("host memory");
}
