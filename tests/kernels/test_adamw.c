/* test_adamw.c: three AdamW steps against PyTorch's torch.optim.AdamW update written out in
 * float64 (decoupled decay p *= 1 - lr wd, bias-corrected moments). */
#include "kref.h"
#include "pw_kernels.h"

int main(void)
{
    enum { N = 1013 };
    const double lr = 0.01, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
    unsigned long long rng = 11;
    float *p = kref_randn(N, 1.0, &rng), *m = kref_alloc(N * sizeof *m);
    float *v = kref_alloc(N * sizeof *v);
    double *pd = kref_to_double(p, N), *md = kref_alloc(N * sizeof *md);
    double *vd = kref_alloc(N * sizeof *vd);
    for (int t = 1; t <= 3; t++) {
        float *g = kref_randn(N, 1.0, &rng);
        g[t] = 0.0f; /* v may be 0 on the first step: eps alone keeps the division finite */
        pw_adamw_update(p, g, m, v, N, (float)lr, (float)b1, (float)b2, (float)eps, (float)wd, t);
        for (int i = 0; i < N; i++) {
            md[i] = b1 * md[i] + (1 - b1) * g[i];
            vd[i] = b2 * vd[i] + (1 - b2) * (double)g[i] * g[i];
            pd[i] *= 1 - lr * wd;
            pd[i] -= lr * (md[i] / (1 - pow(b1, t))) / (sqrt(vd[i] / (1 - pow(b2, t))) + eps);
        }
        double e_p = pw_max_rel_err(p, pd, N, 1e-6), e_m = pw_max_rel_err(m, md, N, 1e-6);
        double e_v = pw_max_rel_err(v, vd, N, 1e-6);
        CHECK(e_p < KREF_TOL, "step %d: params rel err %.3g", t, e_p);
        CHECK(e_m < KREF_TOL, "step %d: m rel err %.3g", t, e_m);
        CHECK(e_v < KREF_TOL, "step %d: v rel err %.3g", t, e_v);
        printf("step %d: params %.2g m %.2g v %.2g\n", t, e_p, e_m, e_v);
        free(g);
    }
    free(p); free(m); free(v); free(pd); free(md); free(vd);
    return pw_test_done("test_adamw");
}
