/* test_rmsnorm.c: RMSNorm against a float64 reference: forward (out, rstd), accumulating
 * backward with NULL gradients skipped, and the reference's backward by central differences. */
#include "kref.h"
#include "pw_kernels.h"

static void ref_forward(double *out, double *rstd, const double *x, const double *w, int N,
                        int C, double eps)
{
    for (int i = 0; i < N; i++) {
        const double *r = x + (size_t)i * C;
        double ms = 0.0;
        for (int c = 0; c < C; c++) ms += r[c] * r[c] / C;
        double s = 1.0 / sqrt(ms + eps);
        for (int c = 0; c < C; c++) out[(size_t)i * C + c] = r[c] * s * w[c];
        rstd[i] = s;
    }
}

/* the chain rule through ms = mean(x^2): ds/dms = -s^3 / 2, dms/dx = 2 x / C */
static void ref_backward(double *dx, double *dw, const double *dout, const double *x,
                         const double *w, int N, int C, double eps)
{
    for (int i = 0; i < N; i++) {
        const double *r = x + (size_t)i * C, *d = dout + (size_t)i * C;
        double ms = 0.0, dms = 0.0;
        for (int c = 0; c < C; c++) ms += r[c] * r[c] / C;
        double s = 1.0 / sqrt(ms + eps);
        for (int c = 0; c < C; c++) {
            dw[c] += d[c] * r[c] * s;
            dms += d[c] * w[c] * r[c] * -0.5 * s * s * s;
        }
        for (int c = 0; c < C; c++) dx[(size_t)i * C + c] += d[c] * w[c] * s + dms * 2.0 * r[c] / C;
    }
}

typedef struct FdCtx {
    double *x, *w, *dout, *out, *rstd;
    int N, C;
    double eps;
} FdCtx;

static double fd_loss(const void *p)
{
    const FdCtx *c = p;
    ref_forward(c->out, c->rstd, c->x, c->w, c->N, c->C, c->eps);
    return kref_dot(c->dout, c->out, (size_t)c->N * c->C);
}

static void check(int N, int C, float eps, unsigned long long seed)
{
    unsigned long long rng = seed;
    size_t n = (size_t)N * C;
    float *x = kref_randn(n, 2.0, &rng);
    for (size_t i = 0; i < n; i++) x[i] += 1.0f;
    float *w = kref_randn(C, 1.0, &rng), *dout = kref_randn(n, 1.0, &rng);
    float *dx = kref_randn(n, 1.0, &rng), *dw = kref_randn(C, 1.0, &rng);
    float *dx0 = kref_copy(dx, n), *dw0 = kref_copy(dw, C);
    float *out = kref_alloc(n * sizeof *out), *rstd = kref_alloc(N * sizeof *rstd);
    for (size_t i = 0; i < n; i++) out[i] = NAN;
    for (int i = 0; i < N; i++) rstd[i] = NAN;
    double *xd = kref_to_double(x, n), *wd = kref_to_double(w, C);
    double *doutd = kref_to_double(dout, n), *outd = kref_alloc(n * sizeof *outd);
    double *rstdd = kref_alloc(N * sizeof *rstdd), *dxd = kref_alloc(n * sizeof *dxd);
    double *dwd = kref_alloc(C * sizeof *dwd);

    pw_rmsnorm_forward(out, rstd, x, w, N, C, eps);
    ref_forward(outd, rstdd, xd, wd, N, C, eps);
    double e_o = pw_max_rel_err(out, outd, n, 1e-6), e_r = pw_max_rel_err(rstd, rstdd, N, 1e-6);
    CHECK(e_o < KREF_TOL, "C=%d: out rel err %.3g", C, e_o);
    CHECK(e_r < KREF_TOL, "C=%d: rstd rel err %.3g", C, e_r);

    /* no rstd wanted: the output must not change */
    float *out2 = kref_alloc(n * sizeof *out2);
    pw_rmsnorm_forward(out2, NULL, x, w, N, C, eps);
    CHECK(memcmp(out, out2, n * sizeof *out) == 0, "C=%d: out differs without rstd", C);

    pw_rmsnorm_backward(dx, dw, dout, x, w, rstd, N, C);
    ref_backward(dxd, dwd, doutd, xd, wd, N, C, eps);
    double *wx = kref_plus(dx0, dxd, n), *ww = kref_plus(dw0, dwd, C);
    double e_dx = pw_max_rel_err(dx, wx, n, 1e-6), e_dw = pw_max_rel_err(dw, ww, C, 1e-6);
    CHECK(e_dx < KREF_TOL, "C=%d: dinp rel err %.3g", C, e_dx);
    CHECK(e_dw < KREF_TOL, "C=%d: dweight rel err %.3g", C, e_dw);

    /* one gradient at a time: the NULL one is skipped, the other is unchanged */
    float *dx2 = kref_copy(dx0, n), *dw2 = kref_copy(dw0, C);
    pw_rmsnorm_backward(dx2, NULL, dout, x, w, rstd, N, C);
    pw_rmsnorm_backward(NULL, dw2, dout, x, w, rstd, N, C);
    CHECK(memcmp(dx2, dx, n * sizeof *dx) == 0, "C=%d: dinp alone differs", C);
    CHECK(memcmp(dw2, dw, C * sizeof *dw) == 0, "C=%d: dweight alone differs", C);

    FdCtx c = {xd, wd, doutd, outd, rstdd, N, C, eps};
    double e_fx = kref_fd_err(xd, n, dxd, fd_loss, &c), e_fw = kref_fd_err(wd, C, dwd, fd_loss, &c);
    CHECK(e_fx < KREF_FD_TOL, "C=%d: reference dinp vs finite differences %.3g", C, e_fx);
    CHECK(e_fw < KREF_FD_TOL, "C=%d: reference dweight vs finite differences %.3g", C, e_fw);
    printf("N=%d C=%-4d out %.2g rstd %.2g dinp %.2g dweight %.2g fd %.2g %.2g\n", N, C, e_o, e_r,
           e_dx, e_dw, e_fx, e_fw);
    free(x); free(w); free(dout); free(dx); free(dw); free(dx0); free(dw0); free(out);
    free(rstd); free(out2); free(xd); free(wd); free(doutd); free(outd); free(rstdd); free(dxd);
    free(dwd); free(wx); free(ww); free(dx2); free(dw2);
}

int main(void)
{
    check(5, 37, 1e-5f, 1);
    check(7, 130, 1e-6f, 2); /* more channels than one 64-wide chunk, a ragged last chunk */
    check(3, 2049, 1e-5f, 3);
    return pw_test_done("test_rmsnorm");
}
