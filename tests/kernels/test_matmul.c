/* test_matmul.c: the sgemm linear layer against a float64 reference: forward with and without
 * bias, accumulating backward, and the reference's backward by central differences; and the CPU
 * table's bf16 entries against the pw_matmul_*_bf16 twins, bit for bit. */
#include "kref.h"
#include "pw_bf16.h"
#include "pw_kernels.h"
#include "pw_ops.h"

static void ref_forward(double *out, const double *x, const double *w, const double *b, int N,
                        int C, int OC)
{
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++) {
            double s = b ? b[o] : 0.0;
            for (int c = 0; c < C; c++) s += x[(size_t)i * C + c] * w[(size_t)o * C + c];
            out[(size_t)i * OC + o] = s;
        }
}

static void ref_backward(double *dx, double *dw, double *db, const double *dout, const double *x,
                         const double *w, int N, int C, int OC)
{
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++) {
            double d = dout[(size_t)i * OC + o];
            db[o] += d;
            for (int c = 0; c < C; c++) {
                dx[(size_t)i * C + c] += d * w[(size_t)o * C + c];
                dw[(size_t)o * C + c] += d * x[(size_t)i * C + c];
            }
        }
}

typedef struct FdCtx {
    double *x, *w, *b, *dout, *out;
    int N, C, OC;
} FdCtx;

static double fd_loss(const void *p)
{
    const FdCtx *c = p;
    ref_forward(c->out, c->x, c->w, c->b, c->N, c->C, c->OC);
    return kref_dot(c->dout, c->out, (size_t)c->N * c->OC);
}

static void check(int N, int C, int OC, unsigned long long seed)
{
    unsigned long long rng = seed;
    size_t nx = (size_t)N * C, nw = (size_t)OC * C, no = (size_t)N * OC;
    float *x = kref_randn(nx, 1.0, &rng), *w = kref_randn(nw, 0.5, &rng);
    float *b = kref_randn(OC, 1.0, &rng), *dout = kref_randn(no, 1.0, &rng);
    float *dx = kref_randn(nx, 1.0, &rng), *dw = kref_randn(nw, 1.0, &rng);
    float *db = kref_randn(OC, 1.0, &rng);
    float *dx0 = kref_copy(dx, nx), *dw0 = kref_copy(dw, nw), *db0 = kref_copy(db, OC);
    float *out = kref_alloc(no * sizeof *out);
    double *xd = kref_to_double(x, nx), *wd = kref_to_double(w, nw), *bd = kref_to_double(b, OC);
    double *doutd = kref_to_double(dout, no), *outd = kref_alloc(no * sizeof *outd);
    double *dxd = kref_alloc(nx * sizeof *dxd), *dwd = kref_alloc(nw * sizeof *dwd);
    double *dbd = kref_alloc(OC * sizeof *dbd);

    for (size_t i = 0; i < no; i++) out[i] = NAN; /* beta = 0 must not read stale output */
    pw_matmul_forward(out, x, w, NULL, N, C, OC);
    ref_forward(outd, xd, wd, NULL, N, C, OC);
    double e_nb = pw_max_rel_err(out, outd, no, 1e-6);
    CHECK(e_nb < KREF_TOL, "%dx%dx%d: out (no bias) rel err %.3g", N, C, OC, e_nb);
    for (size_t i = 0; i < no; i++) out[i] = NAN;
    pw_matmul_forward(out, x, w, b, N, C, OC);
    ref_forward(outd, xd, wd, bd, N, C, OC);
    double e_o = pw_max_rel_err(out, outd, no, 1e-6);
    CHECK(e_o < KREF_TOL, "%dx%dx%d: out rel err %.3g", N, C, OC, e_o);

    pw_matmul_backward(dx, dw, db, dout, x, w, N, C, OC);
    ref_backward(dxd, dwd, dbd, doutd, xd, wd, N, C, OC);
    double *wx = kref_plus(dx0, dxd, nx), *ww = kref_plus(dw0, dwd, nw), *wb = kref_plus(db0, dbd, OC);
    double e_dx = pw_max_rel_err(dx, wx, nx, 1e-6), e_dw = pw_max_rel_err(dw, ww, nw, 1e-6);
    double e_db = pw_max_rel_err(db, wb, OC, 1e-6);
    CHECK(e_dx < KREF_TOL, "%dx%dx%d: dinp rel err %.3g", N, C, OC, e_dx);
    CHECK(e_dw < KREF_TOL, "%dx%dx%d: dweight rel err %.3g", N, C, OC, e_dw);
    CHECK(e_db < KREF_TOL, "%dx%dx%d: dbias rel err %.3g", N, C, OC, e_db);

    /* NULL gradients are skipped: only dweight asked for */
    float *dw2 = kref_copy(dw0, nw);
    pw_matmul_backward(NULL, dw2, NULL, dout, x, w, N, C, OC);
    CHECK(pw_max_rel_err(dw2, ww, nw, 1e-6) < KREF_TOL, "%dx%dx%d: dweight alone", N, C, OC);

    FdCtx c = {xd, wd, bd, doutd, outd, N, C, OC};
    double e_fx = kref_fd_err(xd, nx, dxd, fd_loss, &c), e_fw = kref_fd_err(wd, nw, dwd, fd_loss, &c);
    double e_fb = kref_fd_err(bd, OC, dbd, fd_loss, &c);
    CHECK(e_fx < KREF_FD_TOL, "reference dinp vs finite differences %.3g", e_fx);
    CHECK(e_fw < KREF_FD_TOL, "reference dweight vs finite differences %.3g", e_fw);
    CHECK(e_fb < KREF_FD_TOL, "reference dbias vs finite differences %.3g", e_fb);
    printf("N=%d C=%d OC=%-4d out %.2g dinp %.2g dweight %.2g dbias %.2g\n", N, C, OC, e_o, e_dx,
           e_dw, e_db);
    free(x); free(w); free(b); free(dout); free(dx); free(dw); free(db); free(dx0); free(dw0);
    free(db0); free(out); free(xd); free(wd); free(bd); free(doutd); free(outd); free(dxd);
    free(dwd); free(dbd); free(wx); free(ww); free(wb); free(dw2);
}

