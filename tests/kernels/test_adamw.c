/* test_adamw.c: three AdamW steps against PyTorch's torch.optim.AdamW update written out in
 * float64 (decoupled decay p *= 1 - lr wd, bias-corrected moments); then a clipped step with the
 * bfloat16 copy, bit for bit the scaling pass, the update and the conversion it replaces. */
#include <string.h>

#include "kref.h"
#include "pw_bf16.h"
#include "pw_kernels.h"

/* A fourth step with the gradients times s and the new weights rounded into a copy, against the
 * three passes it stands for on copies of the same state: pw_scale, the update at gscale 1, the
 * rounding; and the gradients left as they were */
static void fused_step(float *p, float *m, float *v, int n, unsigned long long *rng)
{
    const float s = 0.3712f;
    float *g = kref_randn((size_t)n, 1.0, rng), *g0 = kref_alloc(n * sizeof *g0);
    float *p2 = kref_alloc(n * sizeof *p2), *m2 = kref_alloc(n * sizeof *m2);
    float *v2 = kref_alloc(n * sizeof *v2), *gs = kref_alloc(n * sizeof *gs);
    uint16_t *p16 = kref_alloc(n * sizeof *p16);
    memcpy(g0, g, n * sizeof *g), memcpy(gs, g, n * sizeof *g);
    memcpy(p2, p, n * sizeof *p), memcpy(m2, m, n * sizeof *m), memcpy(v2, v, n * sizeof *v);
    pw_adamw_update(p, p16, g, s, m, v, (size_t)n, 0.01f, 0.9f, 0.95f, 1e-8f, 0.1f, 4);
    pw_scale(gs, s, (size_t)n);
    pw_adamw_update(p2, NULL, gs, 1.0f, m2, v2, (size_t)n, 0.01f, 0.9f, 0.95f, 1e-8f, 0.1f, 4);
    int bf = 0;
    for (int i = 0; i < n; i++) bf += p16[i] != pw_bf16_from_f32(p2[i]);
    CHECK(!memcmp(p, p2, n * sizeof *p), "clipped step: the weights differ from scale + update");
    CHECK(!memcmp(m, m2, n * sizeof *m) && !memcmp(v, v2, n * sizeof *v),
          "clipped step: the moments differ from scale + update");
    CHECK(bf == 0, "clipped step: %d of %d bfloat16 weights differ from the rounded update", bf,
          n);
    CHECK(!memcmp(g, g0, n * sizeof *g), "clipped step: the gradients were written");
    printf("clipped step with the bfloat16 copy: %d of %d rounded weights differ\n", bf, n);
    free(g), free(g0), free(p2), free(m2), free(v2), free(gs), free(p16);
}

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
        pw_adamw_update(p, NULL, g, 1.0f, m, v, N, (float)lr, (float)b1, (float)b2, (float)eps,
                        (float)wd, t);
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
    fused_step(p, m, v, N, &rng);
    free(p); free(m); free(v); free(pd); free(md); free(vd);
    return pw_test_done("test_adamw");
}
