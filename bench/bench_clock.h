/* bench_clock.h: the clock the benchmark programs time with: monotonic seconds, which no change
 * of the wall clock moves. */
#ifndef PW_BENCH_CLOCK_H
#define PW_BENCH_CLOCK_H

#include <time.h>

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