/* The bf16 products: the float64 reference of the operands rounded to bfloat16 by hand
 * (bit tricks independent of pw_bf16.h: the top 16 bits, rounded to nearest even), at the float32
 * accumulation's tolerance; and the same products of the unrounded operands differ by bf16's
 * rounding (about 2^-9 relative), so the rounding does happen. */
static double bf16_ref(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    uint32_t keep = b & 0xffff0000u, rest = b & 0xffffu;
    if (rest > 0x8000u || (rest == 0x8000u && (keep & 0x10000u))) keep += 0x10000u;
    float y;
    memcpy(&y, &keep, 4);
    return y;
}

static void check_bf16(int N, int C, int OC, unsigned long long seed)
{
    unsigned long long rng = seed;
    size_t nx = (size_t)N * C, nw = (size_t)OC * C, no = (size_t)N * OC;
    float *x = kref_randn(nx, 1.0, &rng), *w = kref_randn(nw, 0.5, &rng);
    float *b = kref_randn(OC, 1.0, &rng), *dout = kref_randn(no, 1.0, &rng);
    double *xr = kref_alloc(nx * sizeof *xr), *wr = kref_alloc(nw * sizeof *wr);
    double *dr = kref_alloc(no * sizeof *dr), *bd = kref_to_double(b, OC);
    for (size_t i = 0; i < nx; i++) xr[i] = bf16_ref(x[i]);
    for (size_t i = 0; i < nw; i++) wr[i] = bf16_ref(w[i]);
    for (size_t i = 0; i < no; i++) dr[i] = bf16_ref(dout[i]);
    float *out = kref_alloc(no * sizeof *out), *out32 = kref_alloc(no * sizeof *out32);
    double *outd = kref_alloc(no * sizeof *outd);
    pw_matmul_forward_bf16(out, x, w, b, N, C, OC);
    pw_matmul_forward(out32, x, w, b, N, C, OC);
    ref_forward(outd, xr, wr, bd, N, C, OC); /* the bias is float32 */
    double e_o = pw_max_rel_err(out, outd, no, 1e-6), d32 = pw_max_rel_err(out32, outd, no, 1e-6);
    CHECK(e_o < KREF_TOL, "bf16 %dx%dx%d: out rel err %.3g", N, C, OC, e_o);
    CHECK(d32 > 1e-4, "bf16 %dx%dx%d: the float32 product is only %.3g from the bf16 reference: "
          "were the operands rounded?", N, C, OC, d32);

    float *dx = kref_alloc(nx * sizeof *dx), *dw = kref_alloc(nw * sizeof *dw);
    float *db = kref_alloc(OC * sizeof *db);
    double *dxd = kref_alloc(nx * sizeof *dxd), *dwd = kref_alloc(nw * sizeof *dwd);
    double *dbd = kref_alloc(OC * sizeof *dbd);
    pw_matmul_backward_bf16(dx, dw, db, dout, x, w, N, C, OC); /* kref_alloc zeroes */
    ref_backward(dxd, dwd, dbd, dr, xr, wr, N, C, OC);
    double e_dx = pw_max_rel_err(dx, dxd, nx, 1e-6), e_dw = pw_max_rel_err(dw, dwd, nw, 1e-6);
    double e_db = pw_max_rel_err(db, dbd, OC, 1e-6);
    CHECK(e_dx < KREF_TOL && e_dw < KREF_TOL && e_db < KREF_TOL,
          "bf16 %dx%dx%d: dinp %.3g dweight %.3g dbias %.3g", N, C, OC, e_dx, e_dw, e_db);
    /* dweight alone (inp read, weight not): the same values */
    float *dw2 = kref_alloc(nw * sizeof *dw2);
    pw_matmul_backward_bf16(NULL, dw2, NULL, dout, x, w, N, C, OC);
    CHECK(!memcmp(dw2, dw, nw * sizeof *dw2), "bf16 %dx%dx%d: dweight alone differs", N, C, OC);
    printf("bf16 N=%d C=%d OC=%-4d out %.2g (fp32 product %.2g away) dinp %.2g dweight %.2g "
           "dbias %.2g\n", N, C, OC, e_o, d32, e_dx, e_dw, e_db);
    free(x); free(w); free(b); free(dout); free(xr); free(wr); free(dr); free(bd); free(out);
    free(out32); free(outd); free(dx); free(dw); free(db); free(dxd); free(dwd); free(dbd);
    free(dw2);
}

