/* test_rope.c: rotary embeddings against a float64 reference (forward in place, backward as the
 * transposed rotation, checked by central differences), forward then backward giving the input
 * back, and inv_freq with and without llama3 rope_scaling against the formula and hand values. */
#include "kref.h"
#include "pw_kernels.h"

/* the angle as the kernel documents it: the fp32 product pos * inv_freq, then exact cos, sin */
static double angle(const int *pos, int n, const float *inv_freq, int i)
{
    return (double)((float)(pos ? pos[n] : n) * inv_freq[i]);
}

/* out = R(sign * angle) x on the first nheads heads of each row; the rest copied */
static void ref_rotate(double *out, const double *x, const int *pos, const float *inv_freq, int N,
                       int nheads, int hs, int stride, double sign)
{
    int half = hs / 2;
    for (size_t i = 0; i < (size_t)N * stride; i++) out[i] = x[i];
    for (int n = 0; n < N; n++)
        for (int h = 0; h < nheads; h++)
            for (int i = 0; i < half; i++) {
                size_t a = (size_t)n * stride + (size_t)h * hs + i, b = a + half;
                double t = sign * angle(pos, n, inv_freq, i);
                out[a] = x[a] * cos(t) - x[b] * sin(t);
                out[b] = x[b] * cos(t) + x[a] * sin(t);
            }
}

typedef struct FdCtx {
    double *x, *w, *out;
    const int *pos;
    const float *inv_freq;
    int N, nheads, hs, stride;
} FdCtx;

static double fd_loss(const void *p)
{
    const FdCtx *c = p;
    ref_rotate(c->out, c->x, c->pos, c->inv_freq, c->N, c->nheads, c->hs, c->stride, 1.0);
    return kref_dot(c->w, c->out, (size_t)c->N * c->stride);
}

static void check(const char *name, const int *pos, const float *inv_freq, int N, int nheads,
                  int hs, int stride, unsigned long long seed)
{
    unsigned long long rng = seed;
    size_t n = (size_t)N * stride;
    float *x = kref_randn(n, 1.0, &rng), *x0 = kref_copy(x, n), *g = kref_randn(n, 1.0, &rng);
    float *g0 = kref_copy(g, n);
    double *xd = kref_to_double(x, n), *gd = kref_to_double(g, n);
    double *outd = kref_alloc(n * sizeof *outd), *dxd = kref_alloc(n * sizeof *dxd);

    pw_rope_forward(x, pos, inv_freq, N, nheads, hs, stride);
    ref_rotate(outd, xd, pos, inv_freq, N, nheads, hs, stride, 1.0);
    double e_f = pw_max_rel_err(x, outd, n, 1e-6);
    CHECK(e_f < KREF_TOL, "%s: forward rel err %.3g", name, e_f);
    int untouched = 1;
    for (int r = 0; r < N; r++)
        for (int c = nheads * hs; c < stride; c++)
            untouched &= x[(size_t)r * stride + c] == x0[(size_t)r * stride + c];
    CHECK(untouched, "%s: columns past the first %d heads changed", name, nheads);

    /* the backward is the transpose: R(-angle) applied to the incoming gradient */
    pw_rope_backward(g, pos, inv_freq, N, nheads, hs, stride);
    ref_rotate(dxd, gd, pos, inv_freq, N, nheads, hs, stride, -1.0);
    double e_b = pw_max_rel_err(g, dxd, n, 1e-6);
    CHECK(e_b < KREF_TOL, "%s: backward rel err %.3g", name, e_b);

    /* forward then backward: the input again, to rounding */
    pw_rope_backward(x, pos, inv_freq, N, nheads, hs, stride);
    double *x0d = kref_to_double(x0, n);
    double e_rt = pw_max_rel_err(x, x0d, n, 1e-6);
    CHECK(e_rt < KREF_TOL, "%s: forward then backward differs from the input by %.3g", name, e_rt);

    FdCtx c = {xd, gd, outd, pos, inv_freq, N, nheads, hs, stride};
    double e_fd = kref_fd_err(xd, n, dxd, fd_loss, &c);
    CHECK(e_fd < KREF_FD_TOL, "%s: reference backward vs finite differences %.3g", name, e_fd);
    printf("%-36s forward %.2g backward %.2g round trip %.2g fd %.2g\n", name, e_f, e_b, e_rt,
           e_fd);
    free(x); free(x0); free(g); free(g0); free(xd); free(gd); free(outd); free(dxd); free(x0d);
}

