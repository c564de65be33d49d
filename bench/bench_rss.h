/* bench_rss.h: the process's resident memory, for the benchmarks that report what a model
 * holds on the CPU (Linux: /proc/self/statm and getrusage). */
#ifndef PW_BENCH_RSS_H
#define PW_BENCH_RSS_H

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

/* The high-water mark of the resident set, MiB. */
static inline double peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* Linux reports KiB */
}

/* The resident set now, MiB (/proc/self/statm counts pages). */
static inline double rss_now_mib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    return resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

#endif
