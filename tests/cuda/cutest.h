/* cutest.h: what the CUDA twin tests share: skip without a GPU, device buffers filled from or
 * read back to host arrays (made by kref.h), NaN poisoning, the CPU-vs-CUDA comparison. */
#ifndef PW_TESTS_CUTEST_H
#define PW_TESTS_CUTEST_H

#include <stdarg.h>

#include <cuda_runtime_api.h>

#include "pw_bf16.h"
#include "pw_cuda_check.h"
#include "pw_device.h"
#include "pw_kernels.h"
#include "pw_kernels_cuda.h"
#include "kernels/kref.h" /* kref_alloc, kref_randn: host arrays */

/* docs/style.md's twin bounds, relative to the largest reference value; NaN never passes */
#define CU_TOL_F32 1e-5
#define CU_TOL_TF32 1e-3
#define CU_TOL_BF16 1e-2
/* below this a reference's largest value is not a meaningful scale (all-zero outputs) */
#define CU_FLOOR 1e-6

/* exit 77 (skip) where no GPU can be seen; else make sure the device works at all */
static inline void cu_require_gpu(const char *name)
{
    if (pw_device_count() == 0) {
        printf("%s: no CUDA device, skipped\n", name);
        exit(PW_SKIP_CODE);
    }
    PW_CUDA_CHECK(cudaSetDevice(0));
}

/* Every buffer a test makes through these helpers is remembered, and cu_release() frees them
 * all at the end of a case: the tests read as the computation, not as bookkeeping. */
#define CU_MAX_BUFFERS 512
static void *cu_buffers[CU_MAX_BUFFERS];
static int cu_buffer_on_device[CU_MAX_BUFFERS];
static int cu_nbuffers = 0;

static inline void *cu_track(void *p, int on_device)
{
    if (cu_nbuffers == CU_MAX_BUFFERS) {
        fprintf(stderr, "cutest: more than %d buffers in one case\n", CU_MAX_BUFFERS);
        exit(2);
    }
    cu_buffers[cu_nbuffers] = p;
    cu_buffer_on_device[cu_nbuffers++] = on_device;
    return p;
}

static inline void cu_release(void)
{
    PW_CUDA_CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < cu_nbuffers; i++) {
        if (cu_buffer_on_device[i])
            PW_CUDA_CHECK(cudaFree(cu_buffers[i]));
        else
            free(cu_buffers[i]);
    }
    cu_nbuffers = 0;
}

static inline void *cu_host(size_t bytes) { return cu_track(kref_alloc(bytes), 0); }

static inline float *cu_randn(size_t n, double scale, unsigned long long *rng)
{
    return cu_track(kref_randn(n, scale, rng), 0);
}

static inline void *cu_dev(size_t bytes)
{
    void *p = NULL;
    PW_CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    return cu_track(p, 1);
}

/* a device copy of host data */
static inline void *cu_upload(const void *h, size_t bytes)
{
    void *d = cu_dev(bytes);
    PW_CUDA_CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* waits for the default stream (where every test runs its kernels) and copies back */
static inline void cu_download(void *h, const void *d, size_t bytes)
{
    PW_CUDA_CHECK(cudaDeviceSynchronize());
    PW_CUDA_CHECK(cudaGetLastError());
    PW_CUDA_CHECK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
}

/* all bits set is a NaN in float: an output the kernel forgets to write cannot pass */
static inline void cu_poison(void *d, size_t bytes) { PW_CUDA_CHECK(cudaMemset(d, 0xff, bytes)); }

static inline float *cu_copy(const float *x, size_t n)
{
    float *y = cu_host(n * sizeof *y);
    memcpy(y, x, n * sizeof *y);
    return y;
}

/* Compare the device result d (n floats) with the CPU result ref: relative error <= tol; the
 * label is printf-formatted. */
static inline double cu_comparef(const float *d, const float *ref, size_t n, double tol,
                                 const char *fmt, ...)
{
    char what[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    float *h = kref_alloc(n * sizeof *h);
    cu_download(h, d, n * sizeof *h);
    double err = pw_max_rel_err_ff(h, ref, n, CU_FLOOR);
    CHECK(err <= tol, "%s: relative error %.3g > %.1g", what, err, tol);
    printf("  %-44s rel err %.3g\n", what, err);
    free(h);
    return err;
}

#define cu_compare(what, d, ref, n, tol) cu_comparef((d), (ref), (n), (tol), "%s", (what))

/* x rounded to bfloat16 (host bits, released by cu_release) and, into widened (n floats, host),
 * those values: a bf16 model's input and the float32 input that gives the same results */
static inline uint16_t *cu_bf16_of(const float *x, size_t n, float *widened)
{
    uint16_t *h = cu_host(n * sizeof *h + 2);
    for (size_t i = 0; i < n; i++) {
        h[i] = pw_bf16_from_f32(x[i]);
        widened[i] = pw_bf16_to_f32(h[i]);
    }
    return h;
}

/* n bfloat16 values on the device equal to those on the host, bit for bit */
static inline void cu_same_bits16(const char *what, const uint16_t *d16, const uint16_t *h16,
                                  size_t n)
{
    uint16_t *got = kref_alloc(n * sizeof *got + 1);
    cu_download(got, d16, n * sizeof *got);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += got[i] != h16[i];
    CHECK(bad == 0, "%s: %zu of %zu values differ", what, bad, n);
    printf("  %-44s %zu of %zu differ\n", what, bad, n);
    free(got);
}

/* A producer's bf16 form against its float32 form, both on the device: d16 (n bfloat16) must be
 * d32 rounded to nearest even (pw_bf16.h), bit for bit */
static inline void cu_compare_bf16(const char *what, const uint16_t *d16, const float *d32,
                                   size_t n)
{
    uint16_t *h16 = kref_alloc(n * sizeof *h16 + 1);
    float *h = kref_alloc(n * sizeof *h + 1);
    cu_download(h16, d16, n * sizeof *h16);
    cu_download(h, d32, n * sizeof *h);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += h16[i] != pw_bf16_from_f32(h[i]);
    CHECK(bad == 0, "%s: %zu of %zu values are not the float32 result rounded", what, bad, n);
    printf("  %-44s %zu of %zu differ from the rounded float32\n", what, bad, n);
    free(h16);
    free(h);
}

/* left padding: row b gets pads[b % npads] padding tokens (a pad >= T makes a padding-only
 * row); returns a (B,T) mask */
static inline int *cu_left_mask(int B, int T, const int *pads, int npads)
{
    int *mask = cu_host(sizeof(int) * (size_t)B * T);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) mask[b * T + t] = t >= pads[b % npads];
    return mask;
}

#endif
