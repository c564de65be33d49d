/* pw_test.h: the few checks every C test of ppo_world uses. A test counts its failures and
 * exits non-zero if there was any (meson: 0 pass, 77 skip, anything else fail). */
#ifndef PW_TEST_H
#define PW_TEST_H

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pw_rng.h"

static int pw_test_failures = 0;
static int pw_test_checks = 0;

#define PW_SKIP_CODE 77

#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        pw_test_checks++;                                                        \
        if (!(cond)) {                                                           \
            pw_test_failures++;                                                  \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                        \
            fprintf(stderr, "\n");                                               \
        }                                                                        \
    } while (0)

/* Largest relative error max|a-b| / max(max|b|, floor) over n values; NaN anywhere gives +inf
 * so that a NaN can never pass. */
static inline double pw_max_rel_err(const float *a, const double *b, size_t n, double floor_)
{
    double maxdiff = 0.0, maxref = floor_;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i]) || isinf(a[i])) return INFINITY;
        double d = fabs((double)a[i] - b[i]);
        if (d > maxdiff) maxdiff = d;
        if (fabs(b[i]) > maxref) maxref = fabs(b[i]);
    }
    return maxdiff / maxref;
}

static inline double pw_max_rel_err_ff(const float *a, const float *b, size_t n, double floor_)
{
    double maxdiff = 0.0, maxref = floor_;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i]) || isinf(a[i])) return INFINITY;
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > maxdiff) maxdiff = d;
        if (fabs(b[i]) > maxref) maxref = fabs(b[i]);
    }
    return maxdiff / maxref;
}

/* A whole file in memory, NUL-terminated (its length in *len, when len is not NULL); NULL when
 * it cannot be read. The caller frees it. */
static inline char *pw_test_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!buf) return NULL;
    buf[got] = '\0';
    if (len) *len = got;
    return buf;
}

/* A full disk under a file this process writes: the descriptor it holds open on `path` (found in
 * /proc/self/fd) is pointed at /dev/full, so its next flush fails with ENOSPC. 0, or -1 when no
 * descriptor is open on it. */
static inline int pw_test_fill_disk(const char *path)
{
    char real[PATH_MAX], link[64], target[PATH_MAX];
    if (!realpath(path, real)) return -1;
    for (int fd = 3; fd < 1024; fd++) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = '\0';
        if (strcmp(target, real)) continue;
        int full = open("/dev/full", O_WRONLY);
        int rc = full >= 0 && dup2(full, fd) >= 0 ? 0 : -1;
        if (full >= 0) close(full);
        return rc;
    }
    return -1;
}

/* Close the test: print a one-line tally and return the exit code. */
static inline int pw_test_done(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, pw_test_checks, pw_test_failures);
    return pw_test_failures ? 1 : 0;
}

/* Reproducible random numbers for tests: the project's generator (pw_rng.h). The state type
 * stays unsigned long long, which is uint64_t on every platform we build for. */
static inline unsigned long long pw_test_rng_next(unsigned long long *s)
{
    uint64_t st = *s, z = pw_rng_next(&st);
    *s = st;
    return z;
}
static inline double pw_test_uniform(unsigned long long *s)
{
    return (pw_test_rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}
static inline double pw_test_normal(unsigned long long *s)
{
    double u1 = pw_test_uniform(s), u2 = pw_test_uniform(s);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
