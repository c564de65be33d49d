/* test_cuda_adamw.c: the CUDA AdamW against the CPU twin: several steps (t = 1, 2, 3 and a
 * late t) on the same parameters, gradients and moments, with and without weight decay, the
 * last two with the gradients times a clipping's factor and the bfloat16 copy written (bit for
 * bit the device's own float32 weights rounded). */
#include "cutest.h"

int main(void)
{
    cu_require_gpu("test_cuda_adamw");
    unsigned long long rng = 18;
    size_t n = 1000003;
    float *p = cu_randn(n, 1.0, &rng), *m = cu_host(sizeof(float) * n),
          *v = cu_host(sizeof(float) * n);
    float *d_p = cu_upload(p, sizeof(float) * n), *d_m = cu_upload(m, sizeof(float) * n);
    float *d_v = cu_upload(v, sizeof(float) * n), *d_g = cu_dev(sizeof(float) * n);
    pw_bf16 *d_p16 = cu_dev(sizeof(pw_bf16) * n);
    int steps[] = {1, 2, 3, 5000};
    for (int k = 0; k < 4; k++) {
        float *g = cu_randn(n, k == 3 ? 1e-3 : 1.0, &rng); /* small gradients late: eps matters */
        PW_CUDA_CHECK(cudaMemcpy(d_g, g, sizeof(float) * n, cudaMemcpyHostToDevice));
        float wd = k % 2 ? 0.1f : 0.0f;
        float gs = k >= 2 ? 0.37f : 1.0f;
        pw_bf16 *p16 = k >= 2 ? d_p16 : NULL;
        pw_adamw_update(p, NULL, g, gs, m, v, n, 3e-4f, 0.9f, 0.95f, 1e-8f, wd, steps[k]);
        pw_adamw_update_cuda(d_p, p16, d_g, gs, d_m, d_v, n, 3e-4f, 0.9f, 0.95f, 1e-8f, wd,
                             steps[k], 0);
        printf("t=%d weight_decay=%g gscale=%g\n", steps[k], wd, (double)gs);
        cu_compare("params", d_p, p, n, CU_TOL_F32);
        cu_compare("m", d_m, m, n, CU_TOL_F32);
        cu_compare("v", d_v, v, n, CU_TOL_F32);
        if (p16) cu_compare_bf16("params, bfloat16 copy", d_p16, d_p, n);
    }
    cu_release();
    return pw_test_done("test_cuda_adamw");
}