/* The CPU table's bf16 entries with their operands given in bfloat16 (inp_bf16, weight_bf16,
 * dout_bf16 in rows 2 OC apart with NaN between, as the LM head's dlogits lie) and the forward's
 * result rounded into out_bf16: the twins' bits (the twin on the float32 operands, its output
 * rounded); the backward sets dinp (set_dinp: NaN there is never read) and adds to dweight and
 * dbias. */
static void check_bf16_entries(int N, int C, int OC, unsigned long long seed)
{
    const PwOps *o = pw_ops_cpu();
    unsigned long long rng = seed;
    size_t nx = (size_t)N * C, nw = (size_t)OC * C, no = (size_t)N * OC;
    float *x = kref_randn(nx, 1.0, &rng), *w = kref_randn(nw, 0.1, &rng);
    float *b = kref_randn(OC, 0.1, &rng), *dout = kref_randn(no, 1.0, &rng);
    uint16_t *x16 = kref_alloc(nx * 2), *w16 = kref_alloc(nw * 2), *d16 = kref_alloc(no * 4);
    for (size_t i = 0; i < nx; i++) x16[i] = pw_bf16_from_f32(x[i]);
    for (size_t i = 0; i < nw; i++) w16[i] = pw_bf16_from_f32(w[i]);
    for (size_t i = 0; i < (size_t)N; i++)
        for (int c = 0; c < 2 * OC; c++)
            d16[i * 2 * OC + c] = c < OC ? pw_bf16_from_f32(dout[i * OC + c]) : 0x7fc1;

    float *want = kref_alloc(no * 4);
    uint16_t *got = kref_alloc(no * 2);
    pw_matmul_forward_bf16(want, x, w, b, N, C, OC);
    o->matmul_forward_bf16(o, NULL, got, NULL, x16, NULL, w16, b, N, C, OC);
    size_t bad = 0;
    for (size_t i = 0; i < no; i++) bad += got[i] != pw_bf16_from_f32(want[i]);
    CHECK(bad == 0, "bf16 entry %dx%dx%d: %zu rounded outputs differ from the twin's", N, C, OC,
          bad);

    float *dx = kref_alloc(nx * 4), *dw = kref_alloc(nw * 4), *db = kref_alloc(OC * 4);
    float *ex = kref_alloc(nx * 4), *ew = kref_alloc(nw * 4), *eb = kref_alloc(OC * 4);
    pw_matmul_backward_bf16(dx, dw, db, dout, x, w, N, C, OC); /* kref_alloc zeroes */
    for (size_t i = 0; i < nx; i++) ex[i] = NAN;
    o->matmul_backward_bf16(o, ex, ew, eb, NULL, d16, 2 * (size_t)OC, NULL, x16, NULL, w16, N, C,
                            OC, 1);
    CHECK(!memcmp(ex, dx, nx * 4) && !memcmp(ew, dw, nw * 4) && !memcmp(eb, db, OC * 4),
          "bf16 entry %dx%dx%d: the backward from bfloat16 operands differs from the twin's", N,
          C, OC);
    printf("bf16 entries N=%d C=%d OC=%d: the twins' bits\n", N, C, OC);
    free(x); free(w); free(b); free(dout); free(x16); free(w16); free(d16); free(want); free(got);
    free(dx); free(dw); free(db); free(ex); free(ew); free(eb);
}

int main(void)
{
    check(7, 33, 70, 1); /* OC over one 64-wide dbias chunk */
    check(5, 16, 3, 2);
    check_bf16(7, 33, 70, 3);
    check_bf16(9, 64, 5, 4);
    check_bf16_entries(7, 33, 70, 5);
    return pw_test_done("test_matmul");
}
