/* kref.h: what the kernel tests share: random tensors held in float for the kernel and in
 * double for the naive reference, and a central-difference check of a reference gradient. */
#ifndef PW_TESTS_KREF_H
#define PW_TESTS_KREF_H

#include "pw_test.h"

/* Bounds every kernel test states and uses:
 *   float kernel vs float64 reference, forward and backward: relative error < KREF_TOL
 *   (docs/style.md's fp32 bound; errors are max |a - b| / max |b|);
 *   float64 reference backward vs float64 central differences: < KREF_FD_TOL (step 1e-5, so
 *   truncation ~1e-10 and round-off ~1e-11 leave a wide margin). */
#define KREF_TOL 1e-5
#define KREF_FD_TOL 1e-7
#define KREF_FD_STEP 1e-5

static inline void *kref_alloc(size_t bytes)
{
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* n normal numbers times scale, rounded to float */
static inline float *kref_randn(size_t n, double scale, unsigned long long *rng)
{
    float *x = kref_alloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * pw_test_normal(rng));
    return x;
}

static inline double *kref_to_double(const float *x, size_t n)
{
    double *d = kref_alloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

static inline float *kref_copy(const float *x, size_t n)
{
    float *c = kref_alloc(n * sizeof *c);
    memcpy(c, x, n * sizeof *c);
    return c;
}

/* What an accumulating backward must leave: the pre-filled value plus the reference gradient */
static inline double *kref_plus(const float *prefill, const double *grad, size_t n)
{
    double *d = kref_alloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) d[i] = prefill[i] + grad[i];
    return d;
}

/* Largest relative gap between grad and the central differences of loss(ctx) in every entry of
 * x (x is restored afterwards); a NaN anywhere gives +inf. */
static inline double kref_fd_err(double *x, size_t n, const double *grad,
                                 double (*loss)(const void *ctx), const void *ctx)
{
    double maxdiff = 0.0, maxref = 1e-12;
    for (size_t i = 0; i < n; i++) {
        double keep = x[i];
        x[i] = keep + KREF_FD_STEP;
        double up = loss(ctx);
        x[i] = keep - KREF_FD_STEP;
        double down = loss(ctx);
        x[i] = keep;
        double fd = (up - down) / (2.0 * KREF_FD_STEP);
        if (isnan(fd) || isnan(grad[i])) return INFINITY;
        if (fabs(fd - grad[i]) > maxdiff) maxdiff = fabs(fd - grad[i]);
        if (fabs(fd) > maxref) maxref = fabs(fd);
    }
    return maxdiff / maxref;
}

/* sum_i w_i out_i: the scalar every finite-difference check differentiates, so that the
 * upstream gradient dout is w */
static inline double kref_dot(const double *w, const double *out, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += w[i] * out[i];
    return s;
}

#endif
