/* attention_ref.h: the float64 reference of causal grouped-query attention with a padding mask
 * (multi-head is NKV = NH) and the check both attention tests run against it. */
#ifndef PW_TESTS_ATTENTION_REF_H
#define PW_TESTS_ATTENTION_REF_H

#include "kref.h"
#include "pw_kernels.h"

typedef struct Shape {
    int B, T, NH, NKV, hs;
} Shape;

static inline int real(const int *mask, int b, int t, int T) { return !mask || mask[b * T + t]; }
static inline size_t width(Shape s) { return (size_t)(s.NH + 2 * s.NKV) * s.hs; }
/* offsets in a qkv row of query head h and of its key and value head */
static inline size_t qoff(Shape s, int h) { return (size_t)h * s.hs; }
static inline size_t koff(Shape s, int h) { return (size_t)(s.NH + h / (s.NH / s.NKV)) * s.hs; }
static inline size_t voff(Shape s, int h) { return koff(s, h) + (size_t)s.NKV * s.hs; }

/* out, the probabilities att (B,NH,T,T) and, unless NULL, each query's log-sum-exp lse (B,NH,T)
 * of its scaled scores over real keys u <= t (0 for a padding query) */
static inline void ref_forward(double *out, double *att, double *lse, const double *qkv,
                               const int *mask, Shape s)
{
    int T = s.T, hs = s.hs, C = s.NH * hs;
    size_t W = width(s);
    for (int b = 0; b < s.B; b++)
        for (int h = 0; h < s.NH; h++)
            for (int t = 0; t < T; t++) {
                double *a = att + (((size_t)b * s.NH + h) * T + t) * T;
                double *o = out + ((size_t)b * T + t) * C + h * hs;
                double *l = lse ? lse + ((size_t)b * s.NH + h) * T + t : NULL;
                for (int u = 0; u < T; u++) a[u] = 0.0;
                for (int i = 0; i < hs; i++) o[i] = 0.0;
                if (l) *l = 0.0;
                if (!real(mask, b, t, T)) continue;
                const double *q = qkv + ((size_t)b * T + t) * W + qoff(s, h);
                double mx = -INFINITY;
                for (int u = 0; u <= t; u++) {
                    if (!real(mask, b, u, T)) continue;
                    const double *k = qkv + ((size_t)b * T + u) * W + koff(s, h);
                    double dot = 0.0;
                    for (int i = 0; i < hs; i++) dot += q[i] * k[i];
                    a[u] = dot / sqrt((double)hs);
                    if (a[u] > mx) mx = a[u];
                }
                double z = 0.0;
                for (int u = 0; u <= t; u++)
                    if (real(mask, b, u, T)) z += (a[u] = exp(a[u] - mx));
                if (l) *l = mx + log(z);
                for (int u = 0; u <= t; u++) {
                    a[u] /= z;
                    const double *v = qkv + ((size_t)b * T + u) * W + voff(s, h);
                    for (int i = 0; i < hs; i++) o[i] += a[u] * v[i];
                }
            }
}

static inline void ref_backward(double *dqkv, const double *dout, const double *qkv,
                                const double *att, Shape s)
{
    int T = s.T, hs = s.hs, C = s.NH * hs;
    size_t W = width(s);
    double *da = kref_alloc(sizeof(double) * T);
    for (int b = 0; b < s.B; b++)
        for (int h = 0; h < s.NH; h++)
            for (int t = 0; t < T; t++) {
                const double *a = att + (((size_t)b * s.NH + h) * T + t) * T;
                const double *d = dout + ((size_t)b * T + t) * C + h * hs;
                const double *q = qkv + ((size_t)b * T + t) * W + qoff(s, h);
                double *dq = dqkv + ((size_t)b * T + t) * W + qoff(s, h);
                double dot = 0.0;
                for (int u = 0; u < T; u++) {
                    const double *v = qkv + ((size_t)b * T + u) * W + voff(s, h);
                    double *dv = dqkv + ((size_t)b * T + u) * W + voff(s, h);
                    da[u] = 0.0;
                    for (int i = 0; i < hs; i++) {
                        da[u] += d[i] * v[i];
                        dv[i] += a[u] * d[i];
                    }
                    dot += a[u] * da[u];
                }
                for (int u = 0; u < T; u++) {
                    double ds = a[u] * (da[u] - dot) / sqrt((double)hs);
                    const double *k = qkv + ((size_t)b * T + u) * W + koff(s, h);
                    double *dk = dqkv + ((size_t)b * T + u) * W + koff(s, h);
                    for (int i = 0; i < hs; i++) {
                        dq[i] += ds * k[i];
                        dk[i] += ds * q[i];
                    }
                }
            }
    free(da);
}

typedef struct FdCtx {
    double *qkv, *w, *out, *att;
    const int *mask;
    Shape s;
} FdCtx;

static inline double fd_loss(const void *p)
{
    const FdCtx *c = p;
    ref_forward(c->out, c->att, NULL, c->qkv, c->mask, c->s);
    return kref_dot(c->w, c->out, (size_t)c->s.B * c->s.T * c->s.NH * c->s.hs);
}

/* One shape and mask: forward, backward onto pre-filled gradients, and optionally the
 * reference's gradient by finite differences; mha calls pw_attention_* (NKV must be NH). */
