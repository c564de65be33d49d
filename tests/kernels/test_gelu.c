/* test_gelu.c: GELU (tanh form) against a float64 reference, forward and accumulating backward,
 * and the reference's derivative by central differences. */
#include "kref.h"
#include "pw_kernels.h"

#define PI 3.14159265358979323846 /* M_PI is not C11 */

static double ref_gelu(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / PI) * (x + 0.044715 * x * x * x)));
}

/* the derivative written out independently of the kernel's grouping */
static double ref_dgelu(double x)
{
    double k = sqrt(2.0 / PI), u = k * (x + 0.044715 * x * x * x), th = tanh(u);
    double sech2 = 1.0 / (cosh(u) * cosh(u));
    return 0.5 * (1.0 + th) + 0.5 * x * sech2 * k * (1.0 + 3.0 * 0.044715 * x * x);
}

typedef struct FdCtx {
    double *x, *dout;
    size_t n;
} FdCtx;

static double fd_loss(const void *p)
{
    const FdCtx *c = p;
    double s = 0.0;
    for (size_t i = 0; i < c->n; i++) s += c->dout[i] * ref_gelu(c->x[i]);
    return s;
}

int main(void)
{
    enum { N = 1013 }; /* not a multiple of any vector width */
    unsigned long long rng = 3;
    float *x = kref_randn(N, 3.0, &rng), *dout = kref_randn(N, 1.0, &rng);
    const float special[] = {0.0f, -0.0f, 1e-6f, -1e-6f, 10.0f, -10.0f, 30.0f, -30.0f, 88.0f, -88.0f};
    memcpy(x, special, sizeof special);
    float *dx = kref_randn(N, 1.0, &rng), *dx0 = kref_copy(dx, N);
    float *out = kref_alloc(N * sizeof *out);
    double *xd = kref_to_double(x, N), *doutd = kref_to_double(dout, N);
    double *outd = kref_alloc(N * sizeof *outd), *gd = kref_alloc(N * sizeof *gd);
    double *want = kref_alloc(N * sizeof *want);

    pw_gelu_forward(out, x, N);
    for (int i = 0; i < N; i++) outd[i] = ref_gelu(xd[i]);
    /* each output against its own size (GELU spans 1e-7 to 88 here), so the negative tail counts */
    double e_o = 0.0;
    for (int i = 0; i < N; i++) {
        double e = fabs(out[i] - outd[i]) / fmax(fabs(outd[i]), 1e-6);
        e_o = isnan(out[i]) ? INFINITY : fmax(e_o, e);
    }
    CHECK(e_o < KREF_TOL, "gelu out worst element rel err %.3g", e_o);

    pw_gelu_backward(dx, x, dout, N);
    for (int i = 0; i < N; i++) {
        gd[i] = ref_dgelu(xd[i]) * doutd[i];
        want[i] = dx0[i] + gd[i];
    }
    double e_d = pw_max_rel_err(dx, want, N, 1e-6);
    CHECK(e_d < KREF_TOL, "gelu dinp rel err %.3g (accumulated)", e_d);

    FdCtx c = {xd, doutd, N};
    double e_fd = kref_fd_err(xd, N, gd, fd_loss, &c);
    CHECK(e_fd < KREF_FD_TOL, "reference dgelu vs finite differences %.3g", e_fd);
    printf("gelu out %.2g dinp %.2g fd %.2g\n", e_o, e_d, e_fd);
    free(x); free(dout); free(dx); free(dx0); free(out); free(xd); free(doutd); free(outd);
    free(gd); free(want);
    return pw_test_done("test_gelu");
}