/* transformers' llama3 scaling written as its torch.where steps, to compare with the helper */
static double llama3(double f, double factor, double low, double high, double old)
{
    double wl = 2.0 * M_PI / f, lwl = old / low, hwl = old / high;
    double scaled = wl > lwl ? f / factor : f;
    double smooth = (old / wl - low) / (high - low);
    double smoothed = (1.0 - smooth) * scaled / factor + smooth * scaled;
    int medium = !(wl < hwl) && !(wl > lwl);
    return medium ? smoothed : scaled;
}

static void check_inv_freq(void)
{
    enum { HS = 64 };
    float got[HS / 2];
    double want[HS / 2];
    pw_rope_inv_freq(got, HS, 10000.0, NULL);
    for (int i = 0; i < HS / 2; i++) want[i] = 1.0 / pow(10000.0, 2.0 * i / HS);
    double e_d = pw_max_rel_err(got, want, HS / 2, 0.0);
    CHECK(e_d < 1e-7, "default inv_freq rel err %.3g", e_d);
    CHECK(got[0] == 1.0f && fabs(got[16] - 0.01) < 1e-9, "default inv_freq: %g %g", got[0],
          got[16]);

    PwRopeScaling s = {1, 8.0, 1.0, 4.0, 8192};
    pw_rope_inv_freq(got, HS, 500000.0, &s);
    int low = 0, mid = 0, high = 0;
    for (int i = 0; i < HS / 2; i++) {
        double f = 1.0 / pow(500000.0, 2.0 * i / HS), wl = 2.0 * M_PI / f;
        want[i] = llama3(f, 8.0, 1.0, 4.0, 8192.0);
        high += wl < 2048.0, low += wl > 8192.0, mid += wl >= 2048.0 && wl <= 8192.0;
    }
    double e_l = pw_max_rel_err(got, want, HS / 2, 0.0);
    CHECK(e_l < 1e-7, "llama3 inv_freq rel err %.3g", e_l);
    /* all three bands are present: entries 15, 16 and 17 are blended */
    CHECK(high == 15 && mid == 3 && low == 14, "bands %d / %d / %d", high, mid, low);
    /* by hand: entry 0 keeps 1; entry 16 has f = 500000^-1/2 = 1/707.107, wavelength
     * 2 pi 707.107 = 4442.88, smooth = (8192 / 4442.88 - 1) / 3 = 0.281279, so
     * f (1 - 0.281279) / 8 + f 0.281279 = 0.371119 f = 5.24846e-4; entry 31 has
     * f = 500000^-31/32 = 3.01386e-6 (wavelength 2.08e6 > 8192), divided by 8: 3.76732e-7 */
    CHECK(got[0] == 1.0f, "llama3 inv_freq[0] = %.9g", got[0]);
    CHECK(fabs(got[16] / 5.24846e-4 - 1.0) < 2e-6, "llama3 inv_freq[16] = %.9g", got[16]);
    CHECK(fabs(got[31] / 3.76732e-7 - 1.0) < 2e-6, "llama3 inv_freq[31] = %.9g", got[31]);
    printf("inv_freq: default rel err %.2g, llama3 rel err %.2g, [16] %.7g [31] %.7g\n", e_d, e_l,
           got[16], got[31]);
}

int main(void)
{
    check_inv_freq();
    float inv10[5], inv64[32];
    pw_rope_inv_freq(inv10, 10, 10000.0, NULL);
    PwRopeScaling s = {1, 8.0, 1.0, 4.0, 8192};
    pw_rope_inv_freq(inv64, 64, 500000.0, &s);
    /* q and k heads of a GQA qkv row (3 + 2 rotated, 1 v head left alone) at row positions */
    check("hs=10, 5 of 6 heads, pos = row", NULL, inv10, 7, 5, 10, 60, 1);
    /* packed tokens with their own positions, some far into a long context */
    int pos[9] = {0, 1, 2, 3, 0, 1, 8191, 8192, 131000};
    check("hs=64 llama3, packed positions", pos, inv64, 9, 2, 64, 3 * 64, 2);
    check("hs=64, stride with a gap", pos, inv64, 9, 1, 64, 64 + 3, 3);
    return pw_test_done("test_rope");
}