static inline void att_check(const char *name, Shape s, const int *mask, int fd,
                             unsigned long long seed, int mha)
{
    unsigned long long rng = seed;
    size_t nqkv = (size_t)s.B * s.T * width(s), nout = (size_t)s.B * s.T * s.NH * s.hs;
    size_t natt = (size_t)s.B * s.NH * s.T * s.T, nlse = (size_t)s.B * s.NH * s.T;
    float *qkv = kref_randn(nqkv, 1.0, &rng), *dout = kref_randn(nout, 1.0, &rng);
    float *dqkv = kref_randn(nqkv, 1.0, &rng), *dqkv0 = kref_copy(dqkv, nqkv);
    float *out = kref_alloc(nout * sizeof *out), *lse = kref_alloc(nlse * sizeof *lse);
    for (size_t i = 0; i < nlse; i++) lse[i] = NAN;
    for (size_t i = 0; i < nout; i++) out[i] = NAN;
    double *qkvd = kref_to_double(qkv, nqkv), *doutd = kref_to_double(dout, nout);
    double *outd = kref_alloc(nout * sizeof *outd), *attd = kref_alloc(natt * sizeof *attd);
    double *lsed = kref_alloc(nlse * sizeof *lsed), *dqkvd = kref_alloc(nqkv * sizeof *dqkvd);

    if (mha)
        pw_attention_forward(out, lse, qkv, mask, s.B, s.T, s.NH * s.hs, s.NH);
    else
        pw_attention_gqa_forward(out, lse, qkv, mask, s.B, s.T, s.NH, s.NKV, s.hs);
    ref_forward(outd, attd, lsed, qkvd, mask, s);
    double e_out = pw_max_rel_err(out, outd, nout, 1e-6);
    double e_lse = pw_max_rel_err(lse, lsed, nlse, 1e-6);
    CHECK(e_out < KREF_TOL, "%s: out rel err %.3g", name, e_out);
    CHECK(e_lse < KREF_TOL, "%s: lse rel err %.3g", name, e_lse);
    int pad_ok = 1;
    for (int b = 0; b < s.B; b++)
        for (int t = 0; t < s.T; t++) {
            if (real(mask, b, t, s.T)) continue;
            for (int c = 0; c < s.NH * s.hs; c++)
                pad_ok &= out[((size_t)b * s.T + t) * s.NH * s.hs + c] == 0.0f;
            for (int h = 0; h < s.NH; h++)
                pad_ok &= lse[((size_t)b * s.NH + h) * s.T + t] == 0.0f;
        }
    CHECK(pad_ok, "%s: padding query rows are not exactly zero", name);

    if (mha)
        pw_attention_backward(dqkv, dout, qkv, lse, mask, s.B, s.T, s.NH * s.hs, s.NH);
    else
        pw_attention_gqa_backward(dqkv, dout, qkv, lse, mask, s.B, s.T, s.NH, s.NKV, s.hs);
    ref_backward(dqkvd, doutd, qkvd, attd, s);
    double *want = kref_plus(dqkv0, dqkvd, nqkv);
    double e_d = pw_max_rel_err(dqkv, want, nqkv, 1e-6);
    CHECK(e_d < KREF_TOL, "%s: dqkv rel err %.3g (accumulated onto pre-filled values)", name, e_d);

    if (fd) {
        FdCtx c = {qkvd, doutd, outd, attd, mask, s};
        double e_fd = kref_fd_err(qkvd, nqkv, dqkvd, fd_loss, &c);
        CHECK(e_fd < KREF_FD_TOL, "%s: reference dqkv vs finite differences %.3g", name, e_fd);
    }

    /* every query head with its own key and value head is plain multi-head attention: the
     * same sgemms on the same data, so the results are equal, not just close */
    if (!mha && s.NKV == s.NH) {
        float *out2 = kref_alloc(nout * sizeof *out2), *lse2 = kref_alloc(nlse * sizeof *lse2);
        float *dqkv2 = kref_copy(dqkv0, nqkv);
        pw_attention_forward(out2, lse2, qkv, mask, s.B, s.T, s.NH * s.hs, s.NH);
        pw_attention_backward(dqkv2, dout, qkv, lse2, mask, s.B, s.T, s.NH * s.hs, s.NH);
        CHECK(memcmp(out, out2, nout * sizeof *out) == 0 &&
                  memcmp(lse, lse2, nlse * sizeof *lse) == 0 &&
                  memcmp(dqkv, dqkv2, nqkv * sizeof *dqkv) == 0,
              "%s: differs from pw_attention_* with NKV = NH", name);
        free(out2); free(lse2); free(dqkv2);
    }
    printf("%-34s out %.2g lse %.2g dqkv %.2g\n", name, e_out, e_lse, e_d);
    free(qkv); free(dout); free(dqkv); free(dqkv0); free(out); free(lse);
    free(qkvd); free(doutd); free(outd); free(attd); free(lsed); free(dqkvd); free(want);
}

static inline int *att_left_pad_mask(const int *pads, int B, int T)
{
    int *m = kref_alloc(sizeof(int) * B * T);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) m[b * T + t] = t >= pads[b];
    return m;
}

#endif
