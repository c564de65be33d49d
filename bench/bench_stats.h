/* bench_stats.h: the statistics the benchmark programs share: medians of repeated trials, since
 * on a shared machine a burst of load from elsewhere moves a median little. */
#ifndef PW_BENCH_STATS_H
#define PW_BENCH_STATS_H

#include <stdlib.h>

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n), n >= 1; sorts v in place (ascending: v[0] is then the best time). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
