/* bench_copy.h: a device's own copy speed, the yardstick the benchmark programs hold transfers
 * and memory-bound work against. */
#ifndef PW_BENCH_COPY_H
#define PW_BENCH_COPY_H

#include <time.h>

#include "bench_stats.h"
#include "pw_ops.h"

/* Seconds for one copy of `bytes` between two buffers of `dev` through its kernel table (a
 * copy is complete on return; on the CPU a memmove), the median of `reps` (1 to 64) after one
 * warm-up. 0 when the device cannot be opened or has no room for the two buffers. */
static inline double bench_copy_seconds(PwDevice dev, size_t bytes, int reps)
{
    double t[64];
    PwErr err;
    const PwOps *o = pw_ops_open(dev, 0, &err);
    if (!o || reps < 1 || reps > 64) return 0.0;
    void *src = o->alloc(o, bytes), *dst = src ? o->alloc(o, bytes) : NULL;
    for (int i = 0; dst && i <= reps; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        o->copy(o, dst, src, bytes, PW_COPY_D2D);
        clock_gettime(CLOCK_MONOTONIC, &b);
        if (i) t[i - 1] = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    }
    o->free(o, src);
    o->free(o, dst);
    pw_ops_close(o);
    return dst ? bench_median(t, reps) : 0.0;
}

#endif
