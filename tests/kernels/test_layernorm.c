/* test_layernorm.c: LayerNorm against a float64 reference: forward (out, mean, rstd),
 * accumulating backward, and the reference's backward by central differences. */
#include "kref.h"
#include "pw_kernels.h"

static void ref_forward(double *out, double *mean, double *rstd, const double *x,
                        const double *w, const double *b, int N, int C)
{
    for (int i = 0; i < N; i++) {
        const double *r = x + (size_t)i * C;
        double m = 0.0, var = 0.0;
        for (int c = 0; c < C; c++) m += r[c] / C;
        for (int c = 0; c < C; c++) var += (r[c] - m) * (r[c] - m) / C;
        double s = 1.0 / sqrt(var + 1e-5);
        for (int c = 0; c < C; c++) out[(size_t)i * C + c] = (r[c] - m) * s * w[c] + b[c];
        mean[i] = m;
        rstd[i] = s;
    }
}

/* straight from the chain rule through m and var, so it shares no algebra with the kernel */
static void ref_backward(double *dx, double *dw, double *db, const double *dout, const double *x,
                         const double *w, int N, int C)
{
    for (int i = 0; i < N; i++) {
        const double *r = x + (size_t)i * C, *d = dout + (size_t)i * C;
        double m = 0.0, var = 0.0;
        for (int c = 0; c < C; c++) m += r[c] / C;
        for (int c = 0; c < C; c++) var += (r[c] - m) * (r[c] - m) / C;
        double s = 1.0 / sqrt(var + 1e-5), dvar = 0.0, dm = 0.0;
        for (int c = 0; c < C; c++) {
            double dn = d[c] * w[c];
            dw[c] += d[c] * (r[c] - m) * s;
            db[c] += d[c];
            dvar += dn * (r[c] - m) * -0.5 * s * s * s;
            dm -= dn * s;
        }
        for (int c = 0; c < C; c++)
            dx[(size_t)i * C + c] += d[c] * w[c] * s + dvar * 2.0 * (r[c] - m) / C + dm / C;
    }
}

typedef struct FdCtx {
    double *x, *w, *b, *dout, *out, *mean, *rstd;
    int N, C;
} FdCtx;

static double fd_loss(const void *p)
{
    const FdCtx *c = p;
    ref_forward(c->out, c->mean, c->rstd, c->x, c->w, c->b, c->N, c->C);
    return kref_dot(c->dout, c->out, (size_t)c->N * c->C);
}

static void check(int N, int C, unsigned long long seed)
{
    unsigned long long rng = seed;
    size_t n = (size_t)N * C;
    float *x = kref_randn(n, 2.0, &rng);
    for (size_t i = 0; i < n; i++) x[i] += 3.0f; /* rows away from zero, as residual streams */
    float *w = kref_randn(C, 1.0, &rng), *b = kref_randn(C, 1.0, &rng);
    float *dout = kref_randn(n, 1.0, &rng);
    float *dx = kref_randn(n, 1.0, &rng), *dw = kref_randn(C, 1.0, &rng);
    float *db = kref_randn(C, 1.0, &rng);
    float *dx0 = kref_copy(dx, n), *dw0 = kref_copy(dw, C), *db0 = kref_copy(db, C);
    float *out = kref_alloc(n * sizeof *out), *mean = kref_alloc(N * sizeof *mean);
    float *rstd = kref_alloc(N * sizeof *rstd);
    double *xd = kref_to_double(x, n), *wd = kref_to_double(w, C), *bd = kref_to_double(b, C);
    double *doutd = kref_to_double(dout, n), *outd = kref_alloc(n * sizeof *outd);
    double *meand = kref_alloc(N * sizeof *meand), *rstdd = kref_alloc(N * sizeof *rstdd);
    double *dxd = kref_alloc(n * sizeof *dxd), *dwd = kref_alloc(C * sizeof *dwd);
    double *dbd = kref_alloc(C * sizeof *dbd);

    pw_layernorm_forward(out, mean, rstd, x, w, b, N, C);
    ref_forward(outd, meand, rstdd, xd, wd, bd, N, C);
    double e_o = pw_max_rel_err(out, outd, n, 1e-6), e_m = pw_max_rel_err(mean, meand, N, 1e-6);
    double e_r = pw_max_rel_err(rstd, rstdd, N, 1e-6);
    CHECK(e_o < KREF_TOL, "C=%d: out rel err %.3g", C, e_o);
    CHECK(e_m < KREF_TOL, "C=%d: mean rel err %.3g", C, e_m);
    CHECK(e_r < KREF_TOL, "C=%d: rstd rel err %.3g", C, e_r);

    pw_layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, N, C);
    ref_backward(dxd, dwd, dbd, doutd, xd, wd, N, C);
    double *wx = kref_plus(dx0, dxd, n), *ww = kref_plus(dw0, dwd, C), *wb = kref_plus(db0, dbd, C);
    double e_dx = pw_max_rel_err(dx, wx, n, 1e-6), e_dw = pw_max_rel_err(dw, ww, C, 1e-6);
    double e_db = pw_max_rel_err(db, wb, C, 1e-6);
    CHECK(e_dx < KREF_TOL, "C=%d: dinp rel err %.3g", C, e_dx);
    CHECK(e_dw < KREF_TOL, "C=%d: dweight rel err %.3g", C, e_dw);
    CHECK(e_db < KREF_TOL, "C=%d: dbias rel err %.3g", C, e_db);

    /* only dinp wanted: dweight and dbias NULL must be skipped */
    float *dx2 = kref_copy(dx0, n);
    pw_layernorm_backward(dx2, NULL, NULL, dout, x, w, mean, rstd, N, C);
    CHECK(pw_max_rel_err(dx2, wx, n, 1e-6) < KREF_TOL, "C=%d: dinp alone differs", C);

    FdCtx c = {xd, wd, bd, doutd, outd, meand, rstdd, N, C};
    double e_fx = kref_fd_err(xd, n, dxd, fd_loss, &c);
    double e_fw = kref_fd_err(wd, C, dwd, fd_loss, &c), e_fb = kref_fd_err(bd, C, dbd, fd_loss, &c);
    CHECK(e_fx < KREF_FD_TOL, "C=%d: reference dinp vs finite differences %.3g", C, e_fx);
    CHECK(e_fw < KREF_FD_TOL, "C=%d: reference dweight vs finite differences %.3g", C, e_fw);
    CHECK(e_fb < KREF_FD_TOL, "C=%d: reference dbias vs finite differences %.3g", C, e_fb);
    printf("N=%d C=%-4d out %.2g dinp %.2g dweight %.2g dbias %.2g fd %.2g\n", N, C, e_o, e_dx,
           e_dw, e_db, e_fx);
    free(x); free(w); free(b); free(dout); free(dx); free(dw); free(db); free(dx0); free(dw0);
    free(db0); free(out); free(mean); free(rstd); free(xd); free(wd); free(bd); free(doutd);
    free(outd); free(meand); free(rstdd); free(dxd); free(dwd); free(dbd); free(wx); free(ww);
    free(wb); free(dx2);
}

int main(void)
{
    check(5, 37, 1);
    check(9, 130, 2); /* more channels than one 64-wide chunk, with a ragged last chunk */
    return pw_test_done("test_layernorm");
}
