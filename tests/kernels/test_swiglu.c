/* test_swiglu.c: SwiGLU against a float64 reference: forward, accumulating backward into
 * pre-filled gradients, and the reference's backward by central differences. */
#include "kref.h"
#include "pw_kernels.h"

static void ref_forward(double *out, const double *gu, int N, int F)
{
    for (int n = 0; n < N; n++)
        for (int i = 0; i < F; i++) {
            double g = gu[(size_t)n * 2 * F + i], u = gu[(size_t)n * 2 * F + F + i];
            out[(size_t)n * F + i] = g / (1.0 + exp(-g)) * u;
        }
}

static void ref_backward(double *dgu, const double *gu, const double *dout, int N, int F)
{
    for (int n = 0; n < N; n++)
        for (int i = 0; i < F; i++) {
            double g = gu[(size_t)n * 2 * F + i], u = gu[(size_t)n * 2 * F + F + i];
            double s = 1.0 / (1.0 + exp(-g)), d = dout[(size_t)n * F + i];
            /* d/dg (g s) = s + g s (1 - s) */
            dgu[(size_t)n * 2 * F + i] += d * u * (s + g * s * (1.0 - s));
            dgu[(size_t)n * 2 * F + F + i] += d * g * s;
        }
}

typedef struct FdCtx {
    double *gu, *dout, *out;
    int N, F;
} FdCtx;

static double fd_loss(const void *p)
{
    const FdCtx *c = p;
    ref_forward(c->out, c->gu, c->N, c->F);
    return kref_dot(c->dout, c->out, (size_t)c->N * c->F);
}

static void check(int N, int F, unsigned long long seed)
{
    unsigned long long rng = seed;
    size_t n = (size_t)N * F, n2 = 2 * n;
    float *gu = kref_randn(n2, 3.0, &rng), *dout = kref_randn(n, 1.0, &rng);
    gu[0] = -120.0f; /* e^-g overflows: silu must still be a clean -0 */
    gu[1] = 95.0f;
    float *dgu = kref_randn(n2, 1.0, &rng), *dgu0 = kref_copy(dgu, n2);
    float *out = kref_alloc(n * sizeof *out);
    for (size_t i = 0; i < n; i++) out[i] = NAN;
    double *gud = kref_to_double(gu, n2), *doutd = kref_to_double(dout, n);
    double *outd = kref_alloc(n * sizeof *outd), *dgud = kref_alloc(n2 * sizeof *dgud);

    pw_swiglu_forward(out, gu, N, F);
    ref_forward(outd, gud, N, F);
    double e_o = pw_max_rel_err(out, outd, n, 1e-6);
    CHECK(e_o < KREF_TOL, "F=%d: out rel err %.3g", F, e_o);

    pw_swiglu_backward(dgu, gu, dout, N, F);
    ref_backward(dgud, gud, doutd, N, F);
    double *want = kref_plus(dgu0, dgud, n2);
    double e_d = pw_max_rel_err(dgu, want, n2, 1e-6);
    CHECK(e_d < KREF_TOL, "F=%d: dgate_up rel err %.3g (accumulated onto pre-filled values)", F,
          e_d);

    /* the saturated entries stay out of the finite differences: exp(120) is only a check of
     * the kernel's overflow path, not of the reference's derivative */
    gud[0] = -1.5;
    gud[1] = 0.7;
    for (size_t i = 0; i < n2; i++) dgud[i] = 0.0;
    ref_backward(dgud, gud, doutd, N, F);
    FdCtx c = {gud, doutd, outd, N, F};
    double e_fd = kref_fd_err(gud, n2, dgud, fd_loss, &c);
    CHECK(e_fd < KREF_FD_TOL, "F=%d: reference dgate_up vs finite differences %.3g", F, e_fd);
    printf("N=%d F=%-4d out %.2g dgate_up %.2g fd %.2g\n", N, F, e_o, e_d, e_fd);
    free(gu); free(dout); free(dgu); free(dgu0); free(out); free(gud); free(doutd); free(outd);
    free(dgud); free(want);
}

int main(void)
{
    check(5, 37, 1);
    check(3, 131, 2);
    return pw_test_done("test_swiglu");
}
