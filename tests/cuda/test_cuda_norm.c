/* test_cuda_norm.c: the CUDA sum of squares (returned, and added into a device double) and
 * scale against the CPU twins, for sizes from 1 to past the fixed grid. */
#include "cutest.h"

int main(void)
{
    cu_require_gpu("test_cuda_norm");
    unsigned long long rng = 19;
    size_t sizes[] = {1, 255, 1000003, 12 * 1024 * 1024 + 5};
    for (int k = 0; k < 4; k++) {
        size_t n = sizes[k];
        printf("n=%zu\n", n);
        float *x = cu_randn(n, 1e-3, &rng);
        float *d_x = cu_upload(x, sizeof(float) * n);
        double ref = pw_sumsq(x, n), got = pw_sumsq_cuda(d_x, n, 0);
        double rel = fabs(got - ref) / ref;
        /* both sum in double, in different orders: 1e-10 is far above the rounding of 12M terms */
        CHECK(rel <= 1e-10 && !isnan(got), "sumsq: %.17g vs %.17g (rel %.3g)", got, ref, rel);
        printf("  %-40s rel err %.3g\n", "sumsq", rel);

        /* two buffers into one device total, starting from a non-zero value */
        double *d_sum = cu_dev(sizeof(double)), start = 1.5, total = 0.0;
        PW_CUDA_CHECK(cudaMemcpy(d_sum, &start, sizeof(double), cudaMemcpyHostToDevice));
        pw_sumsq_add_cuda(d_sum, d_x, n, 0);
        pw_sumsq_add_cuda(d_sum, d_x, n, 0);
        cu_download(&total, d_sum, sizeof(double));
        rel = fabs(total - (start + 2 * ref)) / (start + 2 * ref);
        CHECK(rel <= 1e-10, "sumsq_add: %.17g vs %.17g", total, start + 2 * ref);

        pw_scale(x, 0.37f, n);
        pw_scale_cuda(d_x, 0.37f, n, 0);
        cu_compare("scale", d_x, x, n, CU_TOL_F32);
        cu_release();
    }
    return pw_test_done("test_cuda_norm");
}
