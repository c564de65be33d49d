/* test_residual.c: the residual add and its backward, which must add the same gradient onto
 * both pre-filled branches and skip a NULL one. */
#include "kref.h"
#include "pw_kernels.h"

typedef struct FdCtx {
    double *a, *b, *w;
    size_t n;
} FdCtx;

static double fd_loss(const void *p)
{
    const FdCtx *c = p;
    double s = 0.0;
    for (size_t i = 0; i < c->n; i++) s += c->w[i] * (c->a[i] + c->b[i]);
    return s;
}

int main(void)
{
    enum { N = 1013 };
    unsigned long long rng = 5;
    float *a = kref_randn(N, 1.0, &rng), *b = kref_randn(N, 1.0, &rng);
    float *dout = kref_randn(N, 1.0, &rng), *out = kref_alloc(N * sizeof *out);
    float *da = kref_randn(N, 1.0, &rng), *db = kref_randn(N, 1.0, &rng);
    float *da0 = kref_copy(da, N), *db0 = kref_copy(db, N);
    double *outd = kref_alloc(N * sizeof *outd), *wa = kref_alloc(N * sizeof *wa);
    double *wb = kref_alloc(N * sizeof *wb);
    for (int i = 0; i < N; i++) {
        outd[i] = (double)a[i] + b[i];
        wa[i] = (double)da0[i] + dout[i];
        wb[i] = (double)db0[i] + dout[i];
    }
    pw_residual_forward(out, a, b, N);
    double e_o = pw_max_rel_err(out, outd, N, 1e-6);
    CHECK(e_o < KREF_TOL, "residual out rel err %.3g", e_o);
    pw_residual_backward(da, db, dout, N);
    double e_a = pw_max_rel_err(da, wa, N, 1e-6), e_b = pw_max_rel_err(db, wb, N, 1e-6);
    CHECK(e_a < KREF_TOL, "da rel err %.3g (accumulated)", e_a);
    CHECK(e_b < KREF_TOL, "db rel err %.3g (accumulated)", e_b);
    memcpy(db, db0, N * sizeof *db);
    pw_residual_backward(NULL, db, dout, N);
    CHECK(pw_max_rel_err(db, wb, N, 1e-6) < KREF_TOL, "db alone differs");
    /* the reference gradient of sum(dout * (a + b)) is dout in both inputs */
    double *ad = kref_to_double(a, N), *bd = kref_to_double(b, N), *wd = kref_to_double(dout, N);
    FdCtx c = {ad, bd, wd, N};
    double e_fa = kref_fd_err(ad, N, wd, fd_loss, &c), e_fb = kref_fd_err(bd, N, wd, fd_loss, &c);
    CHECK(e_fa < KREF_FD_TOL, "reference da vs finite differences %.3g", e_fa);
    CHECK(e_fb < KREF_FD_TOL, "reference db vs finite differences %.3g", e_fb);
    printf("residual out %.2g da %.2g db %.2g\n", e_o, e_a, e_b);
    free(a); free(b); free(dout); free(out); free(da); free(db); free(da0); free(db0);
    free(outd); free(wa); free(wb); free(ad); free(bd); free(wd);
    return pw_test_done("test_residual");
}
