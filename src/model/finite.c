/* finite.c: what a weight may hold (finite, at most PW_WEIGHT_LIMIT in magnitude) and the scan
 * that finds the first value that breaks it; loading, saving and the update checks call it. */
#include <math.h>
#include <stdio.h>

#include "pw_model.h"

/* Blocks keep the inner loop free of an early exit, so the compiler can vectorise the test of
 * every float of a multi-gigabyte checkpoint; only a block holding a bad value is walked again. */
#define BLOCK 4096

size_t pw_weights_first_bad(const float *x, size_t n)
{
    const float limit = (float)PW_WEIGHT_LIMIT;
    for (size_t b = 0; b < n; b += BLOCK) {
        size_t e = n - b < BLOCK ? n : b + BLOCK;
        int bad = 0;
        /* !(|v| <= limit) is also true for NaN, which fails every comparison */
        for (size_t i = b; i < e; i++) bad |= !(fabsf(x[i]) <= limit);
        if (!bad) continue;
        for (size_t i = b; i < e; i++)
            if (!(fabsf(x[i]) <= limit)) return i;
    }
    return n;
}

const char *pw_weight_describe(float v, char *buf, size_t n)
{
    if (isnan(v)) snprintf(buf, n, "NaN");
    else if (isinf(v)) snprintf(buf, n, "%s", v > 0 ? "inf" : "-inf");
    else snprintf(buf, n, "%.3g", v);
    return buf;
}
