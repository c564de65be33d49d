/* test_attention.c: causal multi-head attention with left padding against a float64 reference:
 * forward, accumulating backward, and the reference's backward by central differences. */
#include "kref.h"
#include "pw_kernels.h"

typedef struct Shape {
    int B, T, C, NH;
} Shape;

static int real(const int *mask, int b, int t, int T) { return !mask || mask[b * T + t]; }

static void ref_forward(double *out, double *att, const double *qkv, const int *mask, Shape s)
{
    int hs = s.C / s.NH, T = s.T, C = s.C;
    for (int b = 0; b < s.B; b++)
        for (int h = 0; h < s.NH; h++)
            for (int t = 0; t < T; t++) {
                double *a = att + (((size_t)b * s.NH + h) * T + t) * T;
                double *o = out + ((size_t)b * T + t) * C + h * hs;
                for (int u = 0; u < T; u++) a[u] = 0.0;
                for (int i = 0; i < hs; i++) o[i] = 0.0;
                if (!real(mask, b, t, T)) continue;
                const double *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
                double mx = -INFINITY;
                for (int u = 0; u <= t; u++) {
                    if (!real(mask, b, u, T)) continue;
                    const double *k = qkv + ((size_t)b * T + u) * 3 * C + C + h * hs;
                    double dot = 0.0;
                    for (int i = 0; i < hs; i++) dot += q[i] * k[i];
                    a[u] = dot / sqrt((double)hs);
                    if (a[u] > mx) mx = a[u];
                }
                double z = 0.0;
                for (int u = 0; u <= t; u++)
                    if (real(mask, b, u, T)) z += (a[u] = exp(a[u] - mx));
                for (int u = 0; u <= t; u++) {
                    a[u] /= z;
                    const double *v = qkv + ((size_t)b * T + u) * 3 * C + 2 * C + h * hs;
                    for (int i = 0; i < hs; i++) o[i] += a[u] * v[i];
                }
            }
}

static void ref_backward(double *dqkv, const double *dout, const double *qkv, const double *att,
                         const int *mask, Shape s)
{
    int hs = s.C / s.NH, T = s.T, C = s.C;
    double *da = kref_alloc(sizeof(double) * T);
    for (int b = 0; b < s.B; b++)
        for (int h = 0; h < s.NH; h++)
            for (int t = 0; t < T; t++) {
                const double *a = att + (((size_t)b * s.NH + h) * T + t) * T;
                const double *d = dout + ((size_t)b * T + t) * C + h * hs;
                const double *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
                double *dq = dqkv + ((size_t)b * T + t) * 3 * C + h * hs;
                double dot = 0.0;
                for (int u = 0; u < T; u++) {
                    const double *v = qkv + ((size_t)b * T + u) * 3 * C + 2 * C + h * hs;
                    double *dv = dqkv + ((size_t)b * T + u) * 3 * C + 2 * C + h * hs;
                    da[u] = 0.0;
                    for (int i = 0; i < hs; i++) {
                        da[u] += d[i] * v[i];
                        dv[i] += a[u] * d[i];
                    }
                    dot += a[u] * da[u];
                }
                for (int u = 0; u < T; u++) {
                    double ds = a[u] * (da[u] - dot) / sqrt((double)hs);
                    const double *k = qkv + ((size_t)b * T + u) * 3 * C + C + h * hs;
                    double *dk = dqkv + ((size_t)b * T + u) * 3 * C + C + h * hs;
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

static double fd_loss(const void *p)
{
    const FdCtx *c = p;
    ref_forward(c->out, c->att, c->qkv, c->mask, c->s);
    return kref_dot(c->w, c->out, (size_t)c->s.B * c->s.T * c->s.C);
}

/* One shape and mask: forward, backward onto pre-filled gradients, and optionally the
 * reference's gradient by finite differences. */
static void check(const char *name, Shape s, const int *mask, int fd, unsigned long long seed)
{
    unsigned long long rng = seed;
    size_t nqkv = (size_t)s.B * s.T * 3 * s.C, nout = (size_t)s.B * s.T * s.C;
    size_t natt = (size_t)s.B * s.NH * s.T * s.T;
    float *qkv = kref_randn(nqkv, 1.0, &rng), *dout = kref_randn(nout, 1.0, &rng);
    float *dqkv = kref_randn(nqkv, 1.0, &rng), *dqkv0 = kref_copy(dqkv, nqkv);
    float *out = kref_alloc(nout * sizeof *out), *att = kref_alloc(natt * sizeof *att);
    /* stale values where the kernel must write zeros */
    for (size_t i = 0; i < natt; i++) att[i] = NAN;
    for (size_t i = 0; i < nout; i++) out[i] = NAN;
    double *qkvd = kref_to_double(qkv, nqkv), *doutd = kref_to_double(dout, nout);
    double *outd = kref_alloc(nout * sizeof *outd), *attd = kref_alloc(natt * sizeof *attd);
    double *dqkvd = kref_alloc(nqkv * sizeof *dqkvd);

    pw_attention_forward(out, att, qkv, mask, s.B, s.T, s.C, s.NH);
    ref_forward(outd, attd, qkvd, mask, s);
    double e_out = pw_max_rel_err(out, outd, nout, 1e-6);
    double e_att = pw_max_rel_err(att, attd, natt, 1e-6);
    CHECK(e_out < KREF_TOL, "%s: out rel err %.3g", name, e_out);
    CHECK(e_att < KREF_TOL, "%s: att rel err %.3g", name, e_att);

    /* padding queries: exactly zero output and zero attention row */
    int pad_ok = 1;
    for (int b = 0; b < s.B; b++)
        for (int t = 0; t < s.T; t++) {
            if (real(mask, b, t, s.T)) continue;
            for (int c = 0; c < s.C; c++) pad_ok &= out[((size_t)b * s.T + t) * s.C + c] == 0.0f;
            for (int h = 0; h < s.NH; h++)
                for (int u = 0; u < s.T; u++)
                    pad_ok &= att[(((size_t)b * s.NH + h) * s.T + t) * s.T + u] == 0.0f;
        }
    CHECK(pad_ok, "%s: padding query rows are not exactly zero", name);

    pw_attention_backward(dqkv, dout, qkv, att, mask, s.B, s.T, s.C, s.NH);
    ref_backward(dqkvd, doutd, qkvd, attd, mask, s);
    double *want = kref_plus(dqkv0, dqkvd, nqkv);
    double e_d = pw_max_rel_err(dqkv, want, nqkv, 1e-6);
    CHECK(e_d < KREF_TOL, "%s: dqkv rel err %.3g (accumulated onto pre-filled values)", name, e_d);

    if (fd) {
        FdCtx c = {qkvd, doutd, outd, attd, mask, s};
        double e_fd = kref_fd_err(qkvd, nqkv, dqkvd, fd_loss, &c);
        CHECK(e_fd < KREF_FD_TOL, "%s: reference dqkv vs finite differences %.3g", name, e_fd);
    }
    printf("%-34s out %.2g att %.2g dqkv %.2g\n", name, e_out, e_att, e_d);
    free(qkv); free(dout); free(dqkv); free(dqkv0); free(out); free(att);
    free(qkvd); free(doutd); free(outd); free(attd); free(dqkvd); free(want);
}

/* Left padding: row b starts at pads[b] (T means a row of padding only) */
static int *left_pad_mask(const int *pads, int B, int T)
{
    int *m = kref_alloc(sizeof(int) * B * T);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) m[b * T + t] = t >= pads[b];
    return m;
}

int main(void)
{
    Shape small = {4, 9, 12, 3};
    int pads_small[4] = {0, 3, 8, 9};
    int *m_small = left_pad_mask(pads_small, 4, 9);
    check("small, no mask", small, NULL, 1, 1);
    check("small, left pads 0/3/8/9", small, m_small, 1, 2);

    /* a hole inside a sequence (not produced by left padding, but the contract allows it) */
    int *m_hole = left_pad_mask(pads_small, 4, 9);
    m_hole[1 * 9 + 5] = 0;
    m_hole[0 * 9 + 0] = 0;
    check("small, holes in the mask", small, m_hole, 1, 3);

    /* T past several row blocks, pads that do not fall on a block edge */
    Shape big = {3, 150, 16, 2};
    int pads_big[3] = {0, 37, 101};
    int *m_big = left_pad_mask(pads_big, 3, 150);
    check("T=150, no mask", big, NULL, 0, 4);
    check("T=150, left pads 0/37/101", big, m_big, 0, 5);

    /* T = 1024: 4 MB of scratch per head, so the backward works through its heads in groups */
    Shape longT = {2, 1024, 6, 3};
    int pads_long[2] = {0, 700};
    int *m_long = left_pad_mask(pads_long, 2, 1024);
    check("T=1024, left pads 0/700", longT, m_long, 0, 6);

    free(m_small); free(m_hole); free(m_big); free(m_long);
    return pw_test_done("test_attention");
}
